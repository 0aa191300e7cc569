// batch_norm_synced (ops/nn_ops.h), the statistics path of synced batch norm, in one process: with
// an all_sum that returns its argument (a world of one) it must equal batch_norm, batch_norm_relu
// and batch_norm_add_relu (output, gradients, running statistics), pass f64 gradient checks to
// second order, keep a low-precision input's dtype under autocast, and refuse bad input. The
// 2-rank checks against one process on the whole batch are in tests/dist/test_sync_batch_norm.cpp.
#include <catch2/catch.hpp>

#include "distributed/self_process_group.h"
#include "cuda_checks.h"
#include "gradcheck.h"
#include "minidl.h"

using namespace minidl;
using minidl::testing::max_abs_diff;

namespace {
const AllSum world_of_one = [](const Tensor& t) { return t; };
}

TEST_CASE("batch_norm_synced over a world of one equals batch_norm", "[norm][sync_bn]") {
  const int variant = GENERATE(0, 1, 2);  // plain, relu, residual + relu
  const DType dtype = GENERATE(DType::F64, DType::F32);
  INFO("variant " << variant << ", " << dtype_name(dtype));
  const double tol = dtype == DType::F64 ? 1e-12 : 64 * traits(DType::F32).eps;
  manual_seed(21);
  const Shape shape = GENERATE(Shape{6, 3, 4, 5}, Shape{7, 4});
  Tensor x0 = add(mul(randn(shape, dtype), 3.0), 1.0), res0 = randn(shape, dtype);
  Tensor w0 = randn({shape[1]}, dtype), b0 = randn({shape[1]}, dtype);
  Tensor rm = randn({shape[1]}, dtype), rv = add(rand({shape[1]}, dtype), 0.5);
  Tensor rm_ref = rm.clone(), rv_ref = rv.clone();
  std::vector<Tensor> a{x0.clone().requires_grad_(), w0.clone().requires_grad_(), b0.clone().requires_grad_(),
                        res0.clone().requires_grad_()};
  std::vector<Tensor> r{x0.clone().requires_grad_(), w0.clone().requires_grad_(), b0.clone().requires_grad_(),
                        res0.clone().requires_grad_()};
  const Tensor residual_a = variant == 2 ? a[3] : Tensor(), residual_r = variant == 2 ? r[3] : Tensor();
  Tensor y = batch_norm_synced(a[0], rm, rv, a[1], a[2], 0.3, 1e-5, world_of_one, variant == 1, residual_a);
  Tensor yr = variant == 0   ? batch_norm(r[0], rm_ref, rv_ref, r[1], r[2], true, 0.3, 1e-5)
              : variant == 1 ? batch_norm_relu(r[0], rm_ref, rv_ref, r[1], r[2], true, 0.3, 1e-5)
                             : batch_norm_add_relu(r[0], residual_r, rm_ref, rv_ref, r[1], r[2], true, 0.3, 1e-5);
  CHECK(y.dtype() == dtype);
  CHECK(max_abs_diff(y, yr) < tol * 10);
  CHECK(max_abs_diff(rm, rm_ref) < tol);
  CHECK(max_abs_diff(rv, rv_ref) < tol);
  testing::project(y).backward();
  testing::project(yr).backward();
  for (size_t i = 0; i < (variant == 2 ? 4u : 3u); ++i) {
    INFO("gradient of input " << i);
    REQUIRE(a[i].grad().defined());
    CHECK(max_abs_diff(a[i].grad(), r[i].grad()) < tol * 10 * (1 + max_abs_diff(r[i].grad(), zeros_like(r[i].grad()))));
  }
}

TEST_CASE("batch_norm_synced: f64 gradient checks, first and second order", "[norm][sync_bn][gradcheck]") {
  const testing::TensorFn fn = [](const std::vector<Tensor>& in) {
    return batch_norm_synced(in[0], Tensor(), Tensor(), in[1], in[2], 0.1, 1e-5, world_of_one);
  };
  manual_seed(4);
  std::vector<Tensor> in{randn({4, 2, 3}, DType::F64).requires_grad_(), randn({2}, DType::F64).requires_grad_(),
                         randn({2}, DType::F64).requires_grad_()};
  CHECK(testing::check_gradients(fn, in, 1e-6, 1e-6) == "");
  CHECK(testing::check_second_order(fn, in, 1e-6, 1e-5) == "");
}

