// dist::DataParallel on CPU threads: chunks as torch.chunk, each on its own thread, with the
// caller's autocast and grad state; outputs and gradients match the module run on the whole batch.
#include <catch2/catch.hpp>

#include <mutex>
#include <set>
#include <thread>

#include "cuda_checks.h"
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
}

// ---------------------------------------------------------------- replication (the device path)
// With replicate(true) on CPU devices, DataParallel runs exactly what it runs on several GPUs:
// chunks after the first on replicas whose parameters are recorded copies of the module's.

namespace {
// What every replica of a Recorded net saw, shared through clone_structure().
struct Record {
  std::mutex mu;
  std::set<const void*> modules;  // which module instances ran a forward
  std::vector<bool> autocast_on;
  std::vector<Device> devices;    // where each forward's input was
};

struct Recorded : nn::Layer {
  std::shared_ptr<Record> record;
  std::shared_ptr<nn::Linear> fc1, fc2;
  std::shared_ptr<nn::BatchNorm1d> bn;
  explicit Recorded(std::shared_ptr<Record> r) : record(std::move(r)) {
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(6, 8));
    bn = register_module("bn", std::make_shared<nn::BatchNorm1d>(8));
    fc2 = register_module("fc2", std::make_shared<nn::Linear>(8, 3));
  }
  nn::ModulePtr clone_structure() const override { return std::make_shared<Recorded>(record); }
  Tensor forward(const Tensor& x) override {
    {
      std::lock_guard<std::mutex> lk(record->mu);
      record->modules.insert(this);
      record->autocast_on.push_back(amp::is_autocast_enabled(x.device().type));
      record->devices.push_back(x.device());
    }
    return fc2->forward(relu(bn->forward(fc1->forward(x))));
  }
};

// ||a - b|| <= tol * ||b||, in f64: low-precision chunks round in other places than the whole
// batch does, so elementwise relative error near zero says nothing.
bool same_values(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() && a.to(DType::F64).to_vector<double>() == b.to(DType::F64).to_vector<double>();
}

void check_norm_close(const Tensor& a, const Tensor& b, double tol, const std::string& what) {
  INFO(what);
  REQUIRE(a.shape() == b.shape());
  auto x = a.to(DType::F64).to_vector<double>(), y = b.to(DType::F64).to_vector<double>();
  double diff = 0, ref = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    diff += (x[i] - y[i]) * (x[i] - y[i]);
    ref += y[i] * y[i];
  }
  CHECK(std::sqrt(diff) <= tol * std::sqrt(ref));
}

void check_replicated_matches(std::optional<DType> autocast_dtype) {
  manual_seed(11);
  auto record = std::make_shared<Record>();
  auto net = std::make_shared<Recorded>(record);
  net->eval();  // batch norm on running statistics: each chunk's rows come out as in the whole batch
  Tensor x = randn({10, 6}), target = randn({10, 3});
  dist::DataParallel dp(net, 3, dist::DataParallelOptions().replicate());
  REQUIRE(dp.replicating());
  REQUIRE(dp.replicas().size() == 2);

  auto forward = [&](auto&& f) {
    if (!autocast_dtype) return f();
    amp::autocast scope(DeviceType::CPU, *autocast_dtype);
    return f();
  };
  net->zero_grad();
  Tensor whole = forward([&] { return nn::call(*net, x); });
  mse_loss(whole.to(DType::F32), target).backward();
  const Tensor want = whole.detach();
  std::vector<Tensor> want_grads;
  for (const Tensor& p : net->parameters()) want_grads.push_back(p.grad().clone());
  net->zero_grad();
  record->modules.clear();
  record->autocast_on.clear();

  Tensor out = forward([&] { return dp.forward(x); });
  CHECK(out.dtype() == (autocast_dtype ? *autocast_dtype : DType::F32));
  CHECK(record->modules.size() == 3);  // the module and its two replicas
  CHECK(record->modules.count(net.get()) == 1);
  CHECK(record->autocast_on == std::vector<bool>(3, autocast_dtype.has_value()));
  // The replicas' parameters are recorded aliases of the module's (same device): non-leaves over
  // the module's storage.
  for (const auto& replica : dp.replicas()) {
    auto mine = replica->named_parameters(), theirs = net->named_parameters();
    REQUIRE(mine.keys() == theirs.keys());
    for (const auto& name : mine.keys()) {
      CHECK_FALSE(mine[name].is_leaf());
      CHECK(mine[name].raw_data() == theirs[name].raw_data());
      CHECK(mine[name].name() == theirs[name].name());  // "fc1.weight": errors and AMP reports name it alike
    }
  }
  mse_loss(out.to(DType::F32), target).backward();
  const double tol = autocast_dtype ? 4 * traits(*autocast_dtype).eps : 8 * traits(DType::F32).eps;
  check_norm_close(out, want, tol, "output");
  const auto params = net->parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    REQUIRE(params[i].grad().defined());  // into the original's .grad
    CHECK(params[i].grad().dtype() == DType::F32);
    check_norm_close(params[i].grad(), want_grads[i], tol, "gradient of " + params[i].name());
  }
  for (const auto& replica : dp.replicas())
    for (const Tensor& p : replica->parameters()) CHECK_FALSE(p.grad().defined());
}
}  // namespace

