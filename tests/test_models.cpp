// The model zoo and the CNN layers as modules: output shapes, parameter counts, batch-norm
// running statistics, autocast output dtypes, and a training step that lowers the loss.
#include <catch2/catch.hpp>

#include <algorithm>

#include "minidl.h"

using namespace minidl;

namespace {
int64_t count_params(const nn::Module& m) {
  int64_t n = 0;
  for (const Tensor& p : m.parameters()) n += p.numel();
  return n;
}
}  // namespace

TEST_CASE("zoo models produce class scores of the right shape", "[models]") {
  manual_seed(0);
  CHECK(nn::models::make_model("mlp")->forward(zeros({2, 1, 28, 28})).shape() == Shape{2, 10});
  CHECK(nn::models::make_model("lenet")->forward(zeros({2, 1, 28, 28})).shape() == Shape{2, 10});
  CHECK(nn::models::make_model("cnn")->forward(zeros({2, 3, 32, 32})).shape() == Shape{2, 10});
  CHECK(nn::models::make_model("resnet20")->forward(zeros({2, 3, 32, 32})).shape() == Shape{2, 10});
  CHECK(nn::models::make_model("vit")->forward(zeros({2, 1, 28, 28})).shape() == Shape{2, 10});
  CHECK_THROWS_WITH(nn::models::make_model("vgg99"), Catch::Contains("unknown model 'vgg99'") && Catch::Contains("resnet20"));
}

TEST_CASE("parameter counts match the architectures", "[models]") {
  // LeNet-5: 156 + 2,416 + 48,120 + 10,164 + 850
  CHECK(count_params(*nn::models::make_model("lenet")) == 61706);
  CHECK(count_params(*nn::models::make_model("mlp")) == 269322);
  // ResNet-20 with projection shortcuts: ~0.27M parameters
  const int64_t r = count_params(*nn::models::make_model("resnet20"));
  CHECK(r > 260000);
  CHECK(r < 290000);
  // ViT: patch conv 3,200 + class token 64 + positions 17*64 + 3 layers * 33,472 (in_proj 12,480,
  // out_proj 4,160, linear1 8,320, linear2 8,256, two norms 256) + norm 128 + head 650.
  auto vit = nn::models::make_model("vit");
  CHECK(count_params(*vit) == 105546);
  const auto names = vit->state_dict().keys();
  CHECK(std::find(names.begin(), names.end(), "encoder.2.self_attn.out_proj.weight") != names.end());
  CHECK(std::find(names.begin(), names.end(), "encoder.0.norm1.bias") != names.end());
}

TEST_CASE("Conv2d module matches conv2d with PyTorch's init bounds", "[models][conv]") {
  manual_seed(1);
  nn::Conv2d conv(nn::Conv2dOptions(3, 4, 3).padding(1));
  CHECK(conv.weight.shape() == Shape{4, 3, 3, 3});
  const double bound = 1.0 / std::sqrt(27.0);  // kaiming_uniform(a=sqrt(5)) gives 1/sqrt(fan_in)
  CHECK(max(abs(conv.weight)).item() <= bound);
  CHECK(max(abs(conv.bias)).item() <= bound);
  Tensor x = randn({2, 3, 5, 5});
  CHECK(max(abs(sub(conv.forward(x), conv2d(x, conv.weight, conv.bias, {1, 1}, {1, 1})))).item() == 0.0);
  CHECK(conv.describe() == "Conv2d(3 -> 4, 3x3, pad 1, bias)");
}

TEST_CASE("BatchNorm2d updates running statistics in training mode only", "[models][bn]") {
  nn::BatchNorm2d bn(2);
  Tensor x = add(mul(randn({8, 2, 3, 3}), 2.0), 5.0);
  bn.forward(x);
  auto rm = bn.running_mean.to_vector<float>();
  CHECK(rm[0] == Approx(0.5).margin(0.2));  // 0.9 * 0 + 0.1 * ~5
  CHECK(bn.num_batches_tracked.item() == 1);
  bn.eval();
  bn.forward(x);
  CHECK(bn.running_mean.to_vector<float>() == rm);
  CHECK(bn.num_batches_tracked.item() == 1);
  CHECK_THROWS_WITH(bn.forward(zeros({2, 2})), Catch::Contains("BatchNorm2d") && Catch::Contains("4D"));
}

TEST_CASE("CNNs under bf16 autocast compute in bf16 and return bf16 scores", "[models][amp]") {
  manual_seed(2);
  auto lenet = nn::models::make_model("lenet");
  auto cnn = nn::models::make_model("cnn");
  amp::autocast scope(DeviceType::CPU);
  CHECK(lenet->forward(zeros({2, 1, 28, 28})).dtype() == DType::BF16);
  CHECK(cnn->forward(zeros({2, 3, 32, 32})).dtype() == DType::BF16);
  CHECK(nn::models::make_model("vit")->forward(zeros({2, 1, 28, 28})).dtype() == DType::BF16);
  for (const Tensor& p : cnn->parameters()) CHECK(p.dtype() == DType::F32);  // parameters stay f32
}

TEST_CASE("a few SGD steps lower the loss of each CNN and the ViT on a fixed batch", "[models][training]") {
  for (const char* name : {"lenet", "cnn", "resnet20", "vit"}) {
    INFO(name);
    manual_seed(3);
    auto model = nn::models::make_model(name);
    const bool mnist = std::string(name) == "lenet" || std::string(name) == "vit";
    Tensor x = randn(mnist ? Shape{8, 1, 28, 28} : Shape{8, 3, 32, 32});
    Tensor y = randint(0, 10, {8});
    optim::SGD opt(model->parameters(), optim::SGDOptions(0.05).momentum(0.9));
    double first = 0, last = 0;
    for (int step = 0; step < 8; ++step) {
      opt.zero_grad();
      Tensor loss = cross_entropy(model->forward(x), y);
      loss.backward();
      opt.step();
      if (step == 0) first = loss.item();
      last = loss.item();
    }
    CHECK(last < first);
  }
}
