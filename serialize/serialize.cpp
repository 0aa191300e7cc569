// safetensors reader/writer, atomic writes and the Checkpoint container.
#include "serialize/serialize.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>

#include "framework/grad_mode.h"
#include "framework/error.h"

namespace minidl {

static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes a little-endian host");

namespace {
constexpr uint64_t kMaxHeaderSize = 100'000'000;  // the reference implementation's limit

std::string errno_str() { return std::strerror(errno); }

// Writes all bytes to fd, retrying short writes and EINTR.
void write_all(int fd, const void* data, size_t n, const std::string& path) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      MINIDL_FAIL("write_file_atomically", "writing '", path, "' failed: ", errno_str());
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
}

// Removes what saves of one target that were killed left in dir: files named prefix plus exactly
// mkstemp's 6 letters or digits that no live writer holds (a writer keeps an exclusive flock on
// its temporary file until the rename, and the lock ends with its process).
void remove_stale_temporaries(const std::filesystem::path& dir, const std::string& prefix) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() != prefix.size() + 6 || name.compare(0, prefix.size(), prefix) != 0) continue;
    if (!std::all_of(name.begin() + static_cast<std::ptrdiff_t>(prefix.size()), name.end(),
                     [](char ch) { return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z'); }))
      continue;
    std::error_code type_ec;
    if (!it->is_regular_file(type_ec) || it->is_symlink(type_ec)) continue;
    const int fd = ::open(it->path().c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) continue;
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) ::unlink(it->path().c_str());
    ::close(fd);
  }
}
}  // namespace

void write_file_atomically(const std::string& path, const std::function<void(const ByteSink&)>& write) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::string tmp_name = ".";  // built step by step: GCC 12 warns falsely on "." + string
  tmp_name += target.filename().string();
  tmp_name += ".tmp-";
  remove_stale_temporaries(dir, tmp_name);
  tmp_name += "XXXXXX";  // mkstemp's template: it replaces the six X with a unique suffix
  std::string tmpl = (dir / tmp_name).string();
  int fd = ::mkstemp(tmpl.data());
  MINIDL_CHECK(fd >= 0, "write_file_atomically", "cannot create a temporary file next to '", path, "': ", errno_str());
  const std::string tmp = tmpl;
  try {
    // Held until the rename: marks the file as a save in progress for remove_stale_temporaries.
    MINIDL_CHECK(::flock(fd, LOCK_EX) == 0, "write_file_atomically", "cannot lock the temporary file for '", path, "': ", errno_str());
    ::fchmod(fd, 0644);  // mkstemp creates 0600; a saved model should be readable like any file
    write([&](const void* data, size_t n) { write_all(fd, data, n, path); });
    MINIDL_CHECK(::fsync(fd) == 0, "write_file_atomically", "fsync of '", path, "' failed: ", errno_str());
    // Renamed while still open (and locked), so that no other save takes it for a stale one.
    MINIDL_CHECK(::rename(tmp.c_str(), path.c_str()) == 0, "write_file_atomically", "cannot rename the temporary file to '",
                 path, "': ", errno_str());
    const int rc = ::close(fd);
    fd = -1;
    MINIDL_CHECK(rc == 0, "write_file_atomically", "closing '", path, "' failed: ", errno_str());
  } catch (...) {
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  // Make the rename itself durable (best effort: some file systems refuse fsync on directories).
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

const char* safetensors_dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "F32";
    case DType::F64: return "F64";
    case DType::F16: return "F16";
    case DType::BF16: return "BF16";
    case DType::I64: return "I64";
    case DType::I32: return "I32";
    case DType::U8: return "U8";
    case DType::Bool: return "BOOL";
  }
  MINIDL_FAIL("safetensors", "unknown dtype");
}

DType dtype_from_safetensors_name(const std::string& name) {
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I64, DType::I32, DType::U8, DType::Bool})
    if (name == safetensors_dtype_name(t)) return t;
  MINIDL_FAIL("safetensors", "unsupported dtype '", name,
              "' (minidl reads F32, F64, F16, BF16, I64, I32, U8 and BOOL)");
}