TEST_CASE("DataParallel replication: forward and backward equal the single module's, gradients in the original", "[dist][data_parallel]") {
  SECTION("f32") { check_replicated_matches(std::nullopt); }
  SECTION("bf16 autocast") { check_replicated_matches(DType::BF16); }
}

TEST_CASE("DataParallel replication: two forwards, one backward (accumulation across micro-batches)", "[dist][data_parallel]") {
  manual_seed(13);
  auto net = std::make_shared<Recorded>(std::make_shared<Record>());
  net->eval();
  const Tensor x1 = randn({6, 6}), x2 = randn({6, 6}), t1 = randn({6, 3}), t2 = randn({6, 3});
  add(mse_loss(nn::call(*net, x1), t1), mse_loss(nn::call(*net, x2), t2)).backward();
  std::vector<Tensor> want;
  for (const Tensor& p : net->parameters()) want.push_back(p.grad().clone());
  net->zero_grad();
  // The second forward refreshes the replicas while the first graph still holds them.
  dist::DataParallel dp(net, 2, dist::DataParallelOptions().replicate());
  Tensor l1 = mse_loss(dp.forward(x1), t1);
  Tensor l2 = mse_loss(dp.forward(x2), t2);
  add(l1, l2).backward();
  const auto params = net->parameters();
  for (size_t i = 0; i < params.size(); ++i)
    check_norm_close(params[i].grad(), want[i], 8 * traits(DType::F32).eps, "gradient of " + params[i].name());
}

TEST_CASE("DataParallel replication: a module's own autocast setting holds in its replicas", "[dist][data_parallel][amp]") {
  auto record = std::make_shared<Record>();
  auto net = std::make_shared<Recorded>(record);
  net->set_autocast(std::nullopt, false);  // this module's forward runs without autocast
  dist::DataParallel dp(net, 2, dist::DataParallelOptions().replicate());
  Tensor out;
  {
    amp::autocast scope(DeviceType::CPU, DType::BF16);
    out = dp.forward(randn({4, 6}));
  }
  CHECK(out.dtype() == DType::F32);
  CHECK(record->autocast_on == std::vector<bool>{false, false});
  CHECK(record->modules.size() == 2);
}

TEST_CASE("DataParallel replication: buffers are copies, only the module's own chunk updates its buffers", "[dist][data_parallel]") {
  manual_seed(5);
  auto net = std::make_shared<Recorded>(std::make_shared<Record>());
  auto reference = std::make_shared<Recorded>(std::make_shared<Record>());
  reference->load_state_dict(net->state_dict());
  Tensor x = randn({8, 6});
  dist::DataParallel dp(net, 2, dist::DataParallelOptions().replicate());
  dp.forward(x);  // training mode: each chunk normalizes with its own statistics
  // The original's running statistics took one update, from the first chunk (rows 0-3) alone.
  nn::call(*reference, x.narrow(0, 0, 4));
  CHECK(same_values(net->bn->running_mean, reference->bn->running_mean));
  CHECK(same_values(net->bn->running_var, reference->bn->running_var));
  CHECK(net->bn->num_batches_tracked.item<int64_t>() == 1);
  // The replica updated its own copy, from rows 4-7; its buffers share nothing with the original.
  const auto& replica = dp.replicas()[0];
  CHECK(replica->bn->num_batches_tracked.item<int64_t>() == 1);
  CHECK(replica->bn->running_mean.raw_data() != net->bn->running_mean.raw_data());
  CHECK_FALSE(same_values(replica->bn->running_mean, net->bn->running_mean));
  // The next forward starts the replica from the original's buffers again.
  dp.forward(x);
  CHECK(net->bn->num_batches_tracked.item<int64_t>() == 2);
  CHECK(replica->bn->num_batches_tracked.item<int64_t>() == 2);
  // Training mode follows the original, module by module.
  net->eval();
  net->fc1->train();
  dp.forward(x);
  CHECK_FALSE(replica->is_training());
  CHECK_FALSE(replica->bn->is_training());
  CHECK(replica->fc1->is_training());
}

