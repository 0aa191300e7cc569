// safetensors against the reference implementation (huggingface/safetensors): dtype strings, the
// header padded with spaces to 8 bytes for any name length, a null "__metadata__" (the reference
// reads it as no metadata), tensors at unaligned offsets, views written as contiguous data.
#include <catch2/catch.hpp>
#include <cstring>
#include <string>

#include "serialize/serialize.h"

using namespace minidl;
using Catch::Contains;

namespace {
std::string le64(uint64_t n) {
  std::string s(8, '\0');
  for (int k = 0; k < 8; ++k) s[k] = static_cast<char>((n >> (8 * k)) & 0xFF);
  return s;
}
uint64_t header_len(const std::string& bytes) {
  uint64_t n = 0;
  for (int k = 7; k >= 0; --k) n = (n << 8) | static_cast<unsigned char>(bytes[k]);
  return n;
}
}  // namespace

TEST_CASE("safetensors dtype strings are the reference's", "[serialize][safetensors][parity]") {
  const std::pair<DType, const char*> names[] = {{DType::F64, "F64"}, {DType::F32, "F32"}, {DType::F16, "F16"},
                                                 {DType::BF16, "BF16"}, {DType::I64, "I64"}, {DType::I32, "I32"},
                                                 {DType::U8, "U8"},   {DType::Bool, "BOOL"}};
  for (const auto& [dt, name] : names) {
    INFO(name);
    CHECK(std::string(safetensors_dtype_name(dt)) == name);
    CHECK(dtype_from_safetensors_name(name) == dt);
    const std::string bytes = safetensors::serialize({{"t", zeros({1}).to(dt)}});
    CHECK(bytes.find(std::string("\"dtype\":\"") + name + "\"") != std::string::npos);
  }
  CHECK_THROWS_WITH(dtype_from_safetensors_name("f32"), Contains("unsupported dtype 'f32'"));
}

TEST_CASE("the header is padded with spaces to a multiple of 8 for every name length", "[serialize][safetensors][parity]") {
  for (size_t len = 1; len <= 9; ++len) {
    const std::string name(len, 'w');
    const std::string bytes = safetensors::serialize({{name, from_vector<double>({1.5})}});
    const uint64_t n = header_len(bytes);
    INFO(len);
    CHECK(n % 8 == 0);
    const std::string json = R"({")" + name + R"(":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})";
    CHECK(bytes.substr(8, n) == json + std::string((8 - json.size() % 8) % 8, ' '));
    CHECK(bytes.size() == 8 + n + 8);
    double v = 0;
    std::memcpy(&v, bytes.data() + 8 + n, 8);
    CHECK(v == 1.5);  // the f64 data starts 8-byte aligned in the file
  }
}

TEST_CASE("a null __metadata__ reads as no metadata, as the reference's Option", "[serialize][safetensors][parity]") {
  const std::string header = R"({"__metadata__":null,"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})";
  auto f = safetensors::deserialize(le64(header.size()) + header + std::string("\x07\x09", 2));
  CHECK(f.metadata.empty());
  CHECK(f.tensors["a"].to_vector<uint8_t>() == std::vector<uint8_t>{7, 9});
  const std::string bad = R"({"__metadata__":[1]})";
  CHECK_THROWS_WITH(safetensors::deserialize(le64(bad.size()) + bad), Contains("'__metadata__' must be an object"));
}

TEST_CASE("tensors at unaligned offsets and in any key order are read", "[serialize][safetensors][parity]") {
  // A U8 first puts the F64 at byte 3 of the data: valid, the reader must not assume alignment.
  const std::string header = R"({"d":{"dtype":"F64","shape":[],"data_offsets":[3,11]},"u":{"dtype":"U8","shape":[3],"data_offsets":[0,3]}})";
  const double value = -0.125;
  std::string data("\x01\x02\x03", 3);
  data.append(reinterpret_cast<const char*>(&value), 8);
  auto f = safetensors::deserialize(le64(header.size()) + header + data);
  CHECK(f.tensors.keys() == std::vector<std::string>{"u", "d"});
  CHECK(f.tensors["d"].dim() == 0);
  CHECK(f.tensors["d"].item() == -0.125);
  CHECK(f.tensors["u"].to_vector<uint8_t>() == std::vector<uint8_t>{1, 2, 3});
}

TEST_CASE("views are written as their contiguous row-major elements", "[serialize][safetensors][parity]") {
  Tensor base = from_vector<int32_t>({0, 1, 2, 3, 4, 5}, {2, 3});
  Tensor view = base.t().slice(0, 1, 3);  // [[1, 4], [2, 5]]
  const std::string bytes = safetensors::serialize({{"v", view}});
  const uint64_t n = header_len(bytes);
  CHECK(bytes.substr(8, n).find(R"("shape":[2,2],"data_offsets":[0,16])") != std::string::npos);
  std::vector<int32_t> data(4);
  REQUIRE(bytes.size() == 8 + n + 16);
  std::memcpy(data.data(), bytes.data() + 8 + n, 16);
  CHECK(data == std::vector<int32_t>{1, 4, 2, 5});
}
