// DistributedDataParallel on 2 MPI ranks, checked against one process doing the same arithmetic:
// parameters start from rank 0's, stay bitwise identical across ranks after every step and equal a
// single process that accumulates both ranks' micro-batches and halves the sum (exact); no_sync
// accumulation; find_unused_parameters; an inf in one rank's local gradient makes every rank's
// GradScaler skip the step and back off; a checkpoint resumes to the uninterrupted run; the
// reducer's bucket-timing hook.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "minidl.h"

using namespace minidl;

namespace {

struct Net : nn::Module {
  std::shared_ptr<nn::Linear> fc1, fc2, spare, idle;
  bool use_spare = false;
  explicit Net(bool extra = false) {
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(4, 8));
    fc2 = register_module("fc2", std::make_shared<nn::Linear>(8, 3));
    if (extra) {
      spare = register_module("spare", std::make_shared<nn::Linear>(8, 3));  // used on some ranks
      idle = register_module("idle", std::make_shared<nn::Linear>(8, 3));    // used by no rank
    }
  }
  Tensor forward(const Tensor& x) {
    Tensor h = relu(fc1->forward(x));
    Tensor y = fc2->forward(h);
    return use_spare ? add(y, spare->forward(h)) : y;
  }
};

std::shared_ptr<Net> make_net(uint64_t seed, bool extra = false) {
  manual_seed(seed);
  return std::make_shared<Net>(extra);
}

// The micro-batch of `rank` at `step`: the same tensors on every rank.
std::pair<Tensor, Tensor> batch(int step, int rank) {
  Generator gen(1000 + 10 * static_cast<uint64_t>(step) + static_cast<uint64_t>(rank));
  return {randn({5, 4}, {}, &gen), randn({5, 3}, {}, &gen)};
}

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  if (!a.defined() || !b.defined()) return a.defined() == b.defined();
  Tensor x = a.contiguous(), y = b.contiguous();
  return x.dtype() == y.dtype() && x.shape() == y.shape() && std::memcmp(x.raw_data(), y.raw_data(), x.nbytes()) == 0;
}

bool same_on_all_ranks(dist::ProcessGroup& g, const Tensor& t) {
  std::vector<Tensor> all;
  g.allgather(all, t.detach().contiguous())->wait();
  for (const Tensor& o : all)
    if (!bitwise_equal(o, all[0])) return false;
  return true;
}

bool params_equal(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!bitwise_equal(a[i], b[i])) return false;
  return true;
}

}  // namespace

TEST_CASE("DDP starts every rank from rank 0's parameters", "[dist][ddp]") {
  auto g = dist::default_group();
  auto net = make_net(100 + static_cast<uint64_t>(g->rank()));  // different on each rank
  CHECK_FALSE(same_on_all_ranks(*g, net->fc1->parameters()[0]));
  std::vector<Tensor> root;
  g->allgather(root, net->fc2->parameters()[0].detach().contiguous())->wait();
  dist::DistributedDataParallel ddp(net, g);
  for (const Tensor& p : net->parameters()) CHECK(same_on_all_ranks(*g, p));
  CHECK(bitwise_equal(net->fc2->parameters()[0], root[0]));
  CHECK(net->parameters()[0].requires_grad());
  CHECK(net->parameters()[0].is_leaf());
}

