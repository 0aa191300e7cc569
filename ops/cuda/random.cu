// CUDA random fills from the Philox4x32-10 stream of framework/generator.h, with the CPU kernel's
// layout (ops/cpu/random.cpp): element k uses only block offset + k/4 (32-bit draws) or
// offset + k/2 (64-bit draws), and the same words of it, so a CUDA tensor holds the same numbers as
// a CPU tensor drawn with the same seed and offset: exactly for integers, keep masks and uniform
// f16/bf16/f64, and up to the rounding of the math library for normals (Box-Muller's log, sqrt,
// sin and cos) and f32 uniforms. One thread per Philox block.
#include <cmath>

#include "ops/cuda/common.cuh"

namespace minidl::kernels::cuda {

namespace {

struct Words {
  uint32_t w[4];
};

// philox4x32(key, counter) of framework/generator.h, on the device.
__device__ __forceinline__ Words philox(uint64_t key, uint64_t counter) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u, kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  uint32_t c0 = static_cast<uint32_t>(counter), c1 = static_cast<uint32_t>(counter >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
#pragma unroll
  for (int round = 0; round < 10; ++round) {
    const uint32_t hi0 = __umulhi(kM0, c0), lo0 = kM0 * c0;
    const uint32_t hi1 = __umulhi(kM1, c2), lo1 = kM1 * c2;
    const uint32_t n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
    c1 = lo1;
    c3 = lo0;
    c0 = n0;
    c2 = n2;
    k0 += kW0;
    k1 += kW1;
  }
  return {{c0, c1, c2, c3}};
}

__device__ __forceinline__ uint64_t join64(uint32_t lo, uint32_t hi) { return (static_cast<uint64_t>(hi) << 32) | lo; }
__device__ __forceinline__ double unit_double(uint64_t x) { return static_cast<double>(x >> 11) * 0x1.0p-53; }

// What the fill produces: the distribution's parameters, prepared on the host.
struct Params {
  RandomDist dist;
  double a, b;           // Uniform/Normal (f64), Integer lo, KeepMask p / scale
  float af, bf;          // the same, as f32 (Uniform: lo and span; Normal: mean and std)
  int bits;              // Uniform f32-path: random bits taken (24 for f32, 11 f16, 8 bf16)
  uint64_t range;        // Integer: hi - lo
  bool wide;             // Integer: 64-bit draws (range > 2^32)
  uint64_t threshold;    // KeepMask: keep when the draw is below it
};

// Elements per Philox block for T under p.
template <class T>
__host__ __device__ __forceinline__ int per_block(const Params& p) {
  if (p.dist == RandomDist::Integer) return p.wide ? 2 : 4;
  if (p.dist == RandomDist::KeepMask) return 4;
  return std::is_same_v<T, double> ? 2 : 4;
}

template <class T>
__device__ __forceinline__ T value(const Params& p, const Words& r, int j) {
  constexpr bool f64 = std::is_same_v<T, double>;
  switch (p.dist) {
    case RandomDist::Uniform:
      if constexpr (f64) {
        return p.a + (p.b - p.a) * unit_double(join64(r.w[2 * j], r.w[2 * j + 1]));
      } else {
        const float u = static_cast<float>(r.w[j] >> (32 - p.bits)) * ldexpf(1.0f, -p.bits);
        return convert<T>(__fadd_rn(p.af, __fmul_rn(p.bf, u)));  // no contraction into an FMA: the CPU rounds twice
      }
    case RandomDist::Normal:
      if constexpr (f64) {
        // Block k/2 gives the pair (cos, sin) for elements 2(k/2), 2(k/2) + 1.
        const double u1 = unit_double(join64(r.w[0], r.w[1])) + 0x1.0p-53;
        const double u2 = unit_double(join64(r.w[2], r.w[3]));
        const double rad = sqrt(-2.0 * log(u1)), t = 2.0 * M_PI * u2;
        return p.a + p.b * rad * (j == 0 ? cos(t) : sin(t));
      } else {
        // Words (2h, 2h + 1) give the pair h: elements 2h (cos) and 2h + 1 (sin) of the block.
        const int h = j / 2;
        const float u1 = (static_cast<float>(r.w[2 * h] >> 8) + 1.0f) * 0x1.0p-24f;
        const float u2 = static_cast<float>(r.w[2 * h + 1] >> 8) * 0x1.0p-24f;
        const float rad = sqrtf(logf(u1) * -2.0f) * p.bf;
        const float t = u2 * static_cast<float>(2.0 * M_PI);
        return convert<T>((j % 2 == 0 ? rad * cosf(t) : rad * sinf(t)) + p.af);
      }
    case RandomDist::Integer: {
      const uint64_t v = p.wide ? join64(r.w[2 * j], r.w[2 * j + 1]) % p.range : r.w[j] % p.range;
      return convert<T>(static_cast<int64_t>(p.a) + static_cast<int64_t>(v));
    }
    case RandomDist::KeepMask: {
      using V = std::conditional_t<f64, double, float>;
      return convert<T>(static_cast<uint64_t>(r.w[j]) < p.threshold ? static_cast<V>(p.b) : V(0));
    }
  }
  return T{};
}

template <class T>
__global__ void random_kernel(T* out, int64_t n, uint64_t seed, uint64_t offset, Params p) {
  const int per = per_block<T>(p);
  const int64_t blocks = (n + per - 1) / per;
  for (int64_t b = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; b < blocks; b += int64_t{gridDim.x} * blockDim.x) {
    const Words r = philox(seed, offset + static_cast<uint64_t>(b));
    for (int j = 0; j < per; ++j) {
      const int64_t k = b * per + j;
      if (k < n) out[k] = value<T>(p, r, j);
    }
  }
}

void random(RandomDist dist, const Tensor& out, uint64_t seed, uint64_t offset, double a, double b) {
  minidl::cuda::DeviceGuard guard(out.device());
  const int64_t n = out.numel();
  if (n == 0) return;
  visit(out.dtype(), "random", [&](auto tag) {
    using T = typename decltype(tag)::type;
    Params p{};
    p.dist = dist;
    p.a = a;
    p.b = b;
    p.af = static_cast<float>(a);
    p.bf = static_cast<float>(dist == RandomDist::Uniform ? b - a : b);
    p.bits = std::is_same_v<T, f16> ? 11 : (std::is_same_v<T, bf16> ? 8 : 24);
    if (dist == RandomDist::Integer) {
      p.range = static_cast<uint64_t>(static_cast<int64_t>(b) - static_cast<int64_t>(a));
      p.wide = p.range > (uint64_t{1} << 32);
    }
    if (dist == RandomDist::KeepMask) p.threshold = static_cast<uint64_t>(std::ceil((1.0 - a) * 4294967296.0));
    const int64_t blocks = (n + per_block<T>(p) - 1) / per_block<T>(p);
    random_kernel<T><<<grid_for(blocks, out.device().index), kThreads, 0, stream_of(out)>>>(static_cast<T*>(out.raw_data()),
                                                                                           n, seed, offset, p);
    MINIDL_CUDA_CHECK_LAUNCH("random");
  });
}
}  // namespace

void register_random(Registry& r) { r.random.set_all(DeviceType::CUDA, random); }

}  // namespace minidl::kernels::cuda
