// The data layer's own small deterministic random numbers (splitmix64): the same values on every
// platform, compiler and thread count, derived from (seed, epoch, sample index, stream). Shuffles and
// random transforms use it so a run's data order and augmentation are reproducible and resumable.
#pragma once
#include <cstdint>

namespace minidl::data {

inline uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// A well-mixed 64-bit key from up to four values (order matters).
inline uint64_t mix_key(uint64_t a, uint64_t b, uint64_t c = 0, uint64_t d = 0) {
  uint64_t h = splitmix64(a);
  h = splitmix64(h ^ b);
  h = splitmix64(h ^ c);
  return splitmix64(h ^ d);
}

class DataRng {
 public:
  explicit DataRng(uint64_t key) : state_(key) {}
  uint64_t next() {  // the splitmix64 sequence
    const uint64_t r = splitmix64(state_);
    state_ += 0x9E3779B97F4A7C15ull;
    return r;
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  // Unbiased integer in [0, n), n > 0 (rejection sampling).
  uint64_t below(uint64_t n) {
    const uint64_t limit = ~uint64_t{0} - (~uint64_t{0} % n);
    uint64_t x;
    do x = next(); while (x >= limit);
    return x % n;
  }

 private:
  uint64_t state_;
};

}  // namespace minidl::data
