// Serialization: the JSON reader/writer, safetensors files (byte-identical to the reference
// implementation's own test vectors, a byte-level header check, round trips of every dtype,
// every corruption the reader must reject with an error naming the file), atomic writes (no
// partial or temporary file after a failure) and the Checkpoint container.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "serialize/serialize.h"
#include "gradcheck.h"
#include "minidl.h"
#include "temp_dir.h"

using namespace minidl;
namespace fs = std::filesystem;

namespace {


std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}
void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string le64(uint64_t n) {
  std::string s(8, '\0');
  for (int k = 0; k < 8; ++k) s[k] = static_cast<char>((n >> (8 * k)) & 0xFF);
  return s;
}
// A file from a header text and raw data (no padding added).
std::string file_of(const std::string& header, const std::string& data = "") { return le64(header.size()) + header + data; }
std::string f32_bytes(std::vector<float> v) { return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4); }

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  Tensor ca = a.contiguous(), cb = b.contiguous();
  return ca.nbytes() == 0 || std::memcmp(ca.raw_data(), cb.raw_data(), ca.nbytes()) == 0;
}

}  // namespace

// ---------------------------------------------------------------- JSON

TEST_CASE("Json parses and writes values, keeping integer/double types and key order", "[serialize][json]") {
  Json j = Json::parse(R"( {"b": 1, "a": [true, false, null, -2.5e3, 0.1, "x\"y\\z\n\u00e9\ud83d\ude00"], "c": {}} )");
  CHECK(j.members()[0].first == "b");
  CHECK(j.at("b").is_int());
  CHECK(j.at("b").as_int() == 1);
  const Json& a = j.at("a");
  CHECK(a[0].as_bool());
  CHECK(a[2].is_null());
  CHECK(a[3].as_double() == -2500.0);
  CHECK_FALSE(a[3].is_int());
  CHECK(a[4].as_double() == 0.1);
  CHECK(a[5].as_string() == "x\"y\\z\n\xc3\xa9\xf0\x9f\x98\x80");
  CHECK(j.at("c").is_object());
  CHECK(j.dump() == R"({"b":1,"a":[true,false,null,-2500.0,0.1,"x\"y\\z\n)"
                    "\xc3\xa9\xf0\x9f\x98\x80"
                    R"("],"c":{}})");
  CHECK(Json::parse(j.dump()) == j);
  CHECK(Json::parse(j.dump(2)) == j);
  // Doubles round-trip exactly and stay doubles; big integers stay exact.
  for (double d : {0.1, 1.0 / 3.0, 1e-300, 123456789.125, 3.0, -0.0})
    CHECK(Json::parse(Json(d).dump()).as_double() == d);
  CHECK_FALSE(Json::parse(Json(3.0).dump()).is_int());
  // The shortest form that round-trips, as Python's repr (std::to_chars).
  CHECK(Json(0.8545).dump() == "0.8545");
  CHECK(Json(1.0 / 3.0).dump() == "0.3333333333333333");
  CHECK(Json(65536.0).dump() == "65536.0");
  CHECK(Json(1e-300).dump() == "1e-300");
  CHECK(Json::parse("9007199254740993").as_int() == 9007199254740993LL);
  CHECK(std::isnan(Json::parse(Json(std::nan("")).dump()).as_double()));
  CHECK(Json::parse(Json(-INFINITY).dump()).as_double() == -INFINITY);
  CHECK(Json::parse("\"\\u0001\"").dump() == "\"\\u0001\"");
  // Building.
  Json o;
  o["x"]["y"] = 2;
  o["list"].push_back("a");
  CHECK(o.dump() == R"({"x":{"y":2},"list":["a"]})");
  CHECK(o.get("missing", 5.0) == 5.0);
  CHECK_THROWS_WITH(o.at("x").as_string(), Catch::Contains("expected string, got object"));
}