TEST_CASE("DataParallel replication: under no_grad the replicas record nothing", "[dist][data_parallel]") {
  auto net = std::make_shared<Recorded>(std::make_shared<Record>());
  dist::DataParallel dp(net, 2, dist::DataParallelOptions().replicate());
  NoGradGuard ng;
  Tensor out = dp.forward(randn({4, 6}));
  CHECK_FALSE(out.requires_grad());
  for (const Tensor& p : dp.replicas()[0]->parameters()) CHECK(p.is_leaf());
}

TEST_CASE("DataParallel replication: building replicas leaves the default generator where it was", "[dist][data_parallel]") {
  manual_seed(9);
  auto net = std::make_shared<Recorded>(std::make_shared<Record>());
  const auto before = default_generator().state();
  dist::DataParallel dp(net, 3, dist::DataParallelOptions().replicate());
  CHECK(default_generator().state() == before);
}

TEST_CASE("DataParallel replication: every built-in model replicates", "[dist][data_parallel]") {
  for (const std::string& name : nn::models::model_names()) {
    INFO(name);
    auto model = nn::models::make_model(name);
    nn::ModulePtr replica;
    REQUIRE_NOTHROW(replica = dist::detail::make_replica_structure(*model));
    CHECK(typeid(*replica) == typeid(*model));
    REQUIRE_NOTHROW(dist::detail::refresh_replica(*replica, *model, Device::cpu()));
    CHECK(replica->named_parameters().keys() == model->named_parameters().keys());
    CHECK(replica->named_buffers().keys() == model->named_buffers().keys());
    // Bound to the module's values: the same state, bit for bit.
    const auto mine = replica->state_dict(), theirs = model->state_dict();
    for (const auto& key : theirs.keys()) CHECK(same_values(mine[key], theirs[key]));
  }
}

TEST_CASE("DataParallel replication: every built-in layer's clone_structure() keeps its configuration", "[dist][data_parallel]") {
  using namespace nn;
  auto all = std::make_shared<ModuleList>();
  all->push_back(std::make_shared<Linear>(5, 3, false));
  all->push_back(std::make_shared<Conv2d>(Conv2dOptions(3, 4, 3).stride(2).padding(1).bias(false)));
  all->push_back(std::make_shared<BatchNorm1d>(4, 1e-3, std::nullopt, false));
  all->push_back(std::make_shared<BatchNorm2d>(4));
  all->push_back(std::make_shared<LayerNorm>(LayerNormOptions({4}).eps(1e-3)));
  all->push_back(std::make_shared<GroupNorm>(2, 4));
  all->push_back(std::make_shared<RMSNorm>(RMSNormOptions({4}).elementwise_affine(false)));
  all->push_back(std::make_shared<Embedding>(EmbeddingOptions(10, 4).padding_idx(0)));
  all->push_back(std::make_shared<Conv1d>(Conv1dOptions(2, 3, 3).stride(2)));
  all->push_back(std::make_shared<ReLU>());
  all->push_back(std::make_shared<LeakyReLU>(LeakyReLUOptions().negative_slope(0.2)));
  all->push_back(std::make_shared<GELU>(GELUOptions().approximate("tanh")));
  all->push_back(std::make_shared<Sigmoid>());
  all->push_back(std::make_shared<Tanh>());
  all->push_back(std::make_shared<Mish>());
  all->push_back(std::make_shared<CELU>(0.7));
  all->push_back(std::make_shared<Softshrink>(0.25));
  all->push_back(std::make_shared<Hardshrink>(0.75));
  all->push_back(std::make_shared<Threshold>(0.1, 20.0));
  all->push_back(std::make_shared<GLU>(1));
  all->push_back(std::make_shared<InstanceNorm2d>(4, 1e-3, 0.2, true, true));
  all->push_back(std::make_shared<PixelShuffle>(2));
  all->push_back(std::make_shared<MultiMarginLoss>(2, 0.5, ones({3})));
  all->push_back(std::make_shared<Softmax>(0));
  all->push_back(std::make_shared<LogSoftmax>(1));
  all->push_back(std::make_shared<MaxPool2d>(3, 2, 1));
  all->push_back(std::make_shared<AvgPool2d>(2));
  all->push_back(std::make_shared<AdaptiveAvgPool2d>(Size2{2, 3}));
  all->push_back(std::make_shared<Dropout>(0.3));
  all->push_back(std::make_shared<Dropout2d>(0.2));
  all->push_back(std::make_shared<Flatten>(FlattenOptions().start_dim(2)));
  all->push_back(std::make_shared<Identity>());
  all->push_back(std::make_shared<Sequential>(std::make_shared<ReLU>(), std::make_shared<Linear>(4, 2)));
  all->push_back(std::make_shared<CrossEntropyLoss>(CrossEntropyLossOptions().label_smoothing(0.1)));
  all->push_back(std::make_shared<MSELoss>());
  all->push_back(std::make_shared<BCEWithLogitsLoss>());
  all->push_back(std::make_shared<MultiheadAttention>(MultiheadAttentionOptions(8, 2)));
  all->push_back(std::make_shared<TransformerEncoderLayer>(TransformerEncoderLayerOptions(8, 2)));
  nn::ModulePtr replica = dist::detail::make_replica_structure(*all);
  dist::detail::refresh_replica(*replica, *all, Device::cpu());  // checks types, names and shapes module by module
  CHECK(replica->summary() == all->summary());  // each module's describe(): its configuration
  const auto mine = replica->named_modules(), theirs = all->named_modules();
  REQUIRE(mine.size() == theirs.size());
  for (size_t i = 0; i < mine.size(); ++i) {
    CHECK(mine[i].first == theirs[i].first);
    CHECK(typeid(*mine[i].second) == typeid(*theirs[i].second));
    CHECK(mine[i].second.get() != theirs[i].second.get());  // a module of its own
  }
}