TEST_CASE("DDP on 2 ranks equals one process accumulating both micro-batches, bitwise", "[dist][ddp]") {
  auto g = dist::default_group();
  const bool tiny = GENERATE(false, true);
  auto opts = tiny ? dist::DDPOptions().first_bucket_bytes(64).bucket_cap_bytes(128) : dist::DDPOptions();
  auto net = make_net(7), ref = make_net(7);
  dist::DistributedDataParallel ddp(net, g, opts);
  // Parameters fc1.weight(0) fc1.bias(1) fc2.weight(2) fc2.bias(3), walked from the last.
  using Buckets = std::vector<std::vector<size_t>>;
  CHECK(ddp.reducer().bucket_indices() == (tiny ? Buckets{{3, 2}, {1, 0}} : Buckets{{3, 2, 1, 0}}));
  optim::SGD opt(net->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  optim::SGD ref_opt(ref->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  for (int step = 0; step < 3; ++step) {
    opt.zero_grad();
    auto [x, t] = batch(step, g->rank());
    nn::functional::mse_loss(ddp.forward(x), t).backward();
    opt.step();

    ref_opt.zero_grad();
    for (int r = 0; r < 2; ++r) {
      auto [xr, tr] = batch(step, r);
      nn::functional::mse_loss(ref->forward(xr), tr).backward();
    }
    {
      NoGradGuard ng;
      for (const Tensor& p : ref->parameters()) p.grad().mul_(0.5);  // exact: the average of 2
    }
    ref_opt.step();
    INFO("step " << step << (tiny ? ", small buckets" : ", one bucket"));
    CHECK(params_equal(net->parameters(), ref->parameters()));
    for (const Tensor& p : net->parameters()) CHECK(same_on_all_ranks(*g, p));
  }
}

TEST_CASE("DDP starts a bucket's allreduce during backward, before the last gradient", "[dist][ddp]") {
  auto g = dist::default_group();
  auto net = make_net(9);
  dist::DistributedDataParallel ddp(net, g, dist::DDPOptions().first_bucket_bytes(64).bucket_cap_bytes(128));
  REQUIRE(ddp.reducer().bucket_indices().size() == 2);
  // Registered after DDP's own hooks, so each sees the reducer just after its parameter was taken.
  std::vector<size_t> launched;
  for (Tensor p : net->parameters())
    p.register_post_accumulate_grad_hook([&](const Tensor&) { launched.push_back(ddp.reducer().launched_buckets()); });
  auto [x, t] = batch(8, g->rank());
  nn::functional::mse_loss(ddp.forward(x), t).backward();
  REQUIRE(launched.size() == 4);
  // fc2's bucket is on the wire while fc1's gradients are still to come; the last one launches both.
  CHECK(launched == std::vector<size_t>{0, 1, 1, 2});
  CHECK(ddp.reducer().launched_buckets() == 0);  // reset by the end-of-backward callback
}

TEST_CASE("DDP's timing hook over MPI: each bucket posted during backward and complete by its end", "[dist][ddp]") {
  auto g = dist::default_group();
  auto net = make_net(9);
  dist::DistributedDataParallel ddp(net, g, dist::DDPOptions().first_bucket_bytes(64).bucket_cap_bytes(128));
  std::vector<dist::BackwardTiming> reports;
  ddp.reducer().set_timing_callback([&](const dist::BackwardTiming& t) { reports.push_back(t); });
  auto [x, t] = batch(8, g->rank());
  nn::functional::mse_loss(ddp.forward(x), t).backward();
  REQUIRE(reports.size() == 1);
  REQUIRE(reports[0].buckets.size() == 2);
  // fc2's bucket went out while fc1's gradients were still to come.
  CHECK(reports[0].buckets[0].launched <= reports[0].buckets[1].launched);
  for (const auto& b : reports[0].buckets) {
    CHECK(b.launched <= reports[0].backward_end);
    CHECK(b.launched <= b.completed);
  }
  // The reduction itself is untouched by timing: parameters' gradients agree across ranks.
  for (const Tensor& p : net->parameters()) {
    std::vector<Tensor> all;
    g->allgather(all, p.grad())->wait();
    CHECK(all[0].to_vector<float>() == all[1].to_vector<float>());
  }
}

TEST_CASE("DDP with bf16 parameters reduces in f32 and rounds once: equal to the bf16 accumulation", "[dist][ddp]") {
  auto g = dist::default_group();
  auto net = make_net(13), ref = make_net(13);
  net->to(DType::BF16);
  ref->to(DType::BF16);
  dist::DistributedDataParallel ddp(net, g, dist::DDPOptions().first_bucket_bytes(32).bucket_cap_bytes(64));
  CHECK(ddp.reducer().bucket_indices().size() > 1);
  auto [x, t] = batch(70, g->rank());
  nn::functional::mse_loss(ddp.forward(x.to(DType::BF16)), t.to(DType::BF16)).backward();
  for (int r = 0; r < 2; ++r) {
    auto [xr, tr] = batch(70, r);
    nn::functional::mse_loss(ref->forward(xr.to(DType::BF16)), tr.to(DType::BF16)).backward();
  }
  // round(g0 + g1) / 2 (the reference: bf16 accumulation, then an exact halving) equals
  // round((g0 + g1) / 2) (DDP: f32 sum and average, one rounding to bf16).
  std::vector<Tensor> grads, expect;
  for (const Tensor& p : net->parameters()) grads.push_back(p.grad());
  for (const Tensor& p : ref->parameters()) expect.push_back(mul(p.grad(), 0.5));
  CHECK(grads[0].dtype() == DType::BF16);
  CHECK(params_equal(grads, expect));
}

TEST_CASE("DDP no_sync accumulates locally and the next synced backward reduces the sum", "[dist][ddp]") {
  auto g = dist::default_group();
  auto net = make_net(11), ref = make_net(11);
  dist::DistributedDataParallel ddp(net, g, dist::DDPOptions().first_bucket_bytes(64).bucket_cap_bytes(128));
  auto [xa, ta] = batch(50, g->rank());
  auto [xb, tb] = batch(60, g->rank());
  {
    auto guard = ddp.no_sync();
    nn::functional::mse_loss(ddp.forward(xa), ta).backward();
  }
  // Not reduced: each rank holds its own micro-batch's gradient.
  CHECK_FALSE(same_on_all_ranks(*g, net->fc1->parameters()[0].grad()));
  nn::functional::mse_loss(ddp.forward(xb), tb).backward();

  // Reference: per rank the local sum ga + gb, then the two sums added and halved.
  std::vector<std::vector<Tensor>> local(2);
  for (int r = 0; r < 2; ++r) {
    ref->zero_grad();
    auto [x1, t1] = batch(50, r);
    auto [x2, t2] = batch(60, r);
    nn::functional::mse_loss(ref->forward(x1), t1).backward();
    nn::functional::mse_loss(ref->forward(x2), t2).backward();
    for (const Tensor& p : ref->parameters()) local[r].push_back(p.grad().clone());
  }
  std::vector<Tensor> grads;
  for (const Tensor& p : net->parameters()) grads.push_back(p.grad());
  std::vector<Tensor> expect;
  for (size_t i = 0; i < local[0].size(); ++i) expect.push_back(mul(add(local[0][i], local[1][i]), 0.5));
  CHECK(params_equal(grads, expect));
}

TEST_CASE("DDP find_unused_parameters counts unused gradients as zero", "[dist][ddp]") {
  auto g = dist::default_group();
  auto net = make_net(21, true), ref = make_net(21, true);
  dist::DistributedDataParallel ddp(net, g, dist::DDPOptions().find_unused_parameters(true).bucket_cap_bytes(200));
  net->use_spare = g->rank() == 0;  // `spare` is used on rank 0 only, `idle` nowhere
  auto [x, t] = batch(3, g->rank());
  nn::functional::mse_loss(ddp.forward(x), t).backward();

  std::vector<std::vector<Tensor>> local(2);
  for (int r = 0; r < 2; ++r) {
    ref->zero_grad();
    ref->use_spare = r == 0;
    auto [xr, tr] = batch(3, r);
    nn::functional::mse_loss(ref->forward(xr), tr).backward();
    for (const Tensor& p : ref->parameters()) local[r].push_back(p.grad().defined() ? p.grad().clone() : Tensor());
  }
  auto names = net->named_parameters();
  size_t i = 0;
  for (const auto& [name, p] : names) {
    INFO(name);
    if (name.rfind("idle", 0) == 0) {
      CHECK_FALSE(p.grad().defined());  // no rank used it: left alone
    } else if (name.rfind("spare", 0) == 0) {
      CHECK_FALSE(local[1][i].defined());
      CHECK(bitwise_equal(p.grad(), mul(local[0][i], 0.5)));  // (g + 0) / 2
    } else {
      CHECK(bitwise_equal(p.grad(), mul(add(local[0][i], local[1][i]), 0.5)));
    }
    ++i;
  }
  CHECK(i == 8);
}

TEST_CASE("DDP without find_unused_parameters names the parameters that got no gradient", "[dist][ddp]") {
  auto g = dist::default_group();
  auto net = make_net(31, true);  // spare and idle never used
  dist::DistributedDataParallel ddp(net, g);
  auto [x, t] = batch(4, g->rank());
  CHECK_THROWS_WITH(nn::functional::mse_loss(ddp.forward(x), t).backward(),
                    Catch::Contains("DistributedDataParallel") && Catch::Contains("spare.weight") &&
                        Catch::Contains("idle.bias") && Catch::Contains("find_unused_parameters"));
  // The iteration was reset: the next backward fails the same way, not with "received twice".
  net->zero_grad();
  CHECK_THROWS_WITH(nn::functional::mse_loss(ddp.forward(x), t).backward(),
                    !Catch::Contains("twice") && Catch::Contains("4 did not: spare.weight"));
}

TEST_CASE("an inf in one rank's local gradient makes every rank skip the step and back off", "[dist][ddp][amp]") {
  auto g = dist::default_group();
  auto net = make_net(41);
  dist::DistributedDataParallel ddp(net, g, dist::DDPOptions().first_bucket_bytes(64).bucket_cap_bytes(128));
  optim::SGD opt(net->parameters(), optim::SGDOptions(0.1));
  amp::GradScaler scaler(amp::GradScalerOptions().init_scale_(1024.0).growth_interval_(1000));
  bool poison = false;
  if (g->rank() == 0)  // before accumulation, so before the allreduce: only rank 0's local gradient
    net->fc1->parameters()[1].register_hook([&](const Tensor& grad) {
      if (!poison) return Tensor();
      Tensor bad = grad.clone();
      bad.data_ptr<float>()[2] = INFINITY;
      return bad;
    });
  for (int step = 0; step < 3; ++step) {
    poison = step == 1;
    std::vector<Tensor> before;
    for (const Tensor& p : net->parameters()) before.push_back(p.detach().clone());
    opt.zero_grad();
    auto [x, t] = batch(step, g->rank());
    scaler.scale(nn::functional::mse_loss(ddp.forward(x), t)).backward();
    const Tensor b1 = net->fc1->parameters()[1].grad();
    CHECK(std::isinf(b1.to_vector<float>()[2]) == poison);  // on both ranks after the reduction
    auto res = scaler.step(opt);
    scaler.update();
    INFO("rank " << g->rank() << " step " << step);
    CHECK(res.found_inf == poison);
    CHECK(res.stepped == !poison);
    CHECK(scaler.get_scale() == (step == 0 ? 1024.0 : 512.0));
    CHECK(params_equal(net->parameters(), before) == poison);
    for (const Tensor& p : net->parameters()) CHECK(same_on_all_ranks(*g, p));
  }
  CHECK(scaler.skipped_steps() == 1);
}

TEST_CASE("a DDP checkpoint written by rank 0 resumes on 2 ranks to the uninterrupted run", "[dist][ddp]") {
  auto g = dist::default_group();
  auto train = [&](dist::DistributedDataParallel<Net>& ddp, optim::SGD& opt, int from, int to) {
    for (int step = from; step < to; ++step) {
      opt.zero_grad();
      auto [x, t] = batch(step, g->rank());
      nn::functional::mse_loss(ddp.forward(x), t).backward();
      opt.step();
    }
  };
  auto sgd = optim::SGDOptions(0.05).momentum(0.9);
  auto ddp_opts = dist::DDPOptions().first_bucket_bytes(64).bucket_cap_bytes(128);
  // Uninterrupted: 4 steps.
  dist::DistributedDataParallel full(make_net(51), g, ddp_opts);
  optim::SGD full_opt(full.parameters(), sgd);
  train(full, full_opt, 0, 4);

  // Interrupted after 2 steps: rank 0 alone writes the checkpoint, into a directory it names.
  std::vector<Tensor> pids;
  g->allgather(pids, from_vector<int64_t>({static_cast<int64_t>(::getpid())}))->wait();
  const std::string path = std::filesystem::temp_directory_path().string() + "/minidl_ddp_ckpt_" +
                           std::to_string(pids[0].item_int()) + ".safetensors";
  {
    dist::DistributedDataParallel first(make_net(51), g, ddp_opts);
    optim::SGD opt(first.parameters(), sgd);
    train(first, opt, 0, 2);
    if (g->rank() == 0) {
      Checkpoint ck;
      ck.put("model", first.module()->state_dict());
      ck.put("optim", opt.state_dict());
      ck.save(path);
    }
    g->barrier()->wait();
  }
  // Resume: every rank loads the file into a model initialized differently on each rank.
  auto net = make_net(900 + static_cast<uint64_t>(g->rank()));
  Checkpoint ck = Checkpoint::load(path);
  net->load_state_dict(ck.tensors_under("model"));
  dist::DistributedDataParallel resumed(net, g, ddp_opts);
  optim::SGD opt(resumed.parameters(), sgd);
  opt.load_state_dict(ck.state_dict("optim"));
  train(resumed, opt, 2, 4);
  g->barrier()->wait();
  if (g->rank() == 0) std::filesystem::remove(path);
  CHECK(params_equal(net->parameters(), full.module()->parameters()));
  for (const Tensor& p : net->parameters()) CHECK(same_on_all_ranks(*g, p));
}
