// Random number generation: a counter-based Philox4x32-10 generator (Salmon et al., SC'11, the
// generator cuRAND and PyTorch's CUDA backend use). Its state is just (seed, offset): an op asks
// for a range of 128-bit blocks with reserve(), and block i of that range is philox(seed, offset+i),
// so any thread (or device) can compute any element on its own. Results therefore depend only on
// the seed and the order of ops, never on the thread count.
#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <vector>

namespace minidl {

// One Philox4x32-10 block: 4 independent 32-bit words for key `key` and 128-bit counter
// (counter, subsequence).
inline std::array<uint32_t, 4> philox4x32(uint64_t key, uint64_t counter, uint64_t subsequence = 0) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u, kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  uint32_t c0 = static_cast<uint32_t>(counter), c1 = static_cast<uint32_t>(counter >> 32);
  uint32_t c2 = static_cast<uint32_t>(subsequence), c3 = static_cast<uint32_t>(subsequence >> 32);
  uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(kM0) * c0, p1 = static_cast<uint64_t>(kM1) * c2;
    const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ k0;
    const uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1;
    c1 = static_cast<uint32_t>(p1);
    c3 = static_cast<uint32_t>(p0);
    c0 = n0;
    c2 = n2;
    k0 += kW0;
    k1 += kW1;
  }
  return {c0, c1, c2, c3};
}

// Uniform floats from raw bits. Both map into [0, 1) exactly (no rounding up to 1).
inline float bits_to_unit_float(uint32_t x) { return static_cast<float>(x >> 8) * 0x1.0p-24f; }
inline double bits_to_unit_double(uint64_t x) { return static_cast<double>(x >> 11) * 0x1.0p-53; }

class Generator {
 public:
  // PyTorch's default seed, so an unseeded program is still reproducible run to run.
  static constexpr uint64_t kDefaultSeed = 67280421310721ULL;

  explicit Generator(uint64_t seed = kDefaultSeed) : seed_(seed), offset_(0) {}
  Generator(const Generator& o) : seed_(o.seed_), offset_(o.offset_.load()) {}
  Generator& operator=(const Generator& o) {
    seed_ = o.seed_;
    offset_.store(o.offset_.load());
    return *this;
  }

  // Restarts the stream: same seed, same numbers (offset back to 0).
  void manual_seed(uint64_t seed);
  uint64_t initial_seed() const { return seed_; }
  uint64_t offset() const { return offset_.load(); }

  // Checkpoint form: {seed, offset}. set_state validates the size.
  std::vector<uint64_t> state() const;
  void set_state(const std::vector<uint64_t>& state);

  // Claims n consecutive blocks and returns the first block's counter (thread-safe).
  uint64_t reserve(uint64_t n_blocks) { return offset_.fetch_add(n_blocks, std::memory_order_relaxed); }
  std::array<uint32_t, 4> block(uint64_t counter) const { return philox4x32(seed_, counter); }

  // Serial draws (one block each): for shuffles, sampling indices and other host-side uses.
  uint64_t next_u64();
  double uniform();  // [0, 1), 53 random bits

 private:
  uint64_t seed_;
  std::atomic<uint64_t> offset_;
};

// The process-wide generator that random ops use when none is passed.
Generator& default_generator();
// Seeds the default generator (torch.manual_seed).
void manual_seed(uint64_t seed);

}  // namespace minidl
