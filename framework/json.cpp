// Json value, writer and strict recursive-descent parser (depth-limited).
#include "framework/json.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <type_traits>

#include "framework/error.h"

namespace minidl {

namespace {
constexpr int kMaxDepth = 256;
const char* type_str(Json::Type t) {
  switch (t) {
    case Json::Type::Null: return "null";
    case Json::Type::Bool: return "bool";
    case Json::Type::Int: return "integer";
    case Json::Type::Double: return "number";
    case Json::Type::String: return "string";
    case Json::Type::Array: return "array";
    case Json::Type::Object: return "object";
  }
  return "?";
}
}  // namespace

Json::Json(unsigned long i) : type_(Type::Int) {
  MINIDL_CHECK(i <= static_cast<unsigned long>(std::numeric_limits<int64_t>::max()), "Json", "integer ", i,
               " does not fit int64");
  i_ = static_cast<int64_t>(i);
}
Json::Json(unsigned long long i) : type_(Type::Int) {
  MINIDL_CHECK(i <= static_cast<unsigned long long>(std::numeric_limits<int64_t>::max()), "Json", "integer ", i,
               " does not fit int64");
  i_ = static_cast<int64_t>(i);
}

Json Json::array(std::initializer_list<Json> items) {
  Json j;
  j.type_ = Type::Array;
  j.arr_.assign(items.begin(), items.end());
  return j;
}
Json Json::object() {
  Json j;
  j.type_ = Type::Object;
  return j;
}

const char* Json::type_name() const { return type_str(type_); }

void Json::require(Type t, const char* op) const {
  MINIDL_CHECK(type_ == t, "Json", op, ": expected ", type_str(t), ", got ", type_str(type_));
}

bool Json::as_bool() const {
  require(Type::Bool, "as_bool");
  return b_;
}
int64_t Json::as_int() const {
  if (type_ == Type::Double) {
    MINIDL_CHECK(std::isfinite(d_) && d_ == std::floor(d_) && std::fabs(d_) < 9.2e18, "Json",
                 "as_int: number ", d_, " is not an integer");
    return static_cast<int64_t>(d_);
  }
  require(Type::Int, "as_int");
  return i_;
}
double Json::as_double() const {
  if (type_ == Type::Int) return static_cast<double>(i_);
  require(Type::Double, "as_double");
  return d_;
}
const std::string& Json::as_string() const {
  require(Type::String, "as_string");
  return s_;
}

size_t Json::size() const {
  if (type_ == Type::Object) return obj_.size();
  require(Type::Array, "size");
  return arr_.size();
}
const Json& Json::operator[](size_t i) const {
  require(Type::Array, "operator[]");
  MINIDL_CHECK(i < arr_.size(), "Json", "index ", i, " out of range for an array of ", arr_.size());
  return arr_[i];
}
Json& Json::operator[](size_t i) {
  require(Type::Array, "operator[]");
  MINIDL_CHECK(i < arr_.size(), "Json", "index ", i, " out of range for an array of ", arr_.size());
  return arr_[i];
}
void Json::push_back(Json v) {
  if (type_ == Type::Null) type_ = Type::Array;
  require(Type::Array, "push_back");
  arr_.push_back(std::move(v));
}
const std::vector<Json>& Json::elements() const {
  require(Type::Array, "elements");
  return arr_;
}

template <class T>
std::vector<T> Json::as_vector() const {
  require(Type::Array, "as_vector");
  std::vector<T> out;
  out.reserve(arr_.size());
  for (const Json& j : arr_) {
    if constexpr (std::is_same_v<T, int64_t>) out.push_back(j.as_int());
    else if constexpr (std::is_same_v<T, double>) out.push_back(j.as_double());
    else if constexpr (std::is_same_v<T, bool>) out.push_back(j.as_bool());
    else out.push_back(j.as_string());
  }
  return out;
}
template std::vector<int64_t> Json::as_vector<int64_t>() const;
template std::vector<double> Json::as_vector<double>() const;
template std::vector<bool> Json::as_vector<bool>() const;
template std::vector<std::string> Json::as_vector<std::string>() const;

Json& Json::operator[](const std::string& key) {
  if (type_ == Type::Null) type_ = Type::Object;
  require(Type::Object, "operator[]");
  auto [it, inserted] = index_.try_emplace(key, obj_.size());
  if (inserted) obj_.emplace_back(key, Json());
  return obj_[it->second].second;
}
const Json* Json::find(const std::string& key) const {
  if (type_ != Type::Object) return nullptr;
  auto it = index_.find(key);
  return it == index_.end() ? nullptr : &obj_[it->second].second;
}
const Json& Json::at(const std::string& key) const {
  require(Type::Object, "at");
  const Json* j = find(key);
  MINIDL_CHECK(j != nullptr, "Json", "missing key '", key, "'");
  return *j;
}
const std::vector<Json::Member>& Json::members() const {
  require(Type::Object, "members");
  return obj_;
}
bool Json::erase(const std::string& key) {
  require(Type::Object, "erase");
  auto it = index_.find(key);
  if (it == index_.end()) return false;
  const size_t pos = it->second;
  index_.erase(it);
  obj_.erase(obj_.begin() + static_cast<std::ptrdiff_t>(pos));
  for (auto& entry : index_)
    if (entry.second > pos) --entry.second;
  return true;
}

double Json::get(const std::string& key, double dflt) const {
  const Json* j = find(key);
  return j ? j->as_double() : dflt;
}
int64_t Json::get(const std::string& key, int64_t dflt) const {
  const Json* j = find(key);
  return j ? j->as_int() : dflt;
}
bool Json::get(const std::string& key, bool dflt) const {
  const Json* j = find(key);
  return j ? j->as_bool() : dflt;
}

bool Json::operator==(const Json& o) const {
  if (is_number() && o.is_number()) {
    if (type_ == Type::Int && o.type_ == Type::Int) return i_ == o.i_;
    return as_double() == o.as_double();
  }
  if (type_ != o.type_) return false;
  switch (type_) {
    case Type::Null: return true;
    case Type::Bool: return b_ == o.b_;
    case Type::String: return s_ == o.s_;
    case Type::Array: return arr_ == o.arr_;
    case Type::Object: return obj_ == o.obj_;
    default: return false;
  }
}

// ---------------------------------------------------------------- writer

namespace {
void escape_to(std::string& out, const std::string& s) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

void newline(std::string& out, int indent, int level) {
  if (indent < 0) return;
  out += '\n';
  out.append(static_cast<size_t>(indent * level), ' ');
}
}  // namespace

void Json::dump_to(std::string& out, int indent, int level) const {
  switch (type_) {
    case Type::Null: out += "null"; return;
    case Type::Bool: out += b_ ? "true" : "false"; return;
    case Type::Int: out += std::to_string(i_); return;
    case Type::Double: {
      if (std::isnan(d_)) { out += "NaN"; return; }
      if (std::isinf(d_)) { out += d_ > 0 ? "Infinity" : "-Infinity"; return; }
      // The shortest text that parses back to the same double (0.8545, not 0.85450000000000004).
      char buf[40];
      const auto res = std::to_chars(buf, buf + sizeof buf, d_);
      std::string s(buf, res.ptr);
      if (s.find_first_of(".eE") == std::string::npos) s += ".0";
      out += s;
      return;
    }
    case Type::String: escape_to(out, s_); return;
    case Type::Array: {
      out += '[';
      for (size_t i = 0; i < arr_.size(); ++i) {
        if (i) out += ',';
        newline(out, indent, level + 1);
        arr_[i].dump_to(out, indent, level + 1);
      }
      if (!arr_.empty()) newline(out, indent, level);
      out += ']';
      return;
    }
    case Type::Object: {
      out += '{';
      for (size_t i = 0; i < obj_.size(); ++i) {
        if (i) out += ',';
        newline(out, indent, level + 1);
        escape_to(out, obj_[i].first);
        out += indent < 0 ? ":" : ": ";
        obj_[i].second.dump_to(out, indent, level + 1);
      }
      if (!obj_.empty()) newline(out, indent, level);
      out += '}';
      return;
    }
  }
}

std::string Json::dump(int indent) const {
  std::string out;
  dump_to(out, indent, 0);
  return out;
}

// ---------------------------------------------------------------- parser

namespace {
class Parser {
 public:
  Parser(const std::string& text, const std::string& what) : s_(text), what_(what) {}

