// Values as Python's repr writes them, for the layers whose describe() is PyTorch's repr.
#pragma once
#include <charconv>
#include <cmath>
#include <string>

namespace minidl::nn::detail {

inline const char* python_bool(bool b) { return b ? "True" : "False"; }

// Python's float repr: the shortest digits that round-trip, written fixed for exponents -4 to 15
// ("0.0001", "2.0", "1234.5") and scientific otherwise ("1e-05", "1.5e+20").
inline std::string python_float(double v) {
  if (!std::isfinite(v)) return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
  char buf[40];
  const auto end = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific).ptr;
  const std::string sci(buf, end);  // "-1.2345e-05"
  const size_t e = sci.find('e');
  const int exponent = std::stoi(sci.substr(e + 1));
  const bool negative = sci[0] == '-';
  std::string digits;
  for (char c : sci.substr(0, e))
    if (c >= '0' && c <= '9') digits += c;
  std::string out = negative ? "-" : "";
  if (exponent < -4 || exponent >= 16) {
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    const int mag = exponent < 0 ? -exponent : exponent;
    return out + "e" + (exponent < 0 ? "-" : "+") + (mag < 10 ? "0" : "") + std::to_string(mag);
  }
  if (exponent < 0) return out + "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
  const size_t point = static_cast<size_t>(exponent) + 1;
  if (digits.size() <= point) return out + digits + std::string(point - digits.size(), '0') + ".0";
  return out + digits.substr(0, point) + "." + digits.substr(point);
}

}  // namespace minidl::nn::detail
