// Weight averaging (torch.optim.swa_utils): AveragedModel keeps a running average of a model's
// parameters (stochastic weight averaging, or an exponential moving average with ema_average),
// and update_bn recomputes the batch-norm statistics of the averaged weights with one pass over
// the training data. SWALR, the learning-rate schedule that goes with them, is in optim/swalr.h.
//
//   auto swa = std::make_shared<nn::AveragedModel<nn::SmallCNN>>(model);
//   optim::SWALR swa_sched(opt, /*swa_lr=*/0.05);
//   for (int epoch = 0; epoch < epochs; ++epoch) {
//     ... train one epoch ...
//     if (epoch >= swa_start) { swa->update_parameters(*model); swa_sched.step(); }
//   }
//   nn::update_bn(train_loader, *swa);       // batch norm statistics of the averaged weights
//   Tensor logits = nn::call(swa, images);   // evaluate the average
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "framework/grad_mode.h"
#include "nn/conv.h"
#include "nn/module.h"

namespace minidl::nn {

// avg_fn(averaged, current, num_averaged): the new averaged value of one tensor, given how many
// models the average holds so far (>= 1 when it is called). Runs under no-grad.
using AverageFn = std::function<Tensor(const Tensor& averaged, const Tensor& current, int64_t num_averaged)>;
// The equal-weight running mean, averaged + (current - averaged) / (num_averaged + 1): PyTorch's
// default.
AverageFn swa_average();
// decay * averaged + (1 - decay) * current: PyTorch 2.1's get_ema_avg_fn(decay); decay in [0, 1].
AverageFn ema_average(double decay);

struct AveragedModelOptions {
  std::optional<Device> device_;  // where the copy lives (default: where the model's tensors are)
  AverageFn avg_fn_;              // default: swa_average()
  bool use_buffers_ = false;      // average the buffers too (else they are copied from the model)

  AveragedModelOptions& device(Device d) { device_ = d; return *this; }
  AveragedModelOptions& avg_fn(AverageFn f) { avg_fn_ = std::move(f); return *this; }
  AveragedModelOptions& use_buffers(bool on = true) { use_buffers_ = on; return *this; }
};

// The part of AveragedModel that does not depend on the model's type.
class AveragedModelBase : public Module {
 public:
  // Folds `model`'s current parameters into the average (the first call copies them). With
  // use_buffers the buffers are averaged too; without, they are copied from `model`. The two
  // modules must have the same parameters and buffers, in the same order and shapes.
  void update_parameters(const Module& model);
  // How many models the average holds (the "n_averaged" buffer).
  int64_t num_averaged() const { return n_averaged.item_int(); }
  std::string type_name() const override { return "AveragedModel"; }

  Tensor n_averaged;  // i64 0-dim, in the state dict as PyTorch's

 protected:
  AveragedModelBase(const Module& model, const AveragedModelOptions& options);
  // The copy the average lives in, registered as "module" (PyTorch's deepcopy(model)).
  ModulePtr copy_;

 private:
  AverageFn avg_fn_;
  bool use_buffers_;
};

// An averaged copy of a model of type M, used as the model itself: forward runs the copy. M
// provides clone_structure() (every built-in layer and model does; nn::Cloneable gives it to a
// user module), as for DataParallel replicas.
template <class M>
class AveragedModel : public AveragedModelBase {
 public:
  explicit AveragedModel(const std::shared_ptr<M>& model, const AveragedModelOptions& options = {})
      : AveragedModelBase(*model, options), module(std::static_pointer_cast<M>(copy_)) {}

  template <class... Args>
  decltype(auto) forward(Args&&... args) {
    return call(*module, std::forward<Args>(args)...);
  }

  std::shared_ptr<M> module;
};

namespace detail {
// Puts every BatchNorm of a model into PyTorch's update_bn state (statistics reset, momentum None
// so they become the cumulative average, counts zeroed, training mode) and restores momentum and
// the model's mode when it goes out of scope.
class BatchNormRecompute {
 public:
  explicit BatchNormRecompute(Module& model);
  ~BatchNormRecompute();
  BatchNormRecompute(const BatchNormRecompute&) = delete;
  BatchNormRecompute& operator=(const BatchNormRecompute&) = delete;
  bool empty() const { return saved_.empty(); }

 private:
  Module& model_;
  bool was_training_;
  std::vector<std::pair<std::shared_ptr<BatchNorm>, std::optional<double>>> saved_;
};

template <class B>
Tensor batch_input(const B& batch) {
  if constexpr (std::is_convertible_v<const B&, const Tensor&>) return batch;
  else if constexpr (requires { batch.data; }) return batch.data;  // a DataLoader's Batch
  else return std::get<0>(batch);                                   // a pair or tuple: its first
}
}  // namespace detail

// torch.optim.swa_utils.update_bn: recomputes the running statistics of every BatchNorm in `model`
// as the plain average over one pass of `loader` (any range of batches: tensors, DataLoader
// batches, or pairs whose first element is the input), moving each input to `device` when given.
// Nothing happens for a model without batch norm. The batch norms keep their momentum and the
// model its training mode afterwards.
template <class Loader, class M>
void update_bn(Loader& loader, M& model, std::optional<Device> device = std::nullopt) {
  detail::BatchNormRecompute recompute(model);
  if (recompute.empty()) return;
  NoGradGuard no_grad;
  for (const auto& batch : loader) {
    Tensor input = detail::batch_input(batch);
    if (device) input = input.to(*device);
    call(model, input);
  }
}

}  // namespace minidl::nn