  Json parse_document() {
    skip_ws();
    Json v = value(0);
    skip_ws();
    if (pos_ != s_.size()) fail("unexpected trailing characters");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& problem) const {
    throw Error(detail::concat(what_, ": invalid JSON at byte ", pos_, ": ", problem));
  }
  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }
  bool consume(const char* lit) {
    size_t n = std::char_traits<char>::length(lit);
    if (s_.compare(pos_, n, lit) == 0) {
      pos_ += n;
      return true;
    }
    return false;
  }

  Json value(int depth) {
    if (depth > kMaxDepth) fail("nesting deeper than 256 levels");
    if (pos_ >= s_.size()) fail("unexpected end of input");
    char c = s_[pos_];
    if (c == '{') return object(depth);
    if (c == '[') return array(depth);
    if (c == '"') return Json(string());
    if (consume("true")) return Json(true);
    if (consume("false")) return Json(false);
    if (consume("null")) return Json();
    if (consume("NaN")) return Json(std::numeric_limits<double>::quiet_NaN());
    if (consume("Infinity")) return Json(std::numeric_limits<double>::infinity());
    if (consume("-Infinity")) return Json(-std::numeric_limits<double>::infinity());
    if (c == '-' || (c >= '0' && c <= '9')) return number();
    fail(detail::concat("unexpected character '", c, "'"));
  }