TEST_CASE("Json rejects malformed text, naming the byte", "[serialize][json]") {
  CHECK_THROWS_WITH(Json::parse("{\"a\": 1,}", "cfg"), Catch::Contains("cfg: invalid JSON at byte 8"));
  CHECK_THROWS_WITH(Json::parse("[1 2]"), Catch::Contains("expected ',' or ']'"));
  CHECK_THROWS_WITH(Json::parse("{\"a\":1,\"a\":2}"), Catch::Contains("duplicate key 'a'"));
  CHECK_THROWS_WITH(Json::parse("\"abc"), Catch::Contains("unterminated string"));
  CHECK_THROWS_WITH(Json::parse("01"), Catch::Contains("trailing"));
  CHECK_THROWS_WITH(Json::parse("1."), Catch::Contains("digits expected"));
  CHECK_THROWS_WITH(Json::parse("\"\\ud800\""), Catch::Contains("surrogate"));
  CHECK_THROWS_WITH(Json::parse("\"a\tb\""), Catch::Contains("control character"));
  CHECK_THROWS_WITH(Json::parse(std::string(300, '[') + std::string(300, ']')), Catch::Contains("nesting"));
  CHECK_THROWS_WITH(Json::parse(""), Catch::Contains("unexpected end"));
  CHECK_THROWS_WITH(Json::parse("tru"), Catch::Contains("unexpected character"));
}

TEST_CASE("Json parses an object of 200k keys (key lookup is not linear) and refuses deep nesting", "[serialize][json]") {
  // A safetensors header with many entries: each key is looked up once per insertion, so a
  // linear lookup makes this quadratic (minutes instead of milliseconds; the ctest timeout catches it).
  constexpr int kKeys = 200000;
  std::string text = "{";
  for (int i = 0; i < kKeys; ++i) text += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":" + std::to_string(i);
  text += "}";
  Json j = Json::parse(text);
  REQUIRE(j.size() == static_cast<size_t>(kKeys));
  CHECK(j.members().front().first == "k0");
  CHECK(j.members().back().first == "k199999");
  CHECK(j.at("k123456").as_int() == 123456);
  CHECK(j.find("k200000") == nullptr);
  // Lookups stay right after erasing and inserting.
  CHECK(j.erase("k5"));
  CHECK(!j.contains("k5"));
  CHECK(j.at("k6").as_int() == 6);
  CHECK(j.at("k199999").as_int() == 199999);
  j["k5"] = "back";
  CHECK(j.members().back().first == "k5");
  CHECK(j.at("k5").as_string() == "back");
  CHECK(j.size() == static_cast<size_t>(kKeys));
  Json copy = j;
  copy["k7"] = 70;
  CHECK(copy.at("k7").as_int() == 70);
  CHECK(j.at("k7").as_int() == 7);
  CHECK(Json::parse(copy.dump()) == copy);
  // Deep nesting is an error, never a stack overflow, however deep the input goes.
  for (const char* open : {"[", "{\"a\":"}) {
    std::string deep;
    for (int i = 0; i < 1000000; ++i) deep += open;
    CHECK_THROWS_WITH(Json::parse(deep), Catch::Contains("nesting deeper than 256 levels"));
  }
}

// ---------------------------------------------------------------- safetensors: exact bytes

TEST_CASE("our bytes equal the reference implementation's test vectors", "[serialize][safetensors]") {
  // safetensors' own unit tests (tensor.rs test_serialization, test_empty,
  // test_serialization_forced_alignement): header text, then padding to 8, then the data.
  const std::string data = f32_bytes({0, 1, 2, 3, 4, 5});
  {
    TensorDict d{{"attn.0", from_vector<float>({0, 1, 2, 3, 4, 5}, {1, 2, 3})}};
    const std::string header = R"({"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}})";
    REQUIRE(header.size() == 64);  // no padding needed
    CHECK(safetensors::serialize(d) == le64(64) + header + data);
  }
  {
    TensorDict d{{"attn0", from_vector<float>({0, 1, 2, 3, 4, 5}, {1, 1, 2, 3})}};
    const std::string header = R"({"attn0":{"dtype":"F32","shape":[1,1,2,3],"data_offsets":[0,24]}})";
    REQUIRE(header.size() == 65);
    CHECK(safetensors::serialize(d) == le64(72) + header + std::string(7, ' ') + data);
  }
  CHECK(safetensors::serialize({}) == le64(8) + "{}" + std::string(6, ' '));
  CHECK(safetensors::serialize({}, {{"framework", "pt"}}) ==
        le64(40) + R"({"__metadata__":{"framework":"pt"}})" + std::string(5, ' '));
}

