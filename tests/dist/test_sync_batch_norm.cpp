// Batch statistics across 2 MPI ranks: each rank holds half of a global batch; a converted
// BatchNorm gives every rank its rows of what one BatchNorm computes on the whole batch (output,
// input gradient, running statistics; the weight gradients summed over ranks), in f64 and under
// bf16 autocast; and DDP with synced batch norm trains a small CNN as one process on the whole
// batch. all_reduce_sum's gradient is the sum of the ranks' gradients.
#include <catch2/catch.hpp>

#include "minidl.h"

using namespace minidl;

namespace {

// The global batch and the output weights of the loss, the same on every rank.
struct GlobalBatch {
  Tensor x, out_weights;
  GlobalBatch(DType dtype, const Shape& shape, uint64_t seed) {
    Generator gen(seed);
    x = add(mul(randn(shape, dtype, &gen), 2.0), 0.5);
    out_weights = randn(shape, dtype, &gen);
  }
  Tensor rows(const Tensor& t, int rank, int ranks) const {
    const int64_t n = t.size(0) / ranks;
    return t.narrow(0, rank * n, n);
  }
};

std::shared_ptr<nn::BatchNorm2d> make_bn(DType dtype, std::optional<double> momentum = 0.1) {
  auto bn = std::make_shared<nn::BatchNorm2d>(3, 1e-5, momentum);
  bn->to(dtype);
  NoGradGuard ng;
  bn->weight.copy_(from_vector<double>({0.5, 1.5, -1.0}));
  bn->bias.copy_(from_vector<double>({0.1, -0.2, 0.3}));
  return bn;
}

double max_diff(const Tensor& a, const Tensor& b) { return max(abs(sub(a.to(DType::F64), b.to(DType::F64)))).item(); }

}  // namespace

TEST_CASE("all_reduce_sum: the sum over ranks forward, and the sum of the ranks' gradients backward", "[dist][sync_bn]") {
  auto g = dist::default_group();
  const double r = g->rank();
  Tensor x = from_vector<double>({1.0 + r, 2.0 * (r + 1)}).requires_grad_();
  Tensor y = dist::all_reduce_sum(x, g);
  CHECK(y.to_vector<double>() == std::vector<double>{3.0, 6.0});
  // Rank r's loss weighs the sum by (r + 1): d(sum of losses)/dx = 1 + 2 on both elements.
  sum(mul(y, r + 1)).backward();
  CHECK(x.grad().to_vector<double>() == std::vector<double>{3.0, 3.0});
}

TEST_CASE("a converted BatchNorm on 2 ranks equals one BatchNorm on the whole batch", "[dist][sync_bn]") {
  auto g = dist::default_group();
  const int rank = g->rank(), ranks = g->size();
  const auto momentum = GENERATE(std::optional<double>(0.1), std::optional<double>());
  const bool fused_relu = GENERATE(false, true);
  INFO("momentum " << (momentum ? "0.1" : "None") << (fused_relu ? ", with relu" : ""));
  GlobalBatch batch(DType::F64, {8, 3, 4, 5}, 42);
  auto bn = make_bn(DType::F64, momentum), ref = make_bn(DType::F64, momentum);
  CHECK(dist::convert_sync_batchnorm(*bn, g) == 1);
  CHECK(bn->synced());

  for (int step = 0; step < 2; ++step) {  // twice: the running statistics' second update too
    Tensor x = batch.rows(batch.x, rank, ranks).clone().requires_grad_();
    Tensor y = fused_relu ? bn->forward_relu(x) : bn->forward(x);
    sum(mul(y, batch.rows(batch.out_weights, rank, ranks))).backward();

    Tensor xr = batch.x.clone().requires_grad_();
    Tensor yr = fused_relu ? ref->forward_relu(xr) : ref->forward(xr);
    sum(mul(yr, batch.out_weights)).backward();

    CHECK(max_diff(y, batch.rows(yr, rank, ranks)) < 1e-12);
    CHECK(max_diff(x.grad(), batch.rows(xr.grad(), rank, ranks)) < 1e-12);
    CHECK(max_diff(bn->running_mean, ref->running_mean) < 1e-14);
    CHECK(max_diff(bn->running_var, ref->running_var) < 1e-13);
    // Each rank's weight gradient covers its rows; their sum is the whole batch's.
    Tensor gw = bn->weight.grad().clone(), gb = bn->bias.grad().clone();
    g->allreduce({gw, gb})->wait();
    CHECK(max_diff(gw, ref->weight.grad()) < 1e-12);
    CHECK(max_diff(gb, ref->bias.grad()) < 1e-12);
    bn->zero_grad();
    ref->zero_grad();
  }
  CHECK(bn->num_batches_tracked.item_int() == 2);
  // Evaluation mode uses the running statistics, with no collective (rank 1 alone runs one here).
  bn->eval();
  ref->eval();
  if (rank == 1) {
    Tensor x = batch.rows(batch.x, rank, ranks);
    CHECK(max_diff(bn->forward(x), ref->forward(x)) < 1e-13);
  }
  g->barrier()->wait();
}