  Json object(int depth) {
    ++pos_;  // {
    Json obj = Json::object();
    skip_ws();
    if (pos_ < s_.size() && s_[pos_] == '}') {
      ++pos_;
      return obj;
    }
    for (;;) {
      skip_ws();
      if (pos_ >= s_.size() || s_[pos_] != '"') fail("expected a string key");
      std::string key = string();
      if (obj.contains(key)) fail(detail::concat("duplicate key '", key, "'"));
      skip_ws();
      if (pos_ >= s_.size() || s_[pos_] != ':') fail("expected ':'");
      ++pos_;
      skip_ws();
      obj[key] = value(depth + 1);
      skip_ws();
      if (pos_ >= s_.size()) fail("unexpected end of input in an object");
      if (s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (s_[pos_] == '}') {
        ++pos_;
        return obj;
      }
      fail("expected ',' or '}'");
    }
  }

  Json array(int depth) {
    ++pos_;  // [
    Json arr = Json::array();
    skip_ws();
    if (pos_ < s_.size() && s_[pos_] == ']') {
      ++pos_;
      return arr;
    }
    for (;;) {
      skip_ws();
      arr.push_back(value(depth + 1));
      skip_ws();
      if (pos_ >= s_.size()) fail("unexpected end of input in an array");
      if (s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (s_[pos_] == ']') {
        ++pos_;
        return arr;
      }
      fail("expected ',' or ']'");
    }
  }

  uint32_t hex4() {
    if (pos_ + 4 > s_.size()) fail("truncated \\u escape");
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      char c = s_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= c - '0';
      else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
      else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
      else fail("bad hex digit in \\u escape");
    }
    return v;
  }

  static void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  std::string string() {
    ++pos_;  // "
    std::string out;
    for (;;) {
      if (pos_ >= s_.size()) fail("unterminated string");
      unsigned char c = static_cast<unsigned char>(s_[pos_++]);
      if (c == '"') return out;
      if (c < 0x20) fail("control character in a string");
      if (c != '\\') {
        out += static_cast<char>(c);
        continue;
      }
      if (pos_ >= s_.size()) fail("unterminated escape");
      char e = s_[pos_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          uint32_t cp = hex4();
          if (cp >= 0xD800 && cp < 0xDC00) {
            if (!consume("\\u")) fail("unpaired surrogate in \\u escape");
            uint32_t lo = hex4();
            if (lo < 0xDC00 || lo >= 0xE000) fail("invalid low surrogate in \\u escape");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else if (cp >= 0xDC00 && cp < 0xE000) {
            fail("unpaired surrogate in \\u escape");
          }
          append_utf8(out, cp);
          break;
        }
        default: fail(detail::concat("invalid escape '\\", e, "'"));
      }
    }
  }

  Json number() {
    const size_t start = pos_;
    bool is_float = false;
    if (s_[pos_] == '-') ++pos_;
    if (pos_ >= s_.size() || !isdigit(s_[pos_])) fail("invalid number");
    if (s_[pos_] == '0') {
      ++pos_;
    } else {
      while (pos_ < s_.size() && isdigit(s_[pos_])) ++pos_;
    }
    if (pos_ < s_.size() && s_[pos_] == '.') {
      is_float = true;
      ++pos_;
      if (pos_ >= s_.size() || !isdigit(s_[pos_])) fail("invalid number: digits expected after '.'");
      while (pos_ < s_.size() && isdigit(s_[pos_])) ++pos_;
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      is_float = true;
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      if (pos_ >= s_.size() || !isdigit(s_[pos_])) fail("invalid number: digits expected in exponent");
      while (pos_ < s_.size() && isdigit(s_[pos_])) ++pos_;
    }
    const std::string tok = s_.substr(start, pos_ - start);
    if (!is_float) {
      errno = 0;
      char* end = nullptr;
      long long v = std::strtoll(tok.c_str(), &end, 10);
      if (errno == 0 && end == tok.c_str() + tok.size()) return Json(v);
    }
    return Json(std::strtod(tok.c_str(), nullptr));
  }
  static bool isdigit(char c) { return c >= '0' && c <= '9'; }

  const std::string& s_;
  const std::string& what_;
  size_t pos_ = 0;
};
}  // namespace

Json Json::parse(const std::string& text, const std::string& what) { return Parser(text, what).parse_document(); }

}  // namespace minidl
