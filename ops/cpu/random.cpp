// CPU random fills from the Philox4x32-10 stream: uniform, normal (Box-Muller), integers and
// dropout keep-masks. Element k depends only on its own block (offset + k/4 for 32-bit draws,
// offset + k/2 for 64-bit draws), so blocks are filled in parallel and the result is the same for
// any thread count. Blocks are generated kLanes at a time in structure-of-arrays form so the
// compiler vectorizes the Philox rounds (vpmuludq), and the f32 transforms use Eigen's packet
// log/sin/cos.
#include <cmath>
#include <cstring>
#include <numbers>

#include <Eigen/Core>

#include "framework/generator.h"
#include "ops/cpu/loops.h"
#include "ops/cpu/scalar.h"
#include "ops/kernels.h"

namespace minidl::kernels::cpu {

namespace {
constexpr int kLanes = 16;  // Philox blocks per batch
using Words = uint32_t[4][kLanes];  // words[j][l]: word j of block first + l

// The same function as philox4x32(key, first + l) for each lane l (see framework/generator.h).
void philox_batch(uint64_t key, uint64_t first, Words& out) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u, kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  alignas(64) uint32_t c0[kLanes], c1[kLanes], c2[kLanes], c3[kLanes];
  for (int l = 0; l < kLanes; ++l) {
    const uint64_t c = first + static_cast<uint64_t>(l);
    c0[l] = static_cast<uint32_t>(c);
    c1[l] = static_cast<uint32_t>(c >> 32);
    c2[l] = 0;
    c3[l] = 0;
  }
  uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
  for (int round = 0; round < 10; ++round) {
    for (int l = 0; l < kLanes; ++l) {
      const uint64_t p0 = static_cast<uint64_t>(kM0) * c0[l], p1 = static_cast<uint64_t>(kM1) * c2[l];
      const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1[l] ^ k0;
      const uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3[l] ^ k1;
      c1[l] = static_cast<uint32_t>(p1);
      c3[l] = static_cast<uint32_t>(p0);
      c0[l] = n0;
      c2[l] = n2;
    }
    k0 += kW0;
    k1 += kW1;
  }
  std::memcpy(out[0], c0, sizeof(c0));
  std::memcpy(out[1], c1, sizeof(c1));
  std::memcpy(out[2], c2, sizeof(c2));
  std::memcpy(out[3], c3, sizeof(c3));
}

// Values are produced in V (double for f64 outputs, else float) and stored as T.
template <class T>
using value_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <class T>
void store_values(T* dst, const value_t<T>* src, int64_t n) {
  if constexpr (std::is_same_v<T, value_t<T>>) std::memcpy(dst, src, n * sizeof(T));
  else if constexpr (is_low_precision_v<T>) store_block(src, dst, n);
  else for (int64_t i = 0; i < n; ++i) dst[i] = cast_scalar<T>(src[i]);
}

// Runs make(words, vals) for each batch of kLanes blocks, each block producing PerBlock elements
// (vals in element order: block l's elements at vals[l * PerBlock ...]), and stores them into out.
template <class T, int PerBlock, class Make>
void fill(const Tensor& out, uint64_t seed, uint64_t offset, int64_t cost, Make make) {
  using V = value_t<T>;
  T* po = static_cast<T*>(out.raw_data());
  const int64_t n = out.numel();
  constexpr int64_t kPerBatch = int64_t{kLanes} * PerBlock;
  const int64_t batches = (n + kPerBatch - 1) / kPerBatch;
  parallel_for(batches, cost * kPerBatch, [&](int64_t b, int64_t e) {
    alignas(64) Words w;
    alignas(64) V vals[kPerBatch];
    for (int64_t batch = b; batch < e; ++batch) {
      philox_batch(seed, offset + static_cast<uint64_t>(batch * kLanes), w);
      make(w, vals);
      const int64_t base = batch * kPerBatch;
      store_values(po + base, vals, std::min(kPerBatch, n - base));
    }
  });
}

inline uint64_t join64(uint32_t lo, uint32_t hi) { return (static_cast<uint64_t>(hi) << 32) | lo; }

template <class T>
void uniform(const Tensor& out, uint64_t seed, uint64_t offset, double a, double b) {
  if constexpr (std::is_same_v<T, double>) {
    fill<T, 2>(out, seed, offset, 2, [&](const Words& w, double* v) {
      for (int l = 0; l < kLanes; ++l)
        for (int j = 0; j < 2; ++j) v[2 * l + j] = a + (b - a) * bits_to_unit_double(join64(w[2 * j][l], w[2 * j + 1][l]));
    });
  } else {
    // f16/bf16 take only as many random bits as they hold (as PyTorch), so rounding never reaches 1.
    constexpr int bits = std::is_same_v<T, half> ? 11 : (std::is_same_v<T, bfloat16> ? 8 : 24);
    const float lo = static_cast<float>(a), span = static_cast<float>(b - a);
    const float unit = std::ldexp(1.0f, -bits);
    fill<T, 4>(out, seed, offset, 1, [&](const Words& w, float* v) {
      for (int j = 0; j < 4; ++j)
        for (int l = 0; l < kLanes; ++l) v[4 * l + j] = lo + span * (static_cast<float>(w[j][l] >> (32 - bits)) * unit);
    });
  }
}

template <class T>
void normal(const Tensor& out, uint64_t seed, uint64_t offset, double mean, double std) {
  // Box-Muller: u1 in (0, 1] (finite log), u2 in [0, 1); one pair gives two normals.
  if constexpr (std::is_same_v<T, double>) {
    fill<T, 2>(out, seed, offset, 40, [&](const Words& w, double* v) {
      for (int l = 0; l < kLanes; ++l) {
        const double u1 = bits_to_unit_double(join64(w[0][l], w[1][l])) + 0x1.0p-53;
        const double u2 = bits_to_unit_double(join64(w[2][l], w[3][l]));
        const double r = std::sqrt(-2.0 * std::log(u1));
        const double t = 2.0 * std::numbers::pi * u2;
        v[2 * l] = mean + std * r * std::cos(t);
        v[2 * l + 1] = mean + std * r * std::sin(t);
      }
    });
  } else {
    using A = Eigen::Array<float, 2 * kLanes, 1>;
    const float m = static_cast<float>(mean), s = static_cast<float>(std);
    fill<T, 4>(out, seed, offset, 8, [&](const Words& w, float* v) {
      A u1, u2;  // pair p = 2l + h uses words (2h, 2h + 1) of block l
      for (int l = 0; l < kLanes; ++l)
        for (int h = 0; h < 2; ++h) {
          u1[2 * l + h] = (static_cast<float>(w[2 * h][l] >> 8) + 1.0f) * 0x1.0p-24f;
          u2[2 * l + h] = static_cast<float>(w[2 * h + 1][l] >> 8) * 0x1.0p-24f;
        }
      const A r = (u1.log() * -2.0f).sqrt() * s;
      const A t = u2 * static_cast<float>(2.0 * std::numbers::pi);
      const A z0 = r * t.cos() + m, z1 = r * t.sin() + m;
      for (int p = 0; p < 2 * kLanes; ++p) {
        v[2 * p] = z0[p];
        v[2 * p + 1] = z1[p];
      }
    });
  }
}

template <class T>
void integers(const Tensor& out, uint64_t seed, uint64_t offset, int64_t lo, uint64_t range) {
  // As PyTorch: 32-bit draws modulo the range when it fits, 64-bit draws otherwise. Values are
  // written directly (a float or double carrier would round integers beyond 2^24 / 2^53).
  T* po = static_cast<T*>(out.raw_data());
  const int64_t n = out.numel();
  const bool wide = range > (uint64_t{1} << 32);
  const int per_block = wide ? 2 : 4;
  const int64_t per_batch = int64_t{kLanes} * per_block;
  parallel_for((n + per_batch - 1) / per_batch, 2 * per_batch, [&](int64_t b, int64_t e) {
    alignas(64) Words w;
    for (int64_t batch = b; batch < e; ++batch) {
      philox_batch(seed, offset + static_cast<uint64_t>(batch * kLanes), w);
      for (int l = 0; l < kLanes; ++l)
        for (int j = 0; j < per_block; ++j) {
          const int64_t k = batch * per_batch + l * per_block + j;
          if (k >= n) continue;
          const uint64_t r = wide ? join64(w[2 * j][l], w[2 * j + 1][l]) % range : w[j][l] % range;
          po[k] = cast_scalar<T>(lo + static_cast<int64_t>(r));
        }
    }
  });
}

template <class T>
void keep_mask(const Tensor& out, uint64_t seed, uint64_t offset, double p, double scale) {
  // Keep when the 32-bit draw u satisfies u / 2^32 < 1 - p, i.e. u < ceil((1 - p) 2^32).
  using V = value_t<T>;
  const uint64_t threshold = static_cast<uint64_t>(std::ceil((1.0 - p) * 4294967296.0));
  const V kept = static_cast<V>(scale);
  fill<T, 4>(out, seed, offset, 1, [&](const Words& w, V* v) {
    for (int j = 0; j < 4; ++j)
      for (int l = 0; l < kLanes; ++l) v[4 * l + j] = static_cast<uint64_t>(w[j][l]) < threshold ? kept : V(0);
  });
}

template <class T>
void random_typed(RandomDist dist, const Tensor& out, uint64_t seed, uint64_t offset, double a, double b) {
  switch (dist) {
    case RandomDist::Uniform: return uniform<T>(out, seed, offset, a, b);
    case RandomDist::Normal: return normal<T>(out, seed, offset, a, b);
    case RandomDist::Integer:
      return integers<T>(out, seed, offset, static_cast<int64_t>(a),
                         static_cast<uint64_t>(static_cast<int64_t>(b) - static_cast<int64_t>(a)));
    case RandomDist::KeepMask: return keep_mask<T>(out, seed, offset, a, b);
  }
}

void random(RandomDist dist, const Tensor& out, uint64_t seed, uint64_t offset, double a, double b) {
  visit_dtype(out.dtype(), "random", [&]<class T>() { random_typed<T>(dist, out, seed, offset, a, b); });
}
}  // namespace

void register_random(Registry& r) { r.random.set_all(DeviceType::CPU, random); }

}  // namespace minidl::kernels::cpu