namespace {
struct NotCloneable : nn::Layer {
  std::shared_ptr<nn::Linear> fc;
  NotCloneable() { fc = register_module("fc", std::make_shared<nn::Linear>(6, 3)); }
  Tensor forward(const Tensor& x) override { return fc->forward(x); }
};

struct DefaultBuilt : nn::Cloneable<DefaultBuilt, nn::Layer> {
  std::shared_ptr<nn::Linear> fc;
  DefaultBuilt() { fc = register_module("fc", std::make_shared<nn::Linear>(6, 3)); }
  Tensor forward(const Tensor& x) override { return fc->forward(x); }
};

// clone_structure() that builds another configuration (a user error).
struct WrongClone : nn::Layer {
  int64_t width;
  std::shared_ptr<nn::Linear> fc;
  explicit WrongClone(int64_t w) : width(w) { fc = register_module("fc", std::make_shared<nn::Linear>(6, w)); }
  nn::ModulePtr clone_structure() const override { return std::make_shared<WrongClone>(width + 1); }
  Tensor forward(const Tensor& x) override { return fc->forward(x); }
};
}  // namespace

TEST_CASE("DataParallel replication: bad modules and devices give clear errors", "[dist][data_parallel]") {
  const auto replicate = dist::DataParallelOptions().replicate();
  CHECK_THROWS_WITH(dist::DataParallel(std::make_shared<NotCloneable>(), 2, replicate),
                    Catch::Contains("DataParallel") && Catch::Contains("NotCloneable cannot be replicated") &&
                        Catch::Contains("clone_structure()"));
  // Without replication the CPU path shares the module: nothing to clone.
  CHECK_NOTHROW(dist::DataParallel(std::make_shared<NotCloneable>(), 2));
  // nn::Cloneable builds replicas with the default constructor.
  {
    auto net = std::make_shared<DefaultBuilt>();
    dist::DataParallel dp(net, 2, replicate);
    Tensor x = randn({4, 6});
    check_norm_close(dp.forward(x), net->forward(x), 8 * traits(DType::F32).eps, "Cloneable net");
  }
  CHECK_THROWS_WITH(dist::DataParallel(std::make_shared<WrongClone>(3), 2, replicate).forward(randn({4, 6})),
                    Catch::Contains("DataParallel") &&
                        Catch::Contains("parameter 'weight' of fc has shape [3, 6] in the module but [4, 6]"));
  CHECK_THROWS_WITH(dist::DataParallel(std::make_shared<DefaultBuilt>(), std::vector<Device>{Device::cpu(), Device::cuda(0)}),
                    Catch::Contains("DataParallel") && Catch::Contains("all CPU or all CUDA"));
  if (!cuda::is_available())
    CHECK_THROWS_WITH(dist::DataParallel(std::make_shared<DefaultBuilt>(), std::vector<Device>{Device::cuda(0)}),
                      Catch::Contains("DataParallel") && Catch::Contains("cuda:0 does not exist"));
  // A module changed after DataParallel was built.
  {
    auto net = std::make_shared<DefaultBuilt>();
    dist::DataParallel dp(net, 2, replicate);
    net->register_module("extra", std::make_shared<nn::Linear>(3, 3));
    CHECK_THROWS_WITH(dp.forward(randn({4, 6})), Catch::Contains("DataParallel") && Catch::Contains("does not match the module"));
  }
}