TEST_CASE("byte-level layout: length prefix, header JSON, sorted aligned offsets, raw data", "[serialize][safetensors]") {
  TempDir dir;
  const std::string path = dir.file("layout.safetensors");
  TensorDict d;
  d.insert("z.bias", from_vector<float>({1.5f, -2.0f}));
  d.insert("mask", from_vector<bool>({true, false, true}));
  d.insert("count", from_vector<int64_t>({7}, Shape{}));  // 0-dim
  d.insert("a.weight", from_vector<float>({1, 2, 3, 4}, {2, 2}).to(DType::BF16));
  d.insert("empty", zeros({0, 3}));
  safetensors::save_file(d, path, {{"epoch", "3"}});
  const std::string bytes = read_bytes(path);

  uint64_t n = 0;
  for (int k = 7; k >= 0; --k) n = (n << 8) | static_cast<unsigned char>(bytes[k]);
  CHECK((8 + n) % 8 == 0);
  const std::string header = bytes.substr(8, n);
  CHECK(header.find_last_not_of(' ') == header.find_last_of('}'));  // padded with spaces only
  // Order: I64, F32 (by name: empty, z.bias), BF16, BOOL; __metadata__ first.
  const std::string expected_json =
      R"({"__metadata__":{"epoch":"3"},)"
      R"("count":{"dtype":"I64","shape":[],"data_offsets":[0,8]},)"
      R"("empty":{"dtype":"F32","shape":[0,3],"data_offsets":[8,8]},)"
      R"("z.bias":{"dtype":"F32","shape":[2],"data_offsets":[8,16]},)"
      R"("a.weight":{"dtype":"BF16","shape":[2,2],"data_offsets":[16,24]},)"
      R"("mask":{"dtype":"BOOL","shape":[3],"data_offsets":[24,27]}})";
  CHECK(header.substr(0, header.find_last_of('}') + 1) == expected_json);
  const std::string data = bytes.substr(8 + n);
  REQUIRE(data.size() == 27);
  int64_t count = 0;
  std::memcpy(&count, data.data(), 8);
  CHECK(count == 7);
  CHECK(data.substr(8, 8) == f32_bytes({1.5f, -2.0f}));
  // bf16 of 1, 2, 3, 4: the upper halves of the f32 bit patterns, little-endian.
  CHECK(data.substr(16, 8) == std::string("\x80\x3f\x00\x40\x40\x40\x80\x40", 8));
  CHECK(data.substr(24, 3) == std::string("\x01\x00\x01", 3));

  auto f = safetensors::load_file(path);
  CHECK(f.metadata.at("epoch") == "3");
  CHECK(f.tensors.keys() == std::vector<std::string>{"count", "empty", "z.bias", "a.weight", "mask"});
  for (const auto& [name, t] : d) CHECK(bitwise_equal(f.tensors[name], t));
  CHECK(f.tensors["count"].dim() == 0);
}

TEST_CASE("every dtype round-trips bit for bit, from any layout", "[serialize][safetensors]") {
  TempDir dir;
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  Tensor base = from_vector<float>({0.f, -0.f, 1.5f, -3.25f, 1e-20f, 65504.f, inf, nan, 1e30f, -7.f, 0.1f, 2.f}, {3, 4});
  TensorDict d;
  for (DType dt : {DType::F32, DType::F64, DType::F16, DType::BF16}) d.insert(dtype_name(dt), base.to(dt));
  d.insert("i64", from_vector<int64_t>({std::numeric_limits<int64_t>::min(), -1, 0, std::numeric_limits<int64_t>::max()}));
  d.insert("i32", from_vector<int32_t>({-2147483647 - 1, -5, 6, 2147483647}, {2, 2}));
  d.insert("u8", from_vector<uint8_t>({0, 1, 128, 255}));
  d.insert("bool", from_vector<bool>({true, false, false, true}, {2, 1, 2}));
  d.insert("transposed", base.t());  // non-contiguous input is written in logical (row-major) order
  Tensor p = ones({2}).requires_grad_();
  d.insert("param", p);  // a parameter that requires grad is written as data
  const std::string path = dir.file("all.safetensors");
  safetensors::save_file(d, path);
  auto f = safetensors::load_file(path);
  REQUIRE(f.tensors.size() == d.size());
  for (const auto& [name, t] : d) {
    INFO(name);
    CHECK(bitwise_equal(f.tensors[name], t));
    CHECK_FALSE(f.tensors[name].requires_grad());
  }
  CHECK(f.tensors["transposed"].shape() == Shape{4, 3});
  CHECK(f.tensors["transposed"].to_vector<float>()[1] == 1e-20f);  // row-major order of base.t(): base[1][0]
  // In memory too.
  auto m = safetensors::deserialize(safetensors::serialize(d));
  for (const auto& [name, t] : d) CHECK(bitwise_equal(m.tensors[name], t));
  CHECK_THROWS_WITH(safetensors::save_file({{"x", Tensor()}}, path), Catch::Contains("tensor 'x' is undefined"));
}