namespace safetensors {

namespace {
struct Prepared {
  std::string header;  // length prefix + padded JSON
  std::vector<std::pair<std::string, Tensor>> data;  // contiguous CPU tensors in file order
};

// Position in the reference implementation's Dtype enum (BOOL, U8, I8, F8_E5M2, F8_E4M3, I16, U16,
// F16, BF16, I32, U32, F32, F64, I64, U64).
int dtype_rank(DType t) {
  switch (t) {
    case DType::Bool: return 0;
    case DType::U8: return 1;
    case DType::F16: return 7;
    case DType::BF16: return 8;
    case DType::I32: return 9;
    case DType::F32: return 11;
    case DType::F64: return 12;
    case DType::I64: return 13;
  }
  return 0;
}

Prepared prepare(const TensorDict& tensors, const Metadata& metadata) {
  NoGradGuard ng;
  Prepared p;
  for (const auto& [name, t] : tensors) {
    MINIDL_CHECK(!name.empty(), "safetensors", "a tensor has an empty name");
    MINIDL_CHECK(name != "__metadata__", "safetensors", "'__metadata__' is reserved and cannot name a tensor");
    MINIDL_CHECK(t.defined(), "safetensors", "tensor '", name, "' is undefined");
    p.data.emplace_back(name, t.detach().to(Device::cpu()).contiguous());
  }
  // The reference writer's order: decreasing dtype rank (its Dtype enum, in increasing alignment
  // order), then name. Every tensor starts aligned to its element size, and our bytes equal the
  // reference implementation's for the same tensors and metadata.
  std::stable_sort(p.data.begin(), p.data.end(), [](const auto& a, const auto& b) {
    const int ra = dtype_rank(a.second.dtype()), rb = dtype_rank(b.second.dtype());
    if (ra != rb) return ra > rb;
    return a.first < b.first;
  });
  Json header = Json::object();
  if (!metadata.empty()) {
    Json m = Json::object();
    for (const auto& [k, v] : metadata) m[k] = v;
    header["__metadata__"] = std::move(m);
  }
  uint64_t offset = 0;
  for (const auto& [name, t] : p.data) {
    Json e = Json::object();
    e["dtype"] = safetensors_dtype_name(t.dtype());
    e["shape"] = Json::array_of(t.shape());
    const uint64_t end = offset + t.nbytes();
    e["data_offsets"] = Json::array({Json(offset), Json(end)});
    header[name] = std::move(e);
    offset = end;
  }
  std::string json = header.dump();
  json.append((8 - json.size() % 8) % 8, ' ');
  const uint64_t n = json.size();
  p.header.resize(8);
  for (int k = 0; k < 8; ++k) p.header[k] = static_cast<char>((n >> (8 * k)) & 0xFF);
  p.header += json;
  return p;
}

// What the header says about one tensor.
struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin, end;
};

struct Parsed {
  std::vector<Entry> entries;  // sorted by begin
  Metadata metadata;
};

// Whether text is well-formed UTF-8 (no overlong forms, surrogates or code points past U+10FFFF):
// the reference reader refuses any other header (InvalidHeader).
bool valid_utf8(const std::string& text) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  for (size_t i = 0; i < n;) {
    const unsigned c = p[i];
    size_t len;
    unsigned lo = 0x80, hi = 0xBF;  // range of the second byte
    if (c < 0x80) len = 1;
    else if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c >= 0xE0 && c <= 0xEF) len = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    else if (c >= 0xF0 && c <= 0xF4) len = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    else return false;
    if (i + len > n) return false;
    for (size_t k = 1; k < len; ++k) {
      const unsigned b = p[i + k];
      if (k == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) return false;
    }
    i += len;
  }
  return true;
}

