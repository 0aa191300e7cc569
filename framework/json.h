// Json: a small JSON value (null, bool, integer, double, string, array, insertion-ordered object)
// with a strict parser and a writer. Enough for safetensors headers, checkpoint metadata and the
// state dicts of optimizers and schedulers; no external dependency.
//
// Numbers: integers without fraction/exponent that fit int64 parse as Int, others as Double; a
// Double is written with 17 significant digits (exact round trip) and always with a '.' or an
// exponent, so its type survives a round trip. Like Python's json module, NaN, Infinity and
// -Infinity are written and accepted (strict JSON has no spelling for them).
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace minidl {

class Json {
 public:
  enum class Type : uint8_t { Null, Bool, Int, Double, String, Array, Object };
  using Member = std::pair<std::string, Json>;

  Json() = default;
  Json(std::nullptr_t) {}                                     // NOLINT: implicit, like a JSON literal
  Json(bool b) : type_(Type::Bool), b_(b) {}                  // NOLINT
  Json(int i) : type_(Type::Int), i_(i) {}                    // NOLINT
  Json(long i) : type_(Type::Int), i_(i) {}                   // NOLINT
  Json(long long i) : type_(Type::Int), i_(i) {}              // NOLINT
  Json(unsigned i) : type_(Type::Int), i_(i) {}               // NOLINT
  Json(unsigned long i);                                      // NOLINT: throws above INT64_MAX
  Json(unsigned long long i);                                 // NOLINT
  Json(double d) : type_(Type::Double), d_(d) {}              // NOLINT
  Json(const char* s) : type_(Type::String), s_(s) {}         // NOLINT
  Json(std::string s) : type_(Type::String), s_(std::move(s)) {}  // NOLINT
  static Json array(std::initializer_list<Json> items = {});
  static Json object();
  template <class T>
  static Json array_of(const std::vector<T>& v) {
    Json a = array();
    for (const T& x : v) a.push_back(Json(x));
    return a;
  }

  Type type() const { return type_; }
  const char* type_name() const;
  bool is_null() const { return type_ == Type::Null; }
  bool is_bool() const { return type_ == Type::Bool; }
  bool is_number() const { return type_ == Type::Int || type_ == Type::Double; }
  bool is_int() const { return type_ == Type::Int; }
  bool is_string() const { return type_ == Type::String; }
  bool is_array() const { return type_ == Type::Array; }
  bool is_object() const { return type_ == Type::Object; }

  // Typed access; a wrong type throws naming the expected and actual types.
  bool as_bool() const;
  int64_t as_int() const;  // Int, or a Double with an exact integer value
  double as_double() const;  // Int or Double
  const std::string& as_string() const;

  // Arrays.
  size_t size() const;  // arrays and objects
  const Json& operator[](size_t i) const;
  Json& operator[](size_t i);
  // int overloads: j[0] would otherwise be ambiguous with the const char* key form.
  const Json& operator[](int i) const { return (*this)[static_cast<size_t>(i)]; }
  Json& operator[](int i) { return (*this)[static_cast<size_t>(i)]; }
  void push_back(Json v);
  const std::vector<Json>& elements() const;
  template <class T> std::vector<T> as_vector() const;  // T in {int64_t, double, std::string, bool}

  // Objects (a null value becomes an empty object on first non-const key access).
  Json& operator[](const std::string& key);
  Json& operator[](const char* key) { return (*this)[std::string(key)]; }
  const Json& at(const std::string& key) const;  // throws if missing
  const Json* find(const std::string& key) const;
  bool contains(const std::string& key) const { return find(key) != nullptr; }
  const std::vector<Member>& members() const;
  bool erase(const std::string& key);

  // Getters with a default for a missing key.
  double get(const std::string& key, double dflt) const;
  int64_t get(const std::string& key, int64_t dflt) const;
  bool get(const std::string& key, bool dflt) const;

  // indent < 0: compact, one line. indent >= 0: pretty, that many spaces per level.
  std::string dump(int indent = -1) const;
  // Parses one JSON value (surrounding whitespace allowed). Errors read "<what>: invalid JSON at
  // byte N: <problem>".
  static Json parse(const std::string& text, const std::string& what = "json");

  bool operator==(const Json& o) const;
  bool operator!=(const Json& o) const { return !(*this == o); }

 private:
  void require(Type t, const char* op) const;
  void dump_to(std::string& out, int indent, int level) const;

  Type type_ = Type::Null;
  bool b_ = false;
  int64_t i_ = 0;
  double d_ = 0.0;
  std::string s_;
  std::vector<Json> arr_;
  std::vector<Member> obj_;
  // Position of each key in obj_: key lookup and insertion are O(1), so parsing an object of n
  // keys (a safetensors header with 100k entries) is linear, not quadratic.
  std::unordered_map<std::string, size_t> index_;
};

}  // namespace minidl
