// CIFAR binary reading: each file is checked for size (non-empty, a whole number of records) and
// each record's label range; pixels are copied record by record into one u8 tensor.
#include "data/cifar.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include "framework/error.h"

namespace minidl::data {

namespace {
constexpr int64_t kPixels = 3 * 32 * 32;

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

uintmax_t checked_file_size(const std::string& path, const char* who) {
  namespace fs = std::filesystem;
  std::error_code ec;
  MINIDL_CHECK(fs::exists(path, ec), who, path, ": file not found");
  MINIDL_CHECK(fs::is_regular_file(path, ec), who, path, ": not a regular file");
  const uintmax_t size = fs::file_size(path, ec);
  MINIDL_CHECK(!ec, who, path, ": cannot get the file size (", ec.message(), ")");
  return size;
}

std::vector<uint8_t> read_whole_file(const std::string& path, const char* who) {
  const uintmax_t size = checked_file_size(path, who);
  std::unique_ptr<std::FILE, FileCloser> f(std::fopen(path.c_str(), "rb"));
  MINIDL_CHECK(f != nullptr, who, path, ": cannot open (", std::strerror(errno), ")");
  std::vector<uint8_t> bytes(size);
  const size_t got = size ? std::fread(bytes.data(), 1, size, f.get()) : 0;
  MINIDL_CHECK(got == size, who, path, ": read ", got, " of ", size, " bytes");
  return bytes;
}
}  // namespace

CIFAROptions& CIFAROptions::normalize(std::array<float, 3> mean, std::array<float, 3> std) {
  for (float s : std) MINIDL_CHECK(s > 0.0f, "CIFAROptions::normalize", "std must be > 0, got ", s);
  normalize_ = true;
  mean_ = mean;
  std_ = std;
  return *this;
}

int64_t CIFAR::num_classes() const { return options_.cifar100_ ? (options_.fine_labels_ ? 100 : 20) : 10; }

CIFAR::CIFAR(const std::string& root, Split split, CIFAROptions options) : options_(options) {
  namespace fs = std::filesystem;
  const char* name = options_.cifar100_ ? "CIFAR-100" : "CIFAR-10";
  std::error_code ec;
  MINIDL_CHECK(fs::is_directory(root, ec), name, "directory '", root, "' does not exist");
  if (options_.cifar100_) {
    files_.push_back((fs::path(root) / (split == Split::Train ? "train.bin" : "test.bin")).string());
  } else if (split == Split::Train) {
    for (int i = 1; i <= 5; ++i)
      files_.push_back((fs::path(root) / ("data_batch_" + std::to_string(i) + ".bin")).string());
  } else {
    files_.push_back((fs::path(root) / "test_batch.bin").string());
  }

  // Check every file's size first, then read them one at a time into the final tensor.
  const int64_t label_bytes = options_.cifar100_ ? 2 : 1;
  const int64_t record = label_bytes + kPixels;
  int64_t n = 0;
  for (const std::string& path : files_) {
    const int64_t size = static_cast<int64_t>(checked_file_size(path, name));
    MINIDL_CHECK(size > 0, name, path, ": file is empty");
    MINIDL_CHECK(size % record == 0, name, path, ": file size ", size, " is not a multiple of the ",
                 record, "-byte record (", label_bytes, " label byte", label_bytes > 1 ? "s" : "",
                 " + 3072 pixels): truncated or not a ", name, " binary file");
    n += size / record;
  }

  images_ = empty({n, 3, 32, 32}, DType::U8);
  targets_ = empty({n}, DType::I64);
  if (options_.cifar100_) coarse_ = empty({n}, DType::I64);
  uint8_t* img = images_.data_ptr<uint8_t>();
  int64_t* tgt = targets_.data_ptr<int64_t>();
  int64_t* crs = options_.cifar100_ ? coarse_.data_ptr<int64_t>() : nullptr;
  int64_t k = 0;
  for (const std::string& path : files_) {
    const std::vector<uint8_t> bytes = read_whole_file(path, name);
    MINIDL_CHECK(bytes.size() % record == 0 && k + int64_t(bytes.size()) / record <= n, name, path,
                 ": file changed while being read");
    const uint8_t* p = bytes.data();
    const int64_t records = static_cast<int64_t>(bytes.size()) / record;
    for (int64_t r = 0; r < records; ++r, ++k, p += record) {
      if (options_.cifar100_) {
        MINIDL_CHECK(p[0] < 20, name, path, ": record ", r, " has coarse label ", int(p[0]),
                     " (expected 0..19)");
        MINIDL_CHECK(p[1] < 100, name, path, ": record ", r, " has fine label ", int(p[1]),
                     " (expected 0..99)");
        crs[k] = p[0];
        tgt[k] = options_.fine_labels_ ? p[1] : p[0];
      } else {
        MINIDL_CHECK(p[0] < 10, name, path, ": record ", r, " has label ", int(p[0]), " (expected 0..9)");
        tgt[k] = p[0];
      }
      std::memcpy(img + k * kPixels, p + label_bytes, kPixels);
    }
  }
  MINIDL_CHECK(k == n, name, "files changed while being read");
  for (int c = 0; c < 3; ++c)
    fill_byte_lut(luts_ + c * 256, options_.normalize_ ? options_.mean_[c] : 0.0f,
                  options_.normalize_ ? options_.std_[c] : 1.0f);
}

Example CIFAR::get(int64_t index) const {
  check_index(index, size(), "CIFAR::get");
  Tensor row = gather_rows_u8_to_f32(images_, 3, luts_, {index}, "CIFAR::get");
  return Example{row.view({3, 32, 32}),
                 scalar_tensor(static_cast<double>(targets_.data_ptr<int64_t>()[index]), DType::I64)};
}

Batch CIFAR::get_batch(const std::vector<int64_t>& indices) const {
  const int64_t b = static_cast<int64_t>(indices.size());
  Tensor data = gather_rows_u8_to_f32(images_, 3, luts_, indices, "CIFAR::get_batch");
  Tensor target = empty({b}, DType::I64);
  const int64_t* src = targets_.data_ptr<int64_t>();
  int64_t* dst = target.data_ptr<int64_t>();
  for (int64_t i = 0; i < b; ++i) dst[i] = src[indices[i]];  // indices checked by the gather above
  return Batch{data, target, indices};
}

}  // namespace minidl::data
