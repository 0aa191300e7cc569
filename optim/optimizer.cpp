// optim::Optimizer: groups, per-parameter state, zero_grad, state dicts.
#include "optim/optimizer.h"

#include <typeinfo>
#include <unordered_set>

#include "framework/grad_mode.h"
#include "framework/error.h"
#include "ops/ops.h"

namespace minidl::optim {

ParamGroup::ParamGroup(const ParamGroup& o)
    : params(o.params), options(o.options ? std::shared_ptr<OptimizerOptions>(o.options->clone()) : nullptr),
      initial_lr(o.initial_lr) {}

ParamGroup& ParamGroup::operator=(const ParamGroup& o) {
  if (this != &o) *this = ParamGroup(o);
  return *this;
}

namespace {
// A parameter index written as text ("12"), or an error naming the state dict entry.
size_t parse_index(const std::string& text, const std::string& op, const std::string& what) {
  size_t pos = 0;
  unsigned long long v = 0;
  try {
    v = std::stoull(text, &pos);
  } catch (const std::exception&) {
    pos = 0;
  }
  MINIDL_CHECK(pos == text.size() && !text.empty() && text[0] != '-', op, "malformed parameter index '", text, "' in ", what);
  return static_cast<size_t>(v);
}
}  // namespace

Optimizer::Optimizer(std::string name, std::vector<ParamGroup> groups, std::unique_ptr<OptimizerOptions> defaults)
    : name_(std::move(name)), defaults_(std::move(defaults)) {
  MINIDL_CHECK(!groups.empty(), name_, "optimizer got an empty parameter list");
  for (auto& g : groups) add_param_group(std::move(g));
}

std::vector<ParamGroup> Optimizer::single_group(std::vector<Tensor> params) {
  std::vector<ParamGroup> groups;
  if (!params.empty()) groups.emplace_back(std::move(params));
  return groups;
}

void Optimizer::add_param_group(ParamGroup group) {
  const std::string op = name() + "::add_param_group";
  if (!group.options) group.options = defaults_->clone();
  const OptimizerOptions &given = *group.options, &defaults = *defaults_;  // typeid of plain references: no side effects
  MINIDL_CHECK(typeid(given) == typeid(defaults), op, "a param group's options are not ", name(),
               "'s options type");
  std::unordered_set<const TensorImpl*> existing;
  for (const auto& g : groups_)
    for (const auto& p : g.params) existing.insert(p.impl());
  std::unordered_set<const TensorImpl*> mine;
  for (const Tensor& p : group.params) {
    MINIDL_CHECK(p.defined(), op, "a parameter is an undefined tensor");
    MINIDL_CHECK(p.is_leaf(), op, "can't optimize a non-leaf Tensor (", p.name().empty() ? p.meta_str() : p.name(), ")");
    MINIDL_CHECK(p.is_floating_point(), op, "can only optimize floating point tensors, got ", p.meta_str());
    MINIDL_CHECK(!existing.count(p.impl()), op, "some parameters appear in more than one parameter group");
    MINIDL_CHECK(mine.insert(p.impl()).second, op, "a parameter group contains the same parameter twice (",
                 p.name().empty() ? p.meta_str() : p.name(), ")");
  }
  groups_.push_back(std::move(group));
}

std::vector<Tensor> Optimizer::parameters() const {
  std::vector<Tensor> out;
  for (const auto& g : groups_) out.insert(out.end(), g.params.begin(), g.params.end());
  return out;
}

ParamState& Optimizer::state(const Tensor& param) { return state_[param.impl()]; }
bool Optimizer::has_state(const Tensor& param) const { return state_.count(param.impl()) != 0; }

void Optimizer::zero_grad(bool set_to_none) {
  NoGradGuard ng;
  for (const auto& g : groups_)
    for (Tensor p : g.params) {
      Tensor grad = p.grad();
      if (!grad.defined()) continue;
      if (set_to_none) {
        p.set_grad(Tensor());
      } else {
        Tensor z = grad.detach();
        z.zero_();
        p.set_grad(z);
      }
    }
}

StateDict Optimizer::state_dict() const {
  StateDict sd;
  sd.meta["optimizer"] = name();
  Json groups = Json::array();
  Json states = Json::object();
  int64_t index = 0;
  for (const auto& g : groups_) {
    Json gj = g.options->to_json();
    if (g.initial_lr) gj["initial_lr"] = *g.initial_lr;
    Json ids = Json::array();
    for (const Tensor& p : g.params) {
      ids.push_back(index);
      auto it = state_.find(p.impl());
      if (it != state_.end()) {
        const std::string key = std::to_string(index);
        Json sj = Json::object();
        sj["step"] = it->second.step;
        states[key] = std::move(sj);
        for (const auto& [bname, buf] : it->second.buffers) sd.tensors.insert("state." + key + "." + bname, buf.detach());
      }
      ++index;
    }
    gj["params"] = std::move(ids);
    groups.push_back(std::move(gj));
  }
  sd.meta["param_groups"] = std::move(groups);
  sd.meta["state"] = std::move(states);
  return sd;
}

void Optimizer::load_state_dict(const StateDict& sd) {
  const std::string op = name() + "::load_state_dict";
  if (const Json* n = sd.meta.find("optimizer"))
    MINIDL_CHECK(n->as_string() == name(), op, "the state dict was saved by ", n->as_string(), ", not ", name());
  const Json* groups = sd.meta.find("param_groups");
  MINIDL_CHECK(groups && groups->is_array(), op, "the state dict has no \"param_groups\" list");
  MINIDL_CHECK(groups->size() == groups_.size(), op, "loaded state dict has a different number of parameter groups (",
               groups->size(), " vs ", groups_.size(), ")");
  // Validate everything before changing anything.
  std::vector<Tensor> params;  // by saved index
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    const Json& gj = (*groups)[gi];
    const Json* ids = gj.find("params");
    MINIDL_CHECK(ids && ids->is_array(), op, "param group ", gi, " has no \"params\" list");
    MINIDL_CHECK(ids->size() == groups_[gi].params.size(), op,
                 "loaded state dict contains a parameter group that doesn't match the size of optimizer's group (group ",
                 gi, ": ", ids->size(), " vs ", groups_[gi].params.size(), " parameters)");
    for (size_t k = 0; k < ids->size(); ++k) {
      const int64_t id = (*ids)[k].as_int();
      MINIDL_CHECK(id >= 0 && id < 1'000'000'000, op, "invalid parameter index ", id);
      if (static_cast<size_t>(id) >= params.size()) params.resize(static_cast<size_t>(id) + 1);
      params[static_cast<size_t>(id)] = groups_[gi].params[k];
    }
  }
  std::unordered_map<const TensorImpl*, ParamState> new_state;
  const Json* states = sd.meta.find("state");
  if (states && states->is_object()) {
    for (const auto& [key, sj] : states->members()) {
      const size_t id = parse_index(key, op, "\"state\"");
      MINIDL_CHECK(id < params.size() && params[id].defined(), op, "state for unknown parameter index ", key);
      ParamState ps;
      ps.step = sj.get("step", int64_t{0});
      new_state[params[id].impl()] = std::move(ps);
    }
  }
  NoGradGuard ng;
  for (const auto& [tname, t] : sd.tensors) {
    // "state.<index>.<buffer>"
    MINIDL_CHECK(tname.rfind("state.", 0) == 0, op, "unexpected tensor '", tname, "' in the state dict");
    const size_t dot = tname.find('.', 6);
    MINIDL_CHECK(dot != std::string::npos, op, "malformed state tensor name '", tname, "'");
    const size_t id = parse_index(tname.substr(6, dot - 6), op, "tensor '" + tname + "'");
    MINIDL_CHECK(id < params.size() && params[id].defined(), op, "state tensor '", tname, "' names an unknown parameter");
    const Tensor& p = params[id];
    // A 0-dim state (NAdam's mu_product) is a per-parameter scalar that the step reads on the host:
    // it stays an f32 CPU tensor, as its optimizer created it.
    const bool scalar_state = is_scalar_state(tname.substr(dot + 1));
    const Shape want = scalar_state ? Shape{} : p.shape();
    MINIDL_CHECK(t.shape() == want, op, "state tensor '", tname, "' has shape ", shape_str(t.shape()), " but ",
                 scalar_state ? "a scalar state has shape []" : "the parameter has shape " + shape_str(p.shape()));
    // Like PyTorch: floating state follows the parameter's dtype and device. Always a private copy.
    Tensor v = t.detach();
    if (v.is_floating_point()) v = v.to(scalar_state ? DType::F32 : p.dtype());
    v = v.to(scalar_state ? Device::cpu() : p.device());
    if (v.impl()->storage == t.impl()->storage) v = v.clone(MemoryFormat::Contiguous);
    new_state[p.impl()].buffers.set(tname.substr(dot + 1), v.contiguous());
  }
  // Hyper-parameters: the saved values replace the current ones (PyTorch).
  std::vector<std::shared_ptr<OptimizerOptions>> new_options;
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    new_options.push_back(groups_[gi].options->clone());
    new_options.back()->from_json((*groups)[gi]);
  }
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    groups_[gi].options = new_options[gi];
    const Json* il = (*groups)[gi].find("initial_lr");
    groups_[gi].initial_lr = il ? std::optional<double>(il->as_double()) : std::nullopt;
  }
  state_ = std::move(new_state);
}

}  // namespace minidl::optim