TEST_CASE("synced batch norm under bf16 autocast: bf16 output near the f32 whole-batch result", "[dist][sync_bn]") {
  auto g = dist::default_group();
  const int rank = g->rank(), ranks = g->size();
  GlobalBatch batch(DType::F32, {6, 3, 5, 5}, 7);
  auto bn = make_bn(DType::F32), ref = make_bn(DType::F32);
  dist::convert_sync_batchnorm(*bn, g);
  Tensor x = batch.rows(batch.x, rank, ranks).to(DType::BF16);
  Tensor y;
  {
    amp::autocast ac(DeviceType::CPU, DType::BF16);
    y = bn->forward(x);
  }
  CHECK(y.dtype() == DType::BF16);
  Tensor yr = ref->forward(batch.x.to(DType::BF16).to(DType::F32));
  // Statistics in f32, one rounding of the output to bf16 (|y| < 16 here).
  CHECK(max_diff(y, batch.rows(yr, rank, ranks)) < 16 * traits(DType::BF16).eps);
  CHECK(max_diff(bn->running_var, ref->running_var) < 1e-5);
}

namespace {
struct SmallConvNet : nn::Module {
  std::shared_ptr<nn::Conv2d> conv;
  std::shared_ptr<nn::BatchNorm2d> bn;
  std::shared_ptr<nn::Linear> fc;
  SmallConvNet() {
    conv = register_module("conv", std::make_shared<nn::Conv2d>(2, 4, 3));
    bn = register_module("bn", std::make_shared<nn::BatchNorm2d>(4));
    fc = register_module("fc", std::make_shared<nn::Linear>(4 * 4 * 4, 3));
  }
  Tensor forward(const Tensor& x) { return fc->forward(bn->forward_relu(conv->forward(x)).flatten(1)); }
};
}  // namespace

TEST_CASE("DDP with synced batch norm trains as one process on the whole batch", "[dist][sync_bn][ddp]") {
  auto g = dist::default_group();
  const int rank = g->rank(), ranks = g->size();
  manual_seed(5);
  auto net = std::make_shared<SmallConvNet>();
  manual_seed(5);
  auto ref = std::make_shared<SmallConvNet>();
  CHECK(dist::convert_sync_batchnorm(*net, g) == 1);
  dist::DistributedDataParallel ddp(net, g);
  optim::SGD opt(net->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  optim::SGD ref_opt(ref->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  for (int step = 0; step < 3; ++step) {
    Generator gen(300 + static_cast<uint64_t>(step));
    Tensor x = randn({8, 2, 6, 6}, {}, &gen), target = randint(0, 3, {8}, DType::I64, &gen);
    const int64_t n = 8 / ranks;
    opt.zero_grad();
    cross_entropy(ddp.forward(x.narrow(0, rank * n, n)), target.narrow(0, rank * n, n)).backward();
    opt.step();
    ref_opt.zero_grad();
    cross_entropy(ref->forward(x), target).backward();  // the mean over 8 = the ranks' average
    ref_opt.step();
    INFO("step " << step);
    const auto mine = net->named_parameters(), theirs = ref->named_parameters();
    for (const auto& [name, p] : mine) {
      INFO(name);
      CHECK(max_diff(p, theirs[name]) < 1e-5);
    }
    CHECK(max_diff(net->bn->running_mean, ref->bn->running_mean) < 1e-6);
  }
}
