// A minimal PNG reader for tests: 8-bit RGB or RGBA, not interlaced (what rsvg-convert writes),
// inflated by zlib and unfiltered (None, Sub, Up, Average, Paeth). Enough to look at rendered pixels.
#pragma once
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

namespace minidl::testing {

struct Image {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;  // height * width * 3, alpha composited over white
  const uint8_t* at(int x, int y) const { return &rgb[(static_cast<size_t>(y) * width + x) * 3]; }
};

inline Image read_png(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  static const uint8_t kSignature[8] = {137, 80, 78, 71, 13, 10, 26, 10};
  if (bytes.size() < 8 || !std::equal(kSignature, kSignature + 8, bytes.begin())) throw std::runtime_error(path + ": not a PNG");
  auto be32 = [&](size_t p) { return uint32_t(bytes[p]) << 24 | uint32_t(bytes[p + 1]) << 16 | uint32_t(bytes[p + 2]) << 8 | bytes[p + 3]; };
  Image img;
  int channels = 0;
  std::vector<uint8_t> idat;
  for (size_t p = 8; p + 8 <= bytes.size();) {
    const uint32_t len = be32(p);
    const std::string type(bytes.begin() + static_cast<long>(p) + 4, bytes.begin() + static_cast<long>(p) + 8);
    if (p + 12 + len > bytes.size()) throw std::runtime_error(path + ": truncated chunk " + type);
    const uint8_t* data = &bytes[p + 8];
    if (type == "IHDR") {
      img.width = static_cast<int>(be32(p + 8));
      img.height = static_cast<int>(be32(p + 12));
      const int depth = data[8], color = data[9], interlace = data[12];
      if (depth != 8 || (color != 2 && color != 6) || interlace != 0) throw std::runtime_error(path + ": unsupported PNG format");
      channels = color == 6 ? 4 : 3;
    } else if (type == "IDAT") {
      idat.insert(idat.end(), data, data + len);
    } else if (type == "IEND") {
      break;
    }
    p += 12 + len;
  }
  if (channels == 0) throw std::runtime_error(path + ": no IHDR");
  const size_t stride = static_cast<size_t>(img.width) * channels;
  std::vector<uint8_t> raw((stride + 1) * img.height);
  uLongf raw_len = static_cast<uLongf>(raw.size());
  if (uncompress(raw.data(), &raw_len, idat.data(), static_cast<uLong>(idat.size())) != Z_OK || raw_len != raw.size())
    throw std::runtime_error(path + ": bad image data");
  std::vector<uint8_t> px(stride * img.height);
  for (int y = 0; y < img.height; ++y) {
    const uint8_t filter = raw[y * (stride + 1)];
    const uint8_t* in = &raw[y * (stride + 1) + 1];
    uint8_t* out = &px[y * stride];
    const uint8_t* up = y > 0 ? &px[(y - 1) * stride] : nullptr;
    for (size_t i = 0; i < stride; ++i) {
      const int a = i >= static_cast<size_t>(channels) ? out[i - channels] : 0, b = up ? up[i] : 0,
                c = up && i >= static_cast<size_t>(channels) ? up[i - channels] : 0;
      int pred = 0;
      switch (filter) {
        case 0: pred = 0; break;
        case 1: pred = a; break;
        case 2: pred = b; break;
        case 3: pred = (a + b) / 2; break;
        case 4: {
          const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
          pred = pa <= pb && pa <= pc ? a : (pb <= pc ? b : c);
          break;
        }
        default: throw std::runtime_error(path + ": bad filter");
      }
      out[i] = static_cast<uint8_t>(in[i] + pred);
    }
  }
  img.rgb.resize(static_cast<size_t>(img.width) * img.height * 3);
  for (size_t i = 0; i < static_cast<size_t>(img.width) * img.height; ++i) {
    const uint8_t* s = &px[i * channels];
    const int alpha = channels == 4 ? s[3] : 255;
    for (int k = 0; k < 3; ++k) img.rgb[i * 3 + k] = static_cast<uint8_t>((s[k] * alpha + 255 * (255 - alpha)) / 255);
  }
  return img;
}

}  // namespace minidl::testing
