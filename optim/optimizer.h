// optim::Optimizer: the base of SGD, Adam and AdamW (torch.optim.Optimizer). Parameters live in
// param groups, each with its own hyper-parameters (an options struct, e.g. SGDOptions); state is
// kept per parameter (step count and named buffers such as "momentum_buffer" or "exp_avg", in the
// parameter's dtype and device, as PyTorch). state_dict() captures hyper-parameters, step counts
// and buffers so a run resumes bit-identically; parameters are identified by their position across
// the groups, as in PyTorch.
//
//   optim::SGD opt(model->parameters(), optim::SGDOptions(0.05).momentum(0.9));
//   optim::Adam opt({optim::ParamGroup(body->parameters()),                         // defaults
//                    optim::ParamGroup(head->parameters(), optim::AdamOptions(1e-2))},
//                   optim::AdamOptions(1e-3));
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "framework/json.h"
#include "serialize/serialize.h"
#include "ops/tensor.h"
#include "serialize/tensor_dict.h"

namespace minidl::optim {

// Hyper-parameters of one param group. Every optimizer's options derive from it; the learning
// rate is common to all so schedulers can read and set it.
struct OptimizerOptions {
  double lr_ = 1e-3;  // learning rate

  virtual ~OptimizerOptions() = default;
  double get_lr() const { return lr_; }
  void set_lr(double lr) { lr_ = lr; }
  virtual std::unique_ptr<OptimizerOptions> clone() const = 0;
  // All hyper-parameters as a JSON object ({"lr": ..., "momentum": ...}) and back.
  virtual Json to_json() const = 0;
  virtual void from_json(const Json& j) = 0;
};

struct ParamGroup {
  std::vector<Tensor> params;
  std::shared_ptr<OptimizerOptions> options;  // null: the optimizer's defaults (filled in by it)
  std::optional<double> initial_lr;           // set by the first LR scheduler (PyTorch's group["initial_lr"])

  ParamGroup(std::vector<Tensor> params) : params(std::move(params)) {}  // NOLINT: implicit
  template <class O>
    requires std::is_base_of_v<OptimizerOptions, O>
  ParamGroup(std::vector<Tensor> params, const O& options) : params(std::move(params)), options(options.clone()) {}
  ParamGroup(const ParamGroup& o);  // deep-copies the options
  ParamGroup& operator=(const ParamGroup& o);
  ParamGroup(ParamGroup&&) = default;
  ParamGroup& operator=(ParamGroup&&) = default;

  double lr() const { return options->lr_; }
};

// Per-parameter state.
struct ParamState {
  int64_t step = 0;      // completed optimizer steps for this parameter
  TensorDict buffers;    // e.g. "momentum_buffer", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // Updates every parameter that has a gradient (without recording a graph).
  virtual void step() = 0;
  // "SGD", "Adam", ...
  const std::string& name() const { return name_; }

  // Clears the gradients of all parameters: undefined (set_to_none) or zero-filled.
  void zero_grad(bool set_to_none = true);

  // Adds a group (options null: the defaults). A parameter may belong to one group only.
  void add_param_group(ParamGroup group);
  std::vector<ParamGroup>& param_groups() { return groups_; }
  const std::vector<ParamGroup>& param_groups() const { return groups_; }
  const OptimizerOptions& defaults() const { return *defaults_; }
  // Every parameter, group by group (what GradScaler unscales).
  std::vector<Tensor> parameters() const;

  // The state of one parameter (created empty on first access); has_state says whether it exists.
  ParamState& state(const Tensor& param);
  bool has_state(const Tensor& param) const;

  // tensors: "state.<index>.<buffer>"; meta: {"optimizer": name, "param_groups": [{hyper-parameters,
  // "initial_lr"?, "params": [indices]}], "state": {"<index>": {"step": n}}}, with indices counted
  // over all groups in order.
  StateDict state_dict() const;
  // Restores hyper-parameters, step counts and buffers (cast to each parameter's dtype and device).
  // The groups must have the same sizes as when saved; errors follow PyTorch's wording.
  void load_state_dict(const StateDict& state);

 protected:
  // A buffer name whose state is one value per parameter, kept as a 0-dim f32 CPU tensor (NAdam's
  // "mu_product"); every other buffer has its parameter's shape.
  virtual bool is_scalar_state(const std::string& /*buffer*/) const { return false; }
  // Refuses an empty list of groups (PyTorch: "optimizer got an empty parameter list").
  Optimizer(std::string name, std::vector<ParamGroup> groups, std::unique_ptr<OptimizerOptions> defaults);
  // The groups of a plain parameter list: one group, or none when the list is empty (an error, as
  // torch.optim.SGD([]) is).
  static std::vector<ParamGroup> single_group(std::vector<Tensor> params);
  template <class O>
  static const O& options_of(const ParamGroup& g) {
    return static_cast<const O&>(*g.options);
  }

 private:
  std::string name_;
  std::vector<ParamGroup> groups_;
  std::unique_ptr<OptimizerOptions> defaults_;
  std::unordered_map<const TensorImpl*, ParamState> state_;
};

}  // namespace minidl::optim