TEST_CASE("batch_norm_synced keeps a bf16 input's dtype and computes in f32 under autocast", "[norm][sync_bn][amp]") {
  manual_seed(8);
  Tensor x = randn({5, 3, 4, 4}).to(DType::BF16);
  Tensor w = ones({3}), b = zeros({3}), rm = zeros({3}), rv = ones({3});
  Tensor y;
  {
    amp::autocast ac(DeviceType::CPU, DType::BF16);
    y = batch_norm_synced(x, rm, rv, w, b, 0.1, 1e-5, world_of_one);
  }
  CHECK(y.dtype() == DType::BF16);
  CHECK(rm.dtype() == DType::F32);
  Tensor ref = batch_norm(x.to(DType::F32), Tensor(), Tensor(), w, b, true, 0.1, 1e-5);
  CHECK(max_abs_diff(y, ref) < 8 * traits(DType::BF16).eps);
}

TEST_CASE("batch_norm_synced refuses bad input, naming the op", "[norm][sync_bn][errors]") {
  Tensor x = randn({4, 3});
  CHECK_THROWS_WITH(batch_norm_synced(randn({4}), Tensor(), Tensor(), Tensor(), Tensor(), 0.1, 1e-5, world_of_one),
                    Catch::Contains("batch_norm_synced") && Catch::Contains("at least 2 dims"));
  CHECK_THROWS_WITH(batch_norm_synced(x, Tensor(), Tensor(), ones({4}), Tensor(), 0.1, 1e-5, world_of_one),
                    Catch::Contains("weight"));
  CHECK_THROWS_WITH(batch_norm_synced(x, Tensor(), Tensor(), Tensor(), Tensor(), 0.1, 1e-5, AllSum()),
                    Catch::Contains("no all_sum function"));
  CHECK_THROWS_WITH(batch_norm_synced(randn({1, 3}), Tensor(), Tensor(), Tensor(), Tensor(), 0.1, 1e-5, world_of_one),
                    Catch::Contains("expected more than 1 value per channel when training"));
  CHECK_THROWS_WITH(batch_norm_synced(x, Tensor(), Tensor(), Tensor(), Tensor(), 0.1, -1.0, world_of_one),
                    Catch::Contains("eps must be non-negative"));
}

TEST_CASE("a BatchNorm with an all_sum takes the synced path in training only; convert skips a world of one", "[nn][sync_bn]") {
  auto bn = std::make_shared<nn::BatchNorm1d>(3);
  int calls = 0;
  bn->set_batch_stats_all_sum([&](const Tensor& t) { ++calls; return t; });
  CHECK(bn->synced());
  Tensor x = randn({6, 3});
  nn::BatchNorm1d plain(3);
  CHECK(max_abs_diff(bn->forward(x), plain.forward(x)) < 1e-5);
  CHECK(calls == 2);  // the sums and counts, then the squared deviations
  bn->eval();
  plain.eval();
  CHECK(max_abs_diff(bn->forward(x), plain.forward(x)) < 1e-6);
  CHECK(calls == 2);
  CHECK(dist::convert_sync_batchnorm(plain, dist::make_self_group()) == 0);
  CHECK_FALSE(plain.synced());
  bn->set_batch_stats_all_sum(AllSum());
  CHECK_FALSE(bn->synced());
}

TEST_CASE("cuda: batch_norm_synced agrees with the CPU, values, gradients and running statistics", "[cuda][sync_bn]") {
  using namespace minidl::cuda_test;
  MINIDL_REQUIRE_GPU();
  const Tensor x0 = randn_cpu({6, 3, 4, 5}, DType::F32, 31, 2.0), w0 = randn_cpu({3}, DType::F32, 32);
  const Tensor b0 = randn_cpu({3}, DType::F32, 33);
  std::vector<Tensor> outs, xg, wg, rms;
  for (Device d : {Device::cpu(), kCuda}) {
    Tensor x = x0.to(d).requires_grad_(), w = w0.to(d).requires_grad_(), b = b0.to(d).requires_grad_();
    Tensor rm = zeros({3}, TensorOptions().device(d)), rv = ones({3}, TensorOptions().device(d));
    Tensor y = batch_norm_synced(x, rm, rv, w, b, 0.1, 1e-5, world_of_one, true);
    sum(mul(y, mul(x0, 0.25).to(d))).backward();
    outs.push_back(y.to(Device::cpu()));
    xg.push_back(x.grad().to(Device::cpu()));
    wg.push_back(w.grad().to(Device::cpu()));
    rms.push_back(rv.to(Device::cpu()));
  }
  check_close(outs[1], outs[0], 1e-5, 1e-6, "output");
  check_close(xg[1], xg[0], 1e-4, 1e-5, "input gradient");
  check_close(wg[1], wg[0], 1e-4, 1e-5, "weight gradient");
  check_close(rms[1], rms[0], 1e-5, 1e-6, "running_var");
}
