// optim::SGD: options, validation and the step, one foreach SGD call per group (ops/foreach.h).
#include "optim/sgd.h"

#include "framework/grad_mode.h"
#include "framework/error.h"
#include "ops/foreach.h"
#include "ops/ops.h"

namespace minidl::optim {

Json SGDOptions::to_json() const {
  Json j = Json::object();
  j["lr"] = lr_;
  j["momentum"] = momentum_;
  j["dampening"] = dampening_;
  j["weight_decay"] = weight_decay_;
  j["nesterov"] = nesterov_;
  j["maximize"] = maximize_;
  return j;
}

void SGDOptions::from_json(const Json& j) {
  lr_ = j.get("lr", lr_);
  momentum_ = j.get("momentum", momentum_);
  dampening_ = j.get("dampening", dampening_);
  weight_decay_ = j.get("weight_decay", weight_decay_);
  nesterov_ = j.get("nesterov", nesterov_);
  maximize_ = j.get("maximize", maximize_);
}

namespace {
void validate(const SGDOptions& o) {
  MINIDL_CHECK(o.lr_ >= 0.0, "SGD", "Invalid learning rate: ", o.lr_);
  MINIDL_CHECK(o.momentum_ >= 0.0, "SGD", "Invalid momentum value: ", o.momentum_);
  MINIDL_CHECK(o.weight_decay_ >= 0.0, "SGD", "Invalid weight_decay value: ", o.weight_decay_);
  MINIDL_CHECK(!o.nesterov_ || (o.momentum_ > 0.0 && o.dampening_ == 0.0), "SGD",
               "Nesterov momentum requires a momentum and zero dampening");
}
}  // namespace

SGD::SGD(std::vector<ParamGroup> groups, const SGDOptions& defaults)
    : Optimizer("SGD", std::move(groups), defaults.clone()) {
  for (const auto& g : param_groups()) validate(options_of<SGDOptions>(g));
}

void SGD::step() {
  NoGradGuard ng;
  for (const auto& group : param_groups()) {
    const auto& o = options_of<SGDOptions>(group);
    const SgdHyper h{o.lr_, o.momentum_, o.dampening_, o.weight_decay_, o.nesterov_, o.maximize_};
    // [0]: parameters whose momentum buffer exists (or that have none); [1]: those whose buffer is
    // created by this step (it receives d itself).
    std::vector<Tensor> params[2], grads[2], buffers[2];
    for (const Tensor& param : group.params) {
      if (!param.grad().defined()) continue;
      const Tensor p = param.detach();
      Tensor g = param.grad().detach();
      if (g.dtype() != p.dtype()) g = g.to(p.dtype());
      ParamState& st = state(param);
      int first = 0;
      if (o.momentum_ != 0.0) {
        const Tensor* b = st.buffers.find("momentum_buffer");
        first = b ? 0 : 1;
        Tensor buf = b ? *b : empty(p.shape(), TensorOptions(p.dtype()).device(p.device()));
        if (first) st.buffers.set("momentum_buffer", buf);
        buffers[first].push_back(buf);
      }
      params[first].push_back(p);
      grads[first].push_back(g);
      ++st.step;
    }
    for (int first = 0; first < 2; ++first)
      if (!params[first].empty()) foreach_sgd_(params[first], grads[first], buffers[first], first == 1, h);
  }
}

}  // namespace minidl::optim
