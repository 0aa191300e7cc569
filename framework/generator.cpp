// Philox generator state handling and the default generator.
#include "framework/generator.h"

#include "framework/error.h"

namespace minidl {

void Generator::manual_seed(uint64_t seed) {
  seed_ = seed;
  offset_.store(0);
}

std::vector<uint64_t> Generator::state() const { return {seed_, offset_.load()}; }

void Generator::set_state(const std::vector<uint64_t>& state) {
  MINIDL_CHECK(state.size() == 2, "Generator::set_state", "expected a state of 2 words {seed, offset}, got ",
               state.size());
  seed_ = state[0];
  offset_.store(state[1]);
}

uint64_t Generator::next_u64() {
  const auto b = block(reserve(1));
  return (static_cast<uint64_t>(b[1]) << 32) | b[0];
}

double Generator::uniform() { return bits_to_unit_double(next_u64()); }

Generator& default_generator() {
  static Generator g;
  return g;
}

void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }

}  // namespace minidl
