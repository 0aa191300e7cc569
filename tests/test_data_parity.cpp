// Data transforms against torchvision's semantics: Normalize is (x - mean) / std, RandomCrop pads
// with its fill (torchvision pads with 0 before Normalize, which is -mean/std after it), and
// RandomHorizontalFlip flips with probability p.
#include <catch2/catch.hpp>
#include <vector>

#include "data/transforms.h"
#include "framework/error.h"

using namespace minidl;
using namespace minidl::data;
using Catch::Contains;

namespace {
// [b, c, h, w] with values k / 64 (k = element number): all exact in f32, all in [0, 1).
Tensor raw_batch(int64_t b, int64_t c, int64_t h, int64_t w) {
  std::vector<float> v(static_cast<size_t>(b * c * h * w));
  for (size_t k = 0; k < v.size(); ++k) v[k] = static_cast<float>(k % 64) / 64.0f;
  return from_vector(v, {b, c, h, w});
}
TransformContext ctx_for(const std::vector<int64_t>& idx, uint64_t seed = 5) {
  TransformContext ctx;
  ctx.seed = seed;
  ctx.indices = &idx;
  return ctx;
}
}  // namespace

TEST_CASE("Normalize computes (x - mean) / std per channel", "[data][transforms][parity]") {
  Tensor x = from_vector<float>({1.0f, 0.5f, 0.0f, 0.25f}, {1, 2, 1, 2});
  const std::vector<int64_t> idx{0};
  Tensor y = Normalize({0.5f, 0.25f}, {0.25f, 0.5f}).apply(x, ctx_for(idx));
  CHECK(y.to_vector<float>() == std::vector<float>{2.0f, 0.0f, -0.5f, 0.0f});
}

TEST_CASE("RandomCrop pads with its fill value, one or one per channel", "[data][transforms][parity]") {
  const std::vector<int64_t> idx{0};
  Tensor one = full({1, 1, 1, 1}, 1.0);
  CHECK(RandomCrop(3, 1, {-2.0f}).apply(one, ctx_for(idx)).to_vector<float>() ==
        std::vector<float>{-2, -2, -2, -2, 1, -2, -2, -2, -2});
  CHECK(RandomCrop(3, 1).apply(one, ctx_for(idx)).to_vector<float>() ==
        std::vector<float>{0, 0, 0, 0, 1, 0, 0, 0, 0});
  Tensor two = full({1, 2, 1, 1}, 1.0);
  CHECK(RandomCrop(3, 1, {5.0f, 7.0f}).apply(two, ctx_for(idx)).to_vector<float>() ==
        std::vector<float>{5, 5, 5, 5, 1, 5, 5, 5, 5, 7, 7, 7, 7, 1, 7, 7, 7, 7});
  CHECK_THROWS_WITH(RandomCrop(3, 1, {1.0f, 2.0f, 3.0f}).apply(two, ctx_for(idx)),
                    Contains("RandomCrop") && Contains("3 fill values") && Contains("2 channels"));
  CHECK_THROWS_WITH(RandomCrop(3, 1, std::vector<float>{}), Contains("RandomCrop") && Contains("fill"));
  CHECK(RandomCrop(3, 1, {5.0f, 7.0f}).repr() == "RandomCrop(size=3, padding=1, fill=[5, 7])");
  CHECK(RandomCrop(3, 1).repr() == "RandomCrop(size=3, padding=1)");
}

TEST_CASE("RandomCrop on normalized data with normalized_fill equals torchvision's crop-then-normalize", "[data][transforms][parity]") {
  const std::vector<float> mean{0.25f, 0.5f, 0.75f}, stdev{0.5f, 0.25f, 0.125f};
  const int64_t b = 16;
  std::vector<int64_t> idx(b);
  for (int64_t i = 0; i < b; ++i) idx[i] = 100 + i;
  const TransformContext ctx = ctx_for(idx, 11);
  Normalize norm(mean, stdev);
  // torchvision: ToTensor -> RandomCrop(4, padding=2) -> Normalize.
  Tensor reference = norm.apply(RandomCrop(4, 2).apply(raw_batch(b, 3, 4, 4), ctx), ctx);
  // minidl's datasets normalize first: the crop must pad with what 0 becomes.
  CHECK(normalized_fill(mean, stdev) == std::vector<float>{-0.5f, -2.0f, -6.0f});
  Tensor ours = RandomCrop(4, 2, normalized_fill(mean, stdev)).apply(norm.apply(raw_batch(b, 3, 4, 4), ctx), ctx);
  CHECK(ours.to_vector<float>() == reference.to_vector<float>());
  // Padding the normalized batch with 0 differs wherever padding shows.
  Tensor zero_padded = RandomCrop(4, 2).apply(norm.apply(raw_batch(b, 3, 4, 4), ctx), ctx);
  CHECK(zero_padded.to_vector<float>() != reference.to_vector<float>());
  CHECK_THROWS_WITH(normalized_fill({0.5f}, {0.0f}), Contains("normalized_fill") && Contains("std"));
}

TEST_CASE("RandomHorizontalFlip with p 1 always and p 0 never flips", "[data][transforms][parity]") {
  const int64_t b = 32;
  std::vector<int64_t> idx(b);
  for (int64_t i = 0; i < b; ++i) idx[i] = i;
  Tensor x = raw_batch(b, 1, 1, 3);
  std::vector<float> mirrored = x.to_vector<float>();
  for (int64_t i = 0; i < b; ++i) std::swap(mirrored[3 * i], mirrored[3 * i + 2]);
  CHECK(RandomHorizontalFlip(1.0).apply(x.clone(), ctx_for(idx)).to_vector<float>() == mirrored);
  CHECK(RandomHorizontalFlip(0.0).apply(x.clone(), ctx_for(idx)).to_vector<float>() == x.to_vector<float>());
  // p = 0.5: some rows flip and some do not.
  auto half = RandomHorizontalFlip(0.5).apply(x.clone(), ctx_for(idx)).to_vector<float>();
  int flipped = 0;
  for (int64_t i = 0; i < b; ++i) flipped += half[3 * i] == mirrored[3 * i] ? 1 : 0;
  CHECK(flipped > 0);
  CHECK(flipped < b);
}
