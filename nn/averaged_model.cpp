// AveragedModel and update_bn's batch-norm state.
#include "nn/averaged_model.h"

#include "framework/error.h"
#include "ops/ops.h"

namespace minidl::nn {

AverageFn swa_average() {
  return [](const Tensor& averaged, const Tensor& current, int64_t n) {
    return add(averaged, div(sub(current, averaged), static_cast<double>(n + 1)));
  };
}

AverageFn ema_average(double decay) {
  MINIDL_CHECK(decay >= 0.0 && decay <= 1.0, "ema_average", "decay must be in [0, 1], got ", decay);
  return [decay](const Tensor& averaged, const Tensor& current, int64_t) {
    return add(mul(averaged, decay), mul(current, 1.0 - decay));
  };
}

namespace {
// The model's parameters (and, when asked, its buffers), in order, defined slots only.
std::vector<Tensor> averaged_tensors(const Module& m, bool with_buffers) {
  std::vector<Tensor> out = m.parameters();
  if (with_buffers)
    for (const Tensor& b : m.buffers()) out.push_back(b);
  return out;
}

void check_same_layout(const std::vector<Tensor>& mine, const std::vector<Tensor>& theirs, const char* what) {
  MINIDL_CHECK(mine.size() == theirs.size(), "AveragedModel::update_parameters", "the model has ", theirs.size(), " ",
               what, ", the average ", mine.size());
  for (size_t i = 0; i < mine.size(); ++i)
    MINIDL_CHECK(mine[i].shape() == theirs[i].shape(), "AveragedModel::update_parameters", what, " '", theirs[i].name(),
                 "' has shape ", shape_str(theirs[i].shape()), " in the model but ", shape_str(mine[i].shape()),
                 " in the average");
}
}  // namespace

AveragedModelBase::AveragedModelBase(const Module& model, const AveragedModelOptions& options)
    : avg_fn_(options.avg_fn_ ? options.avg_fn_ : swa_average()), use_buffers_(options.use_buffers_) {
  copy_ = register_module("module", model.deep_copy(options.device_));  // PyTorch's deepcopy(model)
  n_averaged = register_buffer("n_averaged", zeros({}, TensorOptions(DType::I64).device(options.device_.value_or(Device::cpu()))));
}

void AveragedModelBase::update_parameters(const Module& model) {
  NoGradGuard no_grad;
  const std::vector<Tensor> mine = averaged_tensors(*copy_, use_buffers_), theirs = averaged_tensors(model, use_buffers_);
  check_same_layout(mine, theirs, use_buffers_ ? "parameters and buffers" : "parameters");
  const int64_t n = num_averaged();
  for (size_t i = 0; i < mine.size(); ++i) {
    const Tensor current = theirs[i].detach().to(mine[i].device());
    mine[i].copy_(n == 0 ? current : avg_fn_(mine[i].detach(), current, n));
  }
  // Without averaging them, the buffers follow the model (PyTorch 2.x; 1.13 left them at their
  // values from construction, so that only update_bn refreshed them).
  if (!use_buffers_) {
    const std::vector<Tensor> my_buffers = copy_->buffers(), their_buffers = model.buffers();
    check_same_layout(my_buffers, their_buffers, "buffers");
    for (size_t i = 0; i < my_buffers.size(); ++i) my_buffers[i].copy_(their_buffers[i].detach().to(my_buffers[i].device()));
  }
  n_averaged.add_(ones({}, TensorOptions(DType::I64).device(n_averaged.device())));
}

namespace detail {

BatchNormRecompute::BatchNormRecompute(Module& model) : model_(model), was_training_(model.is_training()) {
  for (const ModulePtr& m : model.modules()) {
    auto bn = std::dynamic_pointer_cast<BatchNorm>(m);
    if (!bn || !bn->running_mean.defined()) continue;  // no running statistics to recompute
    NoGradGuard no_grad;
    bn->running_mean.zero_();
    bn->running_var.fill_(1.0);
    bn->num_batches_tracked.zero_();
    saved_.emplace_back(bn, bn->momentum());
    bn->set_momentum(std::nullopt);
  }
  if (!saved_.empty()) model.train();
}

BatchNormRecompute::~BatchNormRecompute() {
  for (auto& [bn, momentum] : saved_) bn->set_momentum(momentum);
  if (!saved_.empty()) model_.train(was_training_);
}

}  // namespace detail
}  // namespace minidl::nn
