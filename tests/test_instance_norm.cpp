// InstanceNorm1d/2d (ops/instance_norm.cpp, nn/instance_norm.h) and PixelShuffle/PixelUnshuffle
// (ops/rearrange.cpp, nn/upsample.h) against torch 1.13: values, gradients, running statistics and
// evaluation, unbatched inputs, module printing, errors (the literals are what torch printed for the
// inputs of tests/sine_operands.h), and f64 gradient checks.
#include <catch2/catch.hpp>

#include <vector>

#include "gradcheck.h"
#include "sine_operands.h"

using namespace minidl;
using testing::check_printed_values;
using Vec = std::vector<double>;

TEST_CASE("InstanceNorm2d with affine and running statistics matches torch.nn.InstanceNorm2d", "[norm][instance_norm]") {
  nn::InstanceNorm2d m(3, 1e-5, 0.1, true, true);
  m.to(DType::F64);
  {
    NoGradGuard no_grad;
    m.weight.copy_(from_vector<double>({1.5, -0.5, 2.0}));
    m.bias.copy_(from_vector<double>({0.1, 0.2, -0.3}));
  }
  Tensor x = testing::sine_operand(0, {2, 3, 2, 2}).requires_grad_();
  Tensor y = m.forward(x);
  check_printed_values(y, Vec{-2.0628814953657058, -0.4207658344837762, 0.9680502664485486, 1.9155970634009318, -0.296712329235808, -0.16623152095989896, 0.28035112051540556, 0.9825927296803018, 2.514099533401051, 0.47800070880585904, -1.3809494583979909, -2.8111507838089183, -1.041945315990247, -1.1857794483517008, 0.07059399679071438, 2.5571307675512402, 0.8877673301803136, 0.41207144532606355, -0.05360471329816864, -0.44623406220820855, 0.004892470259599394, 1.807820948353919, 0.559216034647215, -3.571929453260731});
  sum(mul(y, testing::cosine_weights(y.shape()))).backward();
  check_printed_values(x.grad(), Vec{-0.10983304407936781, 0.13481342911787259, 0.12893568229055355, -0.15391606732905902, -0.1745466489661655, 0.11257961841189082, 0.13345463512182118, -0.07148760456754663, -0.029361064934841946, 0.02501136132271011, 0.05230504304715301, -0.04795533943502074, 0.7692115046927068, -0.3673954507214487, -0.5596891671672195, 0.15787311319596023, -0.028430255230825038, 0.0294723894273363, 0.03221963438178238, -0.03326176857829382, -6.223644882609753, 1.2712273357633745, 3.7244831335885205, 1.2279344132578545});
  check_printed_values(m.weight.grad(), Vec{-0.4893576212246393, 1.2876876538500013, 0.2231215400239357});
  check_printed_values(m.bias.grad(), Vec{-0.010003069132076714, -1.7786204909767096, -2.3643230488810607});
  check_printed_values(m.running_mean, Vec{-0.01724841191104564, 0.050868072025450364, 0.026472993358875808});
  check_printed_values(m.running_var, Vec{0.9084904893094315, 0.9125404841114928, 0.9092037523279346});
  CHECK(m.num_batches_tracked.item_int() == 0);  // as PyTorch's: instance norm does not count
  m.eval();
  check_printed_values(m.forward(x), Vec{0.20579768433182183, 0.7688468176899239, 1.2450445184071506, 1.5699396616358257, -0.2963491093655765, -0.268677573424005, -0.17396918084312124, -0.025042268261593226, -0.08030994808617213, -0.8508565824274684, -1.5543626094651795, -2.0956117887357157, -1.4078245365603712, -1.4294663032665558, -1.2404281344452004, -0.8662954594281366, 0.3878823373043873, 0.19690347817754358, 0.009947264495191, -0.14768265727201, 1.5731093640405673, 1.740738604642746, 1.6246482017011745, 1.2405504466492976});
  CHECK(m.describe() == "InstanceNorm2d(3, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)");
  CHECK(m.clone_structure()->describe() == m.describe());
  CHECK(m.state_dict().contains("running_mean"));
}