TEST_CASE("the reader accepts any valid layout the format allows", "[serialize][safetensors]") {
  // Unsorted keys, metadata last, whitespace, no padding: all valid.
  const std::string header =
      R"( { "b" : {"data_offsets": [8, 12], "shape": [1], "dtype": "F32"},)"
      R"( "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, "__metadata__": {"k": "v"} } )";
  auto f = safetensors::deserialize(file_of(header, f32_bytes({1, 2, 3})));
  CHECK(f.tensors.keys() == std::vector<std::string>{"a", "b"});  // in data order
  CHECK(f.tensors["a"].to_vector<float>() == std::vector<float>{1, 2});
  CHECK(f.tensors["b"].to_vector<float>() == std::vector<float>{3});
  CHECK(f.metadata.at("k") == "v");
}

TEST_CASE("BOOL data bytes other than 0 and 1 read as true; UTF-8 names are kept", "[serialize][safetensors]") {
  // PyTorch reads a bool buffer of bytes 00 02 01 as [False, True, True] (.long() is [0, 1, 1]).
  auto f = safetensors::deserialize(file_of(R"({"a":{"dtype":"BOOL","shape":[3],"data_offsets":[0,3]}})", std::string("\x00\x02\x01", 3)));
  Tensor a = f.tensors["a"];
  CHECK(a.dtype() == DType::Bool);
  CHECK(a.to(DType::I64).to_vector<int64_t>() == std::vector<int64_t>{0, 1, 1});
  CHECK(sum(a).item_int() == 2);
  // Well-formed multi-byte names (2, 3 and 4 bytes) pass the UTF-8 check.
  const std::string name = "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80";
  auto g = safetensors::deserialize(file_of("{\"" + name + R"(":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", f32_bytes({5})));
  CHECK(g.tensors[name].to_vector<float>() == std::vector<float>{5});
}

TEST_CASE("corrupted and truncated files are rejected with the file and the problem named", "[serialize][safetensors]") {
  TempDir dir;
  const std::string path = dir.file("bad.safetensors");
  auto expect_error = [&](const std::string& bytes, const std::string& problem) {
    write_bytes(path, bytes);
    INFO(problem);
    CHECK_THROWS_WITH(safetensors::load_file(path), Catch::Contains(path) && Catch::Contains(problem));
    CHECK_THROWS_WITH(safetensors::deserialize(bytes, "mem"), Catch::Contains("mem") && Catch::Contains(problem));
  };
  const std::string ok_header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  const std::string ok = file_of(ok_header, f32_bytes({1, 2}));
  REQUIRE_NOTHROW(safetensors::deserialize(ok));

  expect_error("", "file too small (0 bytes)");
  expect_error(ok.substr(0, 5), "file too small (5 bytes)");
  expect_error(le64(1000) + "{}", "header length 1000 exceeds the file size");
  expect_error(le64(uint64_t{1} << 40) + "{}", "exceeds the 100 MB limit");
  expect_error(ok.substr(0, 30), "exceeds the file size");                  // cut inside the header
  expect_error(ok.substr(0, ok.size() - 3), "truncated file");              // cut inside the data
  expect_error(ok + "xyz", "trailing bytes");
  expect_error(file_of("{\"a\": [}"), "the header is not valid JSON");
  expect_error(file_of("[1, 2]"), "the header must be a JSON object");
  expect_error(file_of(R"({"a":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}})", "xx"),
               "unsupported dtype 'F8_E4M3'");
  expect_error(file_of(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", f32_bytes({1, 2})),
               "tensor 'a': data_offsets [0, 8] hold 8 bytes but F32[3] needs 12");
  expect_error(file_of(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                       R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                       f32_bytes({1, 2})),
               "offsets overlap or leave a hole");
  expect_error(file_of(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", f32_bytes({1, 2})),
               "tensor 'a' starts at byte 4");
  expect_error(file_of(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", f32_bytes({1})),
               "'shape' must be an array of non-negative integers");
  expect_error(file_of(R"({"a":{"dtype":"F32","shape":[1]}})", f32_bytes({1})), "missing 'dtype', 'shape' or 'data_offsets'");
  expect_error(file_of(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}})", f32_bytes({1})),
               "'data_offsets' must be [begin, end]");
  expect_error(file_of(R"({"a":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,4]}})", f32_bytes({1})),
               "overflows");
  expect_error(file_of(R"({"a":{"dtype":"F32","shape":[0,4611686018427387904,4611686018427387904],"data_offsets":[0,0]}})"),
               "tensor 'a': shape [0, 4611686018427387904, 4611686018427387904] overflows int64");
  expect_error(file_of(R"({"a":{"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,0]}})"), "size overflows");
  expect_error(file_of(R"({"__metadata__":{"k":1}})"), "'__metadata__' entry 'k' must be a string, got integer");
  expect_error(file_of(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"extra":1}})", f32_bytes({1})),
               "unknown field 'extra'");
  // The reference reader refuses a header that is not UTF-8 (InvalidHeader): a lone 0xFF, an
  // overlong '/', a surrogate, a sequence cut short.
  for (const std::string& bad : {std::string("a\xff"), std::string("a\xc0\xaf"), std::string("a\xed\xa0\x80"), std::string("a\xe2\x82")})
    expect_error(file_of("{\"" + bad + R"(":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", f32_bytes({1})),
                 "the header is not valid UTF-8");
  CHECK_THROWS_WITH(safetensors::load_file(dir.file("missing.safetensors")),
                    Catch::Contains("cannot open") && Catch::Contains("missing.safetensors"));
}

