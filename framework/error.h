// Errors: every failure a user can cause is a minidl::Error whose message names the op (or file)
// and the problem: what it got and what it expected.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace minidl {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {
template <class... Args>
std::string concat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
}  // namespace detail

}  // namespace minidl

// MINIDL_CHECK(cond, "op_name", "message parts", ...): throws minidl::Error("op_name: message").
#define MINIDL_CHECK(cond, op, ...)                                                     \
  do {                                                                                  \
    if (!(cond)) throw ::minidl::Error(::minidl::detail::concat(op, ": ", __VA_ARGS__)); \
  } while (0)

#define MINIDL_FAIL(op, ...) throw ::minidl::Error(::minidl::detail::concat(op, ": ", __VA_ARGS__))