TEST_CASE("InstanceNorm1d defaults: no affine, no running statistics, unbatched input", "[norm][instance_norm]") {
  nn::InstanceNorm1d m(3);
  CHECK(m.parameters().empty());
  CHECK(m.describe() == "InstanceNorm1d(3, eps=1e-05, momentum=0.1, affine=False, track_running_stats=False)");
  check_printed_values(m.forward(testing::sine_operand(1, {3, 5})), Vec{-1.661702453294495, -0.5626410558928748, 0.32368753224211355, 0.8773228946617695, 1.0233330822834863, 1.2736223557629762, 0.7997846216212622, 0.11503432035005445, -0.6879508070824657, -1.5004904906518275, 1.7144629386474661, -0.1573460350573036, -1.060968823107208, -0.8741043202258232, 0.37795623974286885});
  m.eval();  // without running statistics, evaluation normalizes with the input's own
  check_printed_values(m.forward(testing::sine_operand(1, {3, 5})), Vec{-1.661702453294495, -0.5626410558928748, 0.32368753224211355, 0.8773228946617695, 1.0233330822834863, 1.2736223557629762, 0.7997846216212622, 0.11503432035005445, -0.6879508070824657, -1.5004904906518275, 1.7144629386474661, -0.1573460350573036, -1.060968823107208, -0.8741043202258232, 0.37795623974286885});
  CHECK_THROWS_WITH(m.forward(ones({2, 4, 5})), Catch::Contains("to match num_features (3)"));
  CHECK_THROWS_WITH(nn::InstanceNorm2d(3).forward(ones({2, 3, 1, 1})), Catch::Contains("Expected more than 1 spatial element when training"));
  CHECK_THROWS_WITH(nn::InstanceNorm2d(3).forward(ones({3, 2})), Catch::Contains("expected 3D (unbatched) or 4D (batched) input"));
}

TEST_CASE("instance_norm: f64 gradient checks, first and second order", "[norm][instance_norm][gradcheck]") {
  const std::vector<Tensor> in = {testing::sine_operand(0, {2, 3, 4}).requires_grad_(), testing::sine_operand(1, {3}).requires_grad_(),
                                  testing::sine_operand(2, {3}).requires_grad_()};
  auto fn = [](const std::vector<Tensor>& t) {
    Tensor y = instance_norm(t[0], Tensor(), Tensor(), t[1], t[2]);
    return mul(y, y);
  };
  CHECK(testing::check_gradients(fn, in, 1e-6, 1e-6) == "");
  CHECK(testing::check_second_order(fn, in, 1e-6, 1e-5) == "");
}

TEST_CASE("pixel_shuffle and pixel_unshuffle move channels to space and back as torch's", "[rearrange][pixel_shuffle]") {
  CHECK(pixel_shuffle(arange(8, DType::F32).reshape({1, 8, 1, 1}), 2).to_vector<double>() == Vec{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(pixel_shuffle(arange(8, DType::F32).reshape({1, 8, 1, 1}), 2).shape() == Shape{1, 2, 2, 2});
  const Tensor img = arange(16, DType::F32).reshape({1, 1, 4, 4});
  CHECK(pixel_unshuffle(img, 2).to_vector<double>() == Vec{0, 2, 8, 10, 1, 3, 9, 11, 4, 6, 12, 14, 5, 7, 13, 15});
  CHECK(pixel_shuffle(pixel_unshuffle(img, 2), 2).to_vector<double>() == img.to_vector<double>());
  const Tensor batched = testing::sine_operand(0, {2, 3, 8, 2, 3});  // extra leading dims
  CHECK(pixel_unshuffle(pixel_shuffle(batched, 2), 2).to_vector<double>() == batched.to_vector<double>());
  CHECK_THROWS_WITH(pixel_shuffle(ones({1, 5, 2, 2}), 2),
                    Catch::Contains("input.size(-3)=5 is not divisible by 4"));
  CHECK_THROWS_WITH(pixel_unshuffle(ones({1, 1, 3, 4}), 2), Catch::Contains("input.size(-2)=3 is not divisible by 2"));
  CHECK_THROWS_WITH(pixel_shuffle(ones({5, 2}), 2), Catch::Contains("expects input to have at least 3 dimensions"));
  nn::PixelShuffle shuffle(2);
  CHECK(shuffle.describe() == "PixelShuffle(upscale_factor=2)");
  CHECK(nn::PixelUnshuffle(3).describe() == "PixelUnshuffle(downscale_factor=3)");
  const std::vector<Tensor> in = {testing::sine_operand(0, {1, 4, 2, 3}).requires_grad_()};
  auto fn = [](const std::vector<Tensor>& t) {
    Tensor y = pixel_shuffle(t[0], 2);
    return mul(y, testing::cosine_weights(y.shape()));
  };
  CHECK(testing::check_gradients(fn, in, 1e-6, 1e-6) == "");
}
