// CPU random fills from the Philox4x32-10 stream: uniform, normal (Box-Muller), integers and
// dropout keep-masks. Element k depends only on its own block (offset + k/4 for 32-bit draws,
// offset + k/2 for 64-bit draws), so blocks are filled in parallel and the result is the same for
// any thread count.
#include <cmath>
#include <numbers>

#include "framework/generator.h"
#include "ops/cpu/loops.h"
#include "ops/cpu/scalar.h"
#include "ops/kernels.h"

namespace minidl::kernels::cpu {

namespace {
constexpr double k2Pi = 2.0 * std::numbers::pi;
constexpr double kTwoPow32 = 4294967296.0;

// Calls fill(values, block_index) for each block of `per_block` elements and stores them.
template <class T, int PerBlock, class F>
void fill_blocks(const Tensor& out, uint64_t seed, uint64_t offset, int64_t cost, F fill) {
  T* po = static_cast<T*>(out.raw_data());
  const int64_t n = out.numel();
  const int64_t blocks = (n + PerBlock - 1) / PerBlock;
  parallel_for(blocks, cost * PerBlock, [&](int64_t b, int64_t e) {
    for (int64_t blk = b; blk < e; ++blk) {
      double v[PerBlock];
      fill(v, philox4x32(seed, offset + static_cast<uint64_t>(blk)));
      const int64_t base = blk * PerBlock;
      for (int j = 0; j < PerBlock && base + j < n; ++j) po[base + j] = cast_scalar<T>(v[j]);
    }
  });
}

inline uint64_t join64(uint32_t lo, uint32_t hi) { return (static_cast<uint64_t>(hi) << 32) | lo; }

template <class T>
void random_typed(RandomDist dist, const Tensor& out, uint64_t seed, uint64_t offset, double a, double b) {
  using Words = std::array<uint32_t, 4>;
  constexpr bool kWide = std::is_same_v<T, double>;  // f64 takes 53-bit uniforms
  switch (dist) {
    case RandomDist::Uniform:
      if constexpr (kWide) {
        return fill_blocks<T, 2>(out, seed, offset, 4, [&](double* v, const Words& w) {
          for (int j = 0; j < 2; ++j) v[j] = a + (b - a) * bits_to_unit_double(join64(w[2 * j], w[2 * j + 1]));
        });
      } else if constexpr (is_low_precision_v<T>) {
        // As PyTorch: only as many random bits as the type holds, so rounding never reaches 1.
        constexpr int digits = std::is_same_v<T, half> ? 11 : 8;
        return fill_blocks<T, 4>(out, seed, offset, 4, [&](double* v, const Words& w) {
          for (int j = 0; j < 4; ++j) v[j] = a + (b - a) * std::ldexp(static_cast<double>(w[j] & ((1u << digits) - 1)), -digits);
        });
      } else {
        return fill_blocks<T, 4>(out, seed, offset, 4, [&](double* v, const Words& w) {
          for (int j = 0; j < 4; ++j) v[j] = a + (b - a) * static_cast<double>(bits_to_unit_float(w[j]));
        });
      }
    case RandomDist::Normal:
      // Box-Muller: u1 in (0, 1] (log is finite), u2 in [0, 1); one pair gives two normals.
      if constexpr (kWide) {
        return fill_blocks<T, 2>(out, seed, offset, 40, [&](double* v, const Words& w) {
          const double u1 = bits_to_unit_double(join64(w[0], w[1])) + 0x1.0p-53;
          const double u2 = bits_to_unit_double(join64(w[2], w[3]));
          const double r = std::sqrt(-2.0 * std::log(u1));
          v[0] = a + b * r * std::cos(k2Pi * u2);
          v[1] = a + b * r * std::sin(k2Pi * u2);
        });
      } else {
        return fill_blocks<T, 4>(out, seed, offset, 40, [&](double* v, const Words& w) {
          for (int j = 0; j < 2; ++j) {
            const double u1 = (static_cast<double>(w[2 * j]) + 1.0) / kTwoPow32;
            const double u2 = static_cast<double>(w[2 * j + 1]) / kTwoPow32;
            const double r = std::sqrt(-2.0 * std::log(u1));
            v[2 * j] = a + b * r * std::cos(k2Pi * u2);
            v[2 * j + 1] = a + b * r * std::sin(k2Pi * u2);
          }
        });
      }
    case RandomDist::Integer: {
      const int64_t lo = static_cast<int64_t>(a);
      const uint64_t range = static_cast<uint64_t>(static_cast<int64_t>(b) - lo);
      // As PyTorch: 32-bit draws modulo the range when it fits, 64-bit draws otherwise.
      if (range <= (uint64_t{1} << 32))
        return fill_blocks<T, 4>(out, seed, offset, 2, [&](double* v, const Words& w) {
          for (int j = 0; j < 4; ++j) v[j] = static_cast<double>(lo + static_cast<int64_t>(w[j] % range));
        });
      // Beyond 2^53 a double cannot carry the value; write integers directly.
      if constexpr (std::is_same_v<T, int64_t>) {
        int64_t* po = static_cast<int64_t*>(out.raw_data());
        const int64_t n = out.numel();
        parallel_for((n + 1) / 2, 4, [&](int64_t b0, int64_t e0) {
          for (int64_t blk = b0; blk < e0; ++blk) {
            const Words w = philox4x32(seed, offset + static_cast<uint64_t>(blk));
            for (int j = 0; j < 2 && 2 * blk + j < n; ++j)
              po[2 * blk + j] = lo + static_cast<int64_t>(join64(w[2 * j], w[2 * j + 1]) % range);
          }
        });
        return;
      } else {
        return fill_blocks<T, 2>(out, seed, offset, 2, [&](double* v, const Words& w) {
          for (int j = 0; j < 2; ++j) v[j] = static_cast<double>(lo + static_cast<int64_t>(join64(w[2 * j], w[2 * j + 1]) % range));
        });
      }
    }
    case RandomDist::KeepMask:
      // Keep with probability 1 - a; kept elements hold the scale b (= 1 / (1 - p)).
      return fill_blocks<T, 4>(out, seed, offset, 2, [&](double* v, const Words& w) {
        for (int j = 0; j < 4; ++j) v[j] = static_cast<double>(w[j]) / kTwoPow32 < 1.0 - a ? b : 0.0;
      });
  }
}

void random(RandomDist dist, const Tensor& out, uint64_t seed, uint64_t offset, double a, double b) {
  visit_dtype(out.dtype(), "random", [&]<class T>() { random_typed<T>(dist, out, seed, offset, a, b); });
}
}  // namespace

void register_random(Registry& r) { r.random.set_all(DeviceType::CPU, random); }

}  // namespace minidl::kernels::cpu
