// The inverse error function for the CPU kernels (the C library has none): a closed-form first
// guess refined by Halley's method on erf, or on erfc where |y| > 0.5 so that the residual keeps
// the bits of 1 - |y| (exact there). The f32/f16/bf16 kernels call it in double and round once.
#pragma once
#include <cmath>
#include <limits>

namespace minidl::kernels::cpu {

inline double erfinv(double y) {
  if (std::isnan(y)) return y;
  const double ay = std::abs(y);
  if (ay >= 1.0) return ay == 1.0 ? std::copysign(std::numeric_limits<double>::infinity(), y) : std::numeric_limits<double>::quiet_NaN();
  if (ay == 0.0) return y;  // keeps -0
  constexpr double kSqrtPi = 1.7724538509055160273, kPi = 3.14159265358979323846;
  double x;
  if (ay < 1e-2) {
    x = 0.5 * kSqrtPi * (ay + kPi / 12 * ay * ay * ay);  // the series' first two terms
  } else {
    // Winitzki's approximation (relative error about 2e-3).
    const double a = 0.147, ln = std::log((1.0 - ay) * (1.0 + ay)), t = 2.0 / (kPi * a) + 0.5 * ln;
    x = std::sqrt(std::sqrt(t * t - ln / a) - t);
  }
  for (int i = 0; i < 4; ++i) {  // Halley's iteration triples the correct digits each time
    const double r = ay > 0.5 ? (1.0 - ay) - std::erfc(x) : std::erf(x) - ay;  // erf(x) - |y|
    const double d = 2.0 / kSqrtPi * std::exp(-x * x);                           // erf'(x)
    x -= r / (d + x * r);                                                        // erf'' = -2x erf'
  }
  return std::copysign(x, y);
}

}  // namespace minidl::kernels::cpu