// Validates the header against a data buffer of data_size bytes.
Parsed parse_header(const std::string& json_text, uint64_t data_size, const std::string& what) {
  auto fail = [&](const std::string& problem) -> void { throw Error(detail::concat("safetensors: ", what, ": ", problem)); };
  if (!valid_utf8(json_text)) fail("the header is not valid UTF-8");
  Json header;
  try {
    header = Json::parse(json_text, "header");
  } catch (const Error& e) {
    fail(detail::concat("the header is not valid JSON (", e.what(), ")"));
  }
  if (!header.is_object()) fail(detail::concat("the header must be a JSON object, got a ", header.type_name()));
  Parsed out;
  for (const auto& member : header.members()) {
    // Named references, not a structured binding: the lambda below captures the name, which
    // clang before 16 refuses for a binding.
    const std::string& name = member.first;
    const Json& v = member.second;
    if (name == "__metadata__") {
      if (v.is_null()) continue;  // the reference reader's Option: null is no metadata
      if (!v.is_object()) fail("'__metadata__' must be an object of strings");
      for (const auto& [k, s] : v.members()) {
        if (!s.is_string()) fail(detail::concat("'__metadata__' entry '", k, "' must be a string, got ", s.type_name()));
        out.metadata[k] = s.as_string();
      }
      continue;
    }
    auto bad = [&](const std::string& problem) { fail(detail::concat("tensor '", name, "': ", problem)); };
    if (!v.is_object()) bad("expected an object with dtype, shape and data_offsets");
    const Json* dt = v.find("dtype");
    const Json* sh = v.find("shape");
    const Json* off = v.find("data_offsets");
    if (!dt || !sh || !off) bad("missing 'dtype', 'shape' or 'data_offsets'");
    for (const auto& m : v.members())
      if (m.first != "dtype" && m.first != "shape" && m.first != "data_offsets") bad(detail::concat("unknown field '", m.first, "'"));
    if (!dt->is_string()) bad("'dtype' must be a string");
    Entry e;
    e.name = name;
    try {
      e.dtype = dtype_from_safetensors_name(dt->as_string());
    } catch (const Error& err) {
      bad(err.what());
    }
    if (!sh->is_array()) bad("'shape' must be an array of non-negative integers");
    for (const Json& d : sh->elements()) {
      if (!d.is_int() || d.as_int() < 0) bad("'shape' must be an array of non-negative integers");
      e.shape.push_back(d.as_int());
    }
    const std::optional<int64_t> numel = checked_numel(e.shape);
    if (!numel) bad(detail::concat("shape ", shape_str(e.shape), " overflows int64"));
    if (!off->is_array() || off->size() != 2 || !(*off)[0].is_int() || !(*off)[1].is_int() || (*off)[0].as_int() < 0 ||
        (*off)[1].as_int() < (*off)[0].as_int())
      bad("'data_offsets' must be [begin, end] with 0 <= begin <= end");
    e.begin = static_cast<uint64_t>((*off)[0].as_int());
    e.end = static_cast<uint64_t>((*off)[1].as_int());
    uint64_t nbytes = 0;
    if (__builtin_mul_overflow(static_cast<uint64_t>(*numel), static_cast<uint64_t>(element_size(e.dtype)), &nbytes))
      bad("size overflows");
    if (e.end - e.begin != nbytes)
      bad(detail::concat("data_offsets [", e.begin, ", ", e.end, "] hold ", e.end - e.begin, " bytes but ",
                         dt->as_string(), shape_str(e.shape), " needs ", nbytes));
    out.entries.push_back(std::move(e));
  }
  std::stable_sort(out.entries.begin(), out.entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t pos = 0;
  for (const Entry& e : out.entries) {
    if (e.begin != pos)
      fail(detail::concat("tensor '", e.name, "' starts at byte ", e.begin, " of the data but the previous tensor ends at ",
                          pos, " (offsets overlap or leave a hole)"));
    pos = e.end;
  }
  if (pos != data_size)
    fail(detail::concat("the tensors cover ", pos, " bytes of data but the file holds ", data_size,
                        pos > data_size ? " (truncated file?)" : " (trailing bytes)"));
  return out;
}

uint64_t read_u64_le(const unsigned char* p) {
  uint64_t v = 0;
  for (int k = 0; k < 8; ++k) v |= static_cast<uint64_t>(p[k]) << (8 * k);
  return v;
}

uint64_t check_header_length(const unsigned char* first8, uint64_t total, const std::string& what) {
  if (total < 8)
    throw Error(detail::concat("safetensors: ", what, ": file too small (", total, " bytes) to hold the 8-byte header length"));
  const uint64_t n = read_u64_le(first8);
  if (n > kMaxHeaderSize)
    throw Error(detail::concat("safetensors: ", what, ": header length ", n, " exceeds the 100 MB limit (corrupt file?)"));
  if (n > total - 8)
    throw Error(detail::concat("safetensors: ", what, ": header length ", n, " exceeds the file size (", total,
                               " bytes; truncated file?)"));
  return n;
}

// Builds tensors by calling read(offset into data, nbytes, dst).
File build(const Parsed& parsed, Device device, const std::function<void(uint64_t, uint64_t, void*)>& read) {
  File f;
  f.metadata = parsed.metadata;
  for (const Entry& e : parsed.entries) {
    // BOOL data is read as bytes and any nonzero byte becomes true, as PyTorch reads such a buffer
    // (the format does not forbid bytes other than 0 and 1; a bool tensor must not hold them).
    const bool as_bytes = e.dtype == DType::Bool;
    Tensor t = empty(e.shape, TensorOptions(as_bytes ? DType::U8 : e.dtype));
    if (e.end > e.begin) read(e.begin, e.end - e.begin, t.raw_data());
    if (as_bytes) t = t.to(DType::Bool);  // a cast: nonzero is true
    f.tensors.insert(e.name, device.is_cpu() ? t : t.to(device));
  }
  return f;
}
}  // namespace

std::string serialize(const TensorDict& tensors, const Metadata& metadata) {
  Prepared p = prepare(tensors, metadata);
  std::string out = std::move(p.header);
  for (const auto& [name, t] : p.data)
    if (t.nbytes()) out.append(static_cast<const char*>(t.raw_data()), t.nbytes());
  return out;
}

void save_file(const TensorDict& tensors, const std::string& path, const Metadata& metadata) {
  Prepared p = prepare(tensors, metadata);
  write_file_atomically(path, [&](const ByteSink& sink) {
    sink(p.header.data(), p.header.size());
    for (const auto& [name, t] : p.data)
      if (t.nbytes()) sink(t.raw_data(), t.nbytes());
  });
}

