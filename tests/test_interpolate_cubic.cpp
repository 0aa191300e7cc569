// interpolate's bicubic and trilinear modes against torch 1.13's values and input gradients
// (tests/torch_refs/interpolate_cubic.py): up, down, by size and by scale factor, with and without
// align_corners; f64 first- and second-order finite differences; bf16 within its rounding of the
// f64 result; nn::Upsample; errors.
#include <catch2/catch.hpp>

#include "minidl.h"
#include "gradcheck.h"
#include "interpolate_cubic_torch_values.h"
#include "sine_operands.h"

using namespace minidl;
using Catch::Contains;
using testing::sine_leaves;
using M = InterpolateMode;

namespace {
struct Case {
  std::string name;
  Shape shape;
  InterpolateOptions options;
};
std::vector<Case> cases() {
  return {
      {"bicubic_up", {1, 2, 3, 4}, InterpolateOptions().size({5, 7}).mode(M::Bicubic)},
      {"bicubic_up_aligned", {1, 2, 3, 4}, InterpolateOptions().size({5, 7}).mode(M::Bicubic).align_corners(true)},
      {"bicubic_down", {1, 2, 3, 4}, InterpolateOptions().size({2, 3}).mode(M::Bicubic)},
      {"bicubic_scale", {1, 2, 3, 4}, InterpolateOptions().scale_factor({1.7}).mode(M::Bicubic)},
      {"bicubic_one_dim", {1, 2, 3, 4}, InterpolateOptions().size({3, 6}).mode(M::Bicubic)},
      {"trilinear_up", {1, 2, 2, 3, 4}, InterpolateOptions().size({3, 4, 6}).mode(M::Trilinear)},
      {"trilinear_aligned", {1, 2, 2, 3, 4}, InterpolateOptions().size({4, 2, 5}).mode(M::Trilinear).align_corners(true)},
      {"trilinear_scale", {1, 2, 2, 3, 4}, InterpolateOptions().scale_factor({1.5, 0.7, 1.25}).mode(M::Trilinear)},
  };
}
}  // namespace

TEST_CASE("bicubic and trilinear interpolate match torch: values, shapes, gradients", "[interpolate][parity]") {
  for (const Case& c : cases()) {
    std::vector<Tensor> in = sine_leaves({c.shape});
    testing::check_printed_case(torch_interpolate_cubic_values(), c.name, interpolate(in[0], c.options), in);
  }
}

TEST_CASE("bicubic and trilinear: f64 finite differences, bf16 rounding, Upsample, errors", "[interpolate]") {
  for (const Case& c : cases()) {
    INFO(c.name);
    auto fn = [&c](const std::vector<Tensor>& x) { return interpolate(x[0], c.options); };
    std::vector<Tensor> in = sine_leaves({c.shape}, 3);
    CHECK(testing::check_gradients(fn, in, 1e-6, 1e-7) == "");
    CHECK(testing::check_second_order(fn, in, 1e-6, 1e-6) == "");
    // bf16 computes in f32 and rounds once: within the sum of |weights| (at most 1.25 per dim for
    // cubic) times bf16's eps of the f64 result.
    const Tensor x16 = cast(testing::sine_operand(3, c.shape), DType::BF16);
    const Tensor y16 = interpolate(x16, c.options), y64 = interpolate(cast(x16, DType::F64), c.options);
    CHECK(y16.dtype() == DType::BF16);
    CHECK(testing::max_abs_diff(y16, y64) <= 2.0 * traits(DType::BF16).eps * 1.6);
  }
  nn::Upsample up(InterpolateOptions().scale_factor({2.0}).mode(M::Bicubic).align_corners(true));
  CHECK(up.describe() == "Upsample(scale_factor=2.0, mode=bicubic)");
  CHECK(interpolate_mode_from_string("trilinear") == M::Trilinear);
  CHECK_THROWS_WITH(interpolate(ones({1, 2, 3}), InterpolateOptions().size({4}).mode(M::Bicubic)), Contains("bicubic mode needs 4D input"));
  CHECK_THROWS_WITH(interpolate(ones({1, 2, 3, 4}), InterpolateOptions().size({4, 4}).mode(M::Trilinear)),
                    Contains("trilinear mode needs 5D input"));
  CHECK_THROWS_WITH(interpolate(ones({1, 2, 3, 4}), InterpolateOptions().size({4, 4}).align_corners(true)),
                    Contains("interpolating modes: linear | bilinear | bicubic | trilinear"));
}