// ---------------------------------------------------------------- atomic writes

TEST_CASE("a failed save leaves the previous file intact and no temporary file behind", "[serialize][atomic]") {
  TempDir dir;
  const std::string path = dir.file("model.safetensors");
  TensorDict good{{"w", from_vector<float>({1, 2, 3})}};
  safetensors::save_file(good, path);
  const std::string before = read_bytes(path);

  // Failure before any byte is written (an undefined tensor).
  TensorDict bad{{"w", from_vector<float>({4, 5, 6})}, {"u", Tensor()}};
  CHECK_THROWS(safetensors::save_file(bad, path));
  CHECK(read_bytes(path) == before);
  CHECK(dir.entries() == std::vector<std::string>{"model.safetensors"});

  // Failure in the middle of writing: half the bytes went to the temporary file.
  CHECK_THROWS_WITH(write_file_atomically(path,
                                          [](const ByteSink& sink) {
                                            sink("partial", 7);
                                            throw Error("disk full (simulated)");
                                          }),
                    Catch::Contains("disk full"));
  CHECK(read_bytes(path) == before);
  CHECK(dir.entries() == std::vector<std::string>{"model.safetensors"});

  // Failure at the rename (the target is a directory).
  fs::create_directory(dir.file("adir"));
  CHECK_THROWS_WITH(safetensors::save_file(good, dir.file("adir")), Catch::Contains("cannot rename"));
  CHECK(dir.entries() == std::vector<std::string>{"adir", "model.safetensors"});

  // A missing directory fails up front.
  CHECK_THROWS_WITH(safetensors::save_file(good, dir.file("no/such/dir/x.safetensors")),
                    Catch::Contains("cannot create a temporary file"));

  // Success replaces the file whole.
  safetensors::save_file({{"w", from_vector<float>({9})}}, path);
  CHECK(safetensors::load_file(path).tensors["w"].to_vector<float>() == std::vector<float>{9});
  CHECK(dir.entries() == std::vector<std::string>{"adir", "model.safetensors"});
}