File deserialize(const std::string& bytes, const std::string& what, Device device) {
  const auto* u = reinterpret_cast<const unsigned char*>(bytes.data());
  const uint64_t n = check_header_length(u, bytes.size(), what);
  Parsed parsed = parse_header(bytes.substr(8, n), bytes.size() - 8 - n, what);
  const char* data = bytes.data() + 8 + n;
  return build(parsed, device, [&](uint64_t off, uint64_t len, void* dst) { std::memcpy(dst, data + off, len); });
}

File load_file(const std::string& path, Device device) {
  const std::string what = "'" + path + "'";
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw Error(detail::concat("safetensors: cannot open ", what, ": ", errno_str()));
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw Error(detail::concat("safetensors: cannot stat ", what, ": ", errno_str()));
  const uint64_t total = static_cast<uint64_t>(st.st_size);
  auto pread_all = [&](uint64_t offset, uint64_t len, void* dst) {
    char* p = static_cast<char*>(dst);
    while (len > 0) {
      ssize_t r = ::pread(fd, p, len, static_cast<off_t>(offset));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0)
        throw Error(detail::concat("safetensors: reading ", what, " failed at byte ", offset, ": ",
                                   r < 0 ? errno_str() : std::string("unexpected end of file")));
      p += r;
      offset += static_cast<uint64_t>(r);
      len -= static_cast<uint64_t>(r);
    }
  };
  unsigned char first8[8] = {};
  if (total >= 8) pread_all(0, 8, first8);
  const uint64_t n = check_header_length(first8, total, what);
  std::string json(n, '\0');
  if (n) pread_all(8, n, json.data());
  Parsed parsed = parse_header(json, total - 8 - n, what);
  const uint64_t base = 8 + n;
  return build(parsed, device, [&](uint64_t off, uint64_t len, void* dst) { pread_all(base + off, len, dst); });
}

}  // namespace safetensors

// ---------------------------------------------------------------- Checkpoint

void Checkpoint::put(const std::string& prefix, const TensorDict& dict) {
  for (const auto& [name, t] : dict) tensors.insert(prefix + "." + name, t);
}

void Checkpoint::put(const std::string& prefix, const StateDict& sd) {
  put(prefix, sd.tensors);
  meta[prefix] = sd.meta;
}

void Checkpoint::put(const std::string& key, const Json& value) { meta[key] = value; }

TensorDict Checkpoint::tensors_under(const std::string& prefix) const {
  TensorDict out;
  const std::string p = prefix + ".";
  for (const auto& [name, t] : tensors)
    if (name.compare(0, p.size(), p) == 0) out.insert(name.substr(p.size()), t);
  return out;
}

StateDict Checkpoint::state_dict(const std::string& prefix) const {
  StateDict sd;
  sd.tensors = tensors_under(prefix);
  if (const Json* m = meta.find(prefix)) sd.meta = *m;
  return sd;
}

void Checkpoint::put_u64(const std::string& name, const std::vector<uint64_t>& values) {
  std::vector<int64_t> bits(values.size());
  if (!values.empty()) std::memcpy(bits.data(), values.data(), values.size() * sizeof(uint64_t));
  tensors.insert(name, from_vector(bits));
}

std::vector<uint64_t> Checkpoint::get_u64(const std::string& name) const {
  const Tensor& t = tensors.at(name);
  MINIDL_CHECK(t.dtype() == DType::I64 && t.dim() == 1, "Checkpoint::get_u64", "'", name,
               "' is not a 1-D i64 tensor (got ", t.meta_str(), ")");
  std::vector<int64_t> bits = t.to_vector<int64_t>();
  std::vector<uint64_t> out(bits.size());
  if (!bits.empty()) std::memcpy(out.data(), bits.data(), bits.size() * sizeof(uint64_t));
  return out;
}

void Checkpoint::save(const std::string& path) const {
  MINIDL_CHECK(meta.is_object(), "Checkpoint::save", "meta must be a JSON object, got a ", meta.type_name());
  safetensors::Metadata md;
  for (const auto& [k, v] : meta.members()) md[k] = v.dump();
  safetensors::save_file(tensors, path, md);
}

Checkpoint Checkpoint::load(const std::string& path, Device device) {
  safetensors::File f = safetensors::load_file(path, device);
  Checkpoint ck;
  ck.tensors = std::move(f.tensors);
  for (const auto& [k, v] : f.metadata) {
    // Entries written by Checkpoint::save are JSON text; plain strings from other writers
    // (e.g. {"format": "pt"}) are kept as strings.
    try {
      ck.meta[k] = Json::parse(v);
    } catch (const Error&) {
      ck.meta[k] = v;
    }
  }
  return ck;
}

}  // namespace minidl
