// dist::DataParallel on CPU threads: chunks as torch.chunk, each on its own thread, with the
// caller's autocast and grad state; outputs and gradients match the module run on the whole batch.
#include <catch2/catch.hpp>

#include <mutex>
#include <set>
#include <thread>

#include "minidl.h"

using namespace minidl;

namespace {
struct Probe : nn::Module {
  std::shared_ptr<nn::Linear> fc;
  std::mutex mu;
  std::set<std::thread::id> threads;
  std::vector<int64_t> rows;
  std::vector<bool> autocast_on;
  Probe() { fc = register_module("fc", std::make_shared<nn::Linear>(6, 4)); }
  Tensor forward(const Tensor& x) {
    {
      std::lock_guard<std::mutex> lk(mu);
      threads.insert(std::this_thread::get_id());
      rows.push_back(x.size(0));
      autocast_on.push_back(amp::is_autocast_enabled(DeviceType::CPU));
    }
    return relu(fc->forward(x));
  }
};

void check_close(const Tensor& a, const Tensor& b, double tol) {
  REQUIRE(a.shape() == b.shape());
  auto x = a.to(DType::F64).to_vector<double>(), y = b.to(DType::F64).to_vector<double>();
  for (size_t i = 0; i < x.size(); ++i) CHECK(std::abs(x[i] - y[i]) <= tol * (1 + std::abs(y[i])));
}
}  // namespace

TEST_CASE("DataParallel splits the batch over threads and matches the whole-batch forward and backward", "[dist][data_parallel]") {
  manual_seed(3);
  auto net = std::make_shared<Probe>();
  Tensor x = randn({10, 6}), target = randn({10, 4});
  dist::DataParallel dp(net, 3);
  Tensor out = dp.forward(x);
  CHECK(net->threads.size() == 3);
  std::multiset<int64_t> rows(net->rows.begin(), net->rows.end());
  CHECK(rows == std::multiset<int64_t>{4, 4, 2});  // torch.chunk: ceil(10 / 3) = 4
  mse_loss(out, target).backward();
  std::vector<Tensor> grads;
  for (const Tensor& p : net->parameters()) grads.push_back(p.grad().clone());

  net->zero_grad();
  Tensor whole = net->forward(x);
  mse_loss(whole, target).backward();
  const double tol = 8 * traits(DType::F32).eps;
  check_close(out, whole, tol);
  for (size_t i = 0; i < grads.size(); ++i) check_close(grads[i], net->parameters()[i].grad(), tol);
}

TEST_CASE("DataParallel threads run with the caller's autocast and grad state", "[dist][data_parallel][amp]") {
  auto net = std::make_shared<Probe>();
  dist::DataParallel dp(net, std::vector<Device>{Device::cpu(), Device::cpu()});
  Tensor x = randn({4, 6});
  {
    amp::autocast scope(DeviceType::CPU, DType::BF16);
    Tensor out = dp.forward(x);
    CHECK(out.dtype() == DType::BF16);  // Linear is lower-precision under autocast, on both threads
    CHECK(out.requires_grad());
  }
  CHECK(net->autocast_on == std::vector<bool>{true, true});
  CHECK(net->threads.size() == 2);
  {
    NoGradGuard ng;
    CHECK_FALSE(dp.forward(x).requires_grad());
  }
  CHECK(dp.forward(x).dtype() == DType::F32);  // outside the scope again
}

TEST_CASE("DataParallel: fewer rows than threads, and errors", "[dist][data_parallel]") {
  auto net = std::make_shared<Probe>();
  dist::DataParallel dp(net, 4);
  CHECK(dp.forward(randn({2, 6})).shape() == Shape{2, 4});
  CHECK(net->rows == std::vector<int64_t>{1, 1});
  CHECK_THROWS_WITH(dist::DataParallel(net, 0), Catch::Contains("DataParallel") && Catch::Contains("at least one device"));
  // A chunk's error (here a shape mismatch on a worker thread) reaches the caller.
  CHECK_THROWS_WITH(dp.forward(randn({2, 3})), Catch::Contains("linear", Catch::CaseSensitive::No));
  CHECK_THROWS_WITH(dist::DataParallel(net, std::vector<Device>{Device::cuda()}), Catch::Contains("only CPU devices"));
}
