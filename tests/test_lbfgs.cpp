// optim::LBFGS against torch 1.13's trajectories (tests/torch_refs/lbfgs.py): three steps of a fixed
// step size with a short history, the strong-Wolfe line search (to convergence, and cut by max_eval),
// and the defaults; the returned loss, the parameters and the evaluation counts after every step.
// Also f32 parameters, state_dict, and errors.
#include <catch2/catch.hpp>

#include "minidl.h"
#include "gradcheck.h"
#include "lbfgs_torch_values.h"
#include "sine_operands.h"

using namespace minidl;
using Catch::Contains;
using testing::check_printed_values;
using testing::sine_operand;

namespace {
const Tensor kM = sine_operand(20, {4, 3}), kC = sine_operand(21, {4});

Tensor objective(const Tensor& p1, const Tensor& p2) {
  const Tensor a = p1.select(0, 0), b = p1.select(0, 1);
  Tensor rosen = add(pow(rsub(a, 1.0), 2.0), mul(pow(sub(b, pow(a, 2.0)), 2.0), 5.0));
  Tensor squares = sum(pow(sub(matmul(kM.to(p2.dtype()), p2), kC.to(p2.dtype())), 2.0));
  return add(add(add(rosen, squares), mul(sum(pow(p2, 4.0)), 0.1)), mul(mul(a, sum(p2)), 0.3));
}

struct Problem {
  Tensor p1, p2;
  explicit Problem(DType dtype = DType::F64)
      : p1(mul(sine_operand(0, {2}), 0.5).to(dtype).requires_grad_()), p2(sine_operand(1, {3}).to(dtype).requires_grad_()) {}
  std::function<Tensor()> closure(optim::LBFGS& opt) {
    return [this, &opt] {
      opt.zero_grad();
      Tensor loss = objective(p1, p2);
      loss.backward();
      return loss;
    };
  }
  Tensor flat() const { return cat({p1.detach(), p2.detach()}); }
};

const std::vector<std::pair<std::string, optim::LBFGSOptions>>& cases() {
  static const std::vector<std::pair<std::string, optim::LBFGSOptions>> c{
      {"plain", optim::LBFGSOptions(0.5).max_iter(5).history_size(3)},
      {"wolfe", optim::LBFGSOptions(1).max_iter(10).line_search_fn("strong_wolfe")},
      {"wolfe_short", optim::LBFGSOptions(1).max_iter(4).max_eval(6).history_size(2).line_search_fn("strong_wolfe")},
      {"defaults", optim::LBFGSOptions()},
  };
  return c;
}
}  // namespace

TEST_CASE("LBFGS follows torch's trajectories: losses, parameters, evaluation counts", "[optim][lbfgs]") {
  const auto& want = torch_lbfgs_values();
  for (const auto& [key, options] : cases()) {
    INFO(key);
    Problem prob;
    optim::LBFGS opt({prob.p1, prob.p2}, options);
    for (int k = 0; k < 3; ++k) {
      INFO("step " << k);
      const std::string at = key + ".step" + std::to_string(k);
      Tensor loss = opt.step(prob.closure(opt));
      check_printed_values(loss.reshape({1}), want.at(at + ".loss"));
      check_printed_values(prob.flat(), want.at(at + ".params"));
      CHECK(std::vector<double>{static_cast<double>(opt.func_evals()), static_cast<double>(opt.n_iter())} ==
            want.at(at + ".counts"));
    }
  }
}

TEST_CASE("LBFGS in f32 follows the f64 trajectory to f32 accuracy; state_dict; errors", "[optim][lbfgs]") {
  Problem p64, p32(DType::F32);
  const auto options = optim::LBFGSOptions(1).max_iter(10).line_search_fn("strong_wolfe");
  optim::LBFGS a({p64.p1, p64.p2}, options), b({p32.p1, p32.p2}, options);
  a.step(p64.closure(a));
  b.step(p32.closure(b));
  CHECK(testing::max_abs_diff(p32.flat(), p64.flat()) < 1e-4);
  CHECK(p32.p1.dtype() == DType::F32);
  // The hyper-parameters and the iteration count go into the state dict, PyTorch's None included.
  const StateDict sd = b.state_dict();
  const std::string meta = sd.meta.dump();
  CHECK_THAT(meta, Contains("\"line_search_fn\":\"strong_wolfe\"") && Contains("\"max_eval\":12") && Contains("\"step\":10"));
  optim::LBFGS c({Problem().p1, Problem().p2}, optim::LBFGSOptions());
  CHECK_THAT(c.state_dict().meta.dump(), Contains("\"line_search_fn\":null"));
  // Errors.
  Problem q;
  optim::LBFGS d({q.p1, q.p2});
  CHECK_THROWS_WITH(d.step(), Contains("LBFGS: step needs a closure"));
  CHECK_THROWS_WITH(optim::LBFGS({q.p1}, optim::LBFGSOptions().line_search_fn("armijo")), Contains("only 'strong_wolfe' is supported"));
  CHECK_THROWS_WITH(optim::LBFGS({q.p1, q.p2.detach().to(DType::F32).requires_grad_()}), Contains("one dtype on one device"));
  CHECK_THROWS_WITH(optim::LBFGS({q.p1}, optim::LBFGSOptions(0)), Contains("Invalid learning rate"));
  // A stationary start: one evaluation, nothing moves.
  Tensor flat = zeros({3}, DType::F64).requires_grad_();
  optim::LBFGS e({flat});
  e.step([&] {
    e.zero_grad();
    Tensor l = sum(mul(flat, flat));
    l.backward();
    return l;
  });
  CHECK(e.func_evals() == 1);
  CHECK(e.n_iter() == 0);
}