TEST_CASE("a save removes the temporary files that killed saves of the same target left, and only those", "[serialize][atomic]") {
  TempDir dir;
  const std::string path = dir.file("model.safetensors");
  const std::vector<std::string> kept{".model.safetensors.tmp-abc12",     // not mkstemp's 6 characters
                                      ".model.safetensors.tmp-abc1234",   // nor 7
                                      ".other.safetensors.tmp-abc123",    // another target
                                      ".model.safetensors.tmp-ab.123",    // not mkstemp's alphabet
                                      "model.safetensors.tmp-abc123",     // not hidden
                                      ".model.safetensors.tmp-Live01"};   // a save in progress (locked)
  for (const std::string& name : kept) write_bytes(dir.file(name), "x");
  write_bytes(dir.file(".model.safetensors.tmp-Stale1"), "partial");
  write_bytes(dir.file(".model.safetensors.tmp-z9Y8x7"), "partial");
  // A writer that is still alive holds an exclusive lock on its temporary file.
  const int live = ::open(dir.file(".model.safetensors.tmp-Live01").c_str(), O_RDWR);
  REQUIRE(live >= 0);
  REQUIRE(::flock(live, LOCK_EX) == 0);
  safetensors::save_file({{"w", from_vector<float>({1})}}, path);
  ::close(live);
  std::vector<std::string> want = kept;
  want.push_back("model.safetensors");
  std::sort(want.begin(), want.end());
  CHECK(dir.entries() == want);
  CHECK(safetensors::load_file(path).tensors["w"].to_vector<float>() == std::vector<float>{1});
}

// ---------------------------------------------------------------- Checkpoint

TEST_CASE("Checkpoint stores namespaced tensors and JSON metadata in one safetensors file", "[serialize][checkpoint]") {
  TempDir dir;
  const std::string path = dir.file("ck.safetensors");
  Checkpoint ck;
  ck.put("model", TensorDict{{"fc.weight", from_vector<float>({1, 2, 3, 4}, {2, 2})}, {"fc.bias", from_vector<float>({5, 6})}});
  StateDict opt;
  opt.tensors.insert("state.0.exp_avg", from_vector<float>({0.5f, 0.25f}));
  opt.meta["param_groups"] = Json::array({Json::object()});
  opt.meta["param_groups"][0]["lr"] = 0.001;
  ck.put("optim", opt);
  ck.put_u64("rng.state", {0xFFFFFFFFFFFFFFFFull, 67280421310721ull, 0x8000000000000000ull});
  ck.meta["epoch"] = 3;
  ck.meta["step"] = int64_t{123456789012};
  ck.meta["loss"] = 0.1;
  ck.meta["name"] = "run-1";
  ck.meta["data"]["position"] = 640;
  ck.save(path);

  Checkpoint back = Checkpoint::load(path);
  CHECK(back.tensors.size() == 4);
  TensorDict model = back.tensors_under("model");
  CHECK(model.keys().size() == 2);
  CHECK(model["fc.weight"].to_vector<float>() == std::vector<float>{1, 2, 3, 4});
  StateDict o = back.state_dict("optim");
  CHECK(o.tensors.keys() == std::vector<std::string>{"state.0.exp_avg"});
  CHECK(o.meta.at("param_groups")[0].at("lr").as_double() == 0.001);
  CHECK(back.meta.at("epoch").as_int() == 3);
  CHECK(back.meta.at("step").as_int() == 123456789012);
  CHECK(back.meta.at("loss").as_double() == 0.1);
  CHECK(back.meta.at("name").as_string() == "run-1");
  CHECK(back.meta.at("data").at("position").as_int() == 640);
  CHECK(back.state_dict("absent").meta.is_object());
  CHECK(back.get_u64("rng.state") == std::vector<uint64_t>{0xFFFFFFFFFFFFFFFFull, 67280421310721ull, 0x8000000000000000ull});
  CHECK_THROWS_WITH(back.get_u64("model.fc.bias"), Catch::Contains("not a 1-D i64 tensor"));

  // It is a plain safetensors file: metadata entries are JSON text.
  auto raw = safetensors::load_file(path);
  CHECK(raw.metadata.at("epoch") == "3");
  CHECK(raw.metadata.at("name") == "\"run-1\"");
  CHECK(raw.tensors.contains("optim.state.0.exp_avg"));
  // Files from other writers load too (plain string metadata stays a string).
  safetensors::save_file({{"x", ones({1})}}, path, {{"format", "pt"}});
  CHECK(Checkpoint::load(path).meta.at("format").as_string() == "pt");
  CHECK_THROWS_WITH(ck.put("model", TensorDict{{"fc.bias", ones({1})}}), Catch::Contains("duplicate key 'model.fc.bias'"));
}