TEST_CASE("DataParallel on CUDA devices: replicas on each GPU (cuda:0 twice with one GPU)", "[cuda][dist][data_parallel]") {
  using namespace cuda_test;
  MINIDL_REQUIRE_GPU();
  const bool two_gpus = kCuda.is_cuda() && cuda::device_count() >= 2;
  const std::vector<Device> devices = two_gpus ? std::vector<Device>{Device::cuda(0), Device::cuda(1)}
                                               : std::vector<Device>{kCuda, kCuda};
  for (const bool amp_on : {false, true}) {
    INFO((amp_on ? "autocast " + std::string(dtype_name(kAmpDType)) : std::string("f32")));
    manual_seed(21);
    auto record = std::make_shared<Record>();
    auto net = std::make_shared<Recorded>(record);
    net->eval();
    net->to(devices[0]);
    const Tensor x = randn_cpu({10, 6}, DType::F32, 3), target = randn_cpu({10, 3}, DType::F32, 4).to(devices[0]);
    // replicate(): a no-op with CUDA devices, needed when the CPU stands in for the GPU.
    dist::DataParallel dp(net, devices, dist::DataParallelOptions().replicate());
    auto run = [&](auto&& f) {
      if (!amp_on) return f();
      amp::autocast scope(devices[0].type, kAmpDType);
      return f();
    };
    Tensor whole = run([&] { return nn::call(*net, x.to(devices[0])); });
    mse_loss(whole.to(DType::F32), target).backward();
    std::vector<Tensor> want_grads;
    for (const Tensor& p : net->parameters()) want_grads.push_back(p.grad().to(Device::cpu()));
    net->zero_grad();
    record->autocast_on.clear();
    record->devices.clear();

    Tensor out = run([&] { return dp.forward(x); });  // x on the CPU: scattered to each device
    CHECK(out.device() == devices[0]);
    std::multiset<std::string> ran_on, expected;  // the chunks' threads record in any order
    for (const Device& d : record->devices) ran_on.insert(d.str());
    for (const Device& d : devices) expected.insert(d.str());
    CHECK(ran_on == expected);
    CHECK(record->autocast_on == std::vector<bool>{amp_on, amp_on});
    for (const Tensor& p : dp.replicas()[0]->parameters()) {
      CHECK(p.device() == devices[1]);
      CHECK_FALSE(p.is_leaf());  // a recorded copy of the original
    }
    mse_loss(out.to(DType::F32), target).backward();
    const double tol = amp_on ? 4 * eps_of(kAmpDType) : 8 * eps_of(DType::F32);
    check_norm_close(out.to(Device::cpu()), whole.detach().to(Device::cpu()), tol, "output");
    const auto params = net->parameters();
    for (size_t i = 0; i < params.size(); ++i) {
      REQUIRE(params[i].grad().defined());
      CHECK(params[i].grad().device() == devices[0]);
      check_norm_close(params[i].grad().to(Device::cpu()), want_grads[i], tol, "gradient of " + params[i].name());
    }
  }
  if (kCuda.is_cuda()) {
    // The module must live on devices[0].
    auto on_cpu = std::make_shared<Recorded>(std::make_shared<Record>());
    CHECK_THROWS_WITH(dist::DataParallel(on_cpu, devices),
                      Catch::Contains("DataParallel") &&
                          Catch::Contains("module must have its parameters and buffers on device cuda:0") &&
                          Catch::Contains("fc1.weight on cpu"));
    CHECK_THROWS_WITH(dist::DataParallel(on_cpu, std::vector<Device>{Device::cuda(cuda::device_count())}),
                      Catch::Contains("does not exist"));
  }
}
