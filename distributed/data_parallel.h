// dist::DataParallel: data parallelism inside one process, as torch.nn.DataParallel's
// scatter -> replicate -> parallel_apply -> gather. The input is split along dim 0 into one chunk
// per device (torch.chunk sizes: ceil(B / n), fewer chunks when B < n) and copied there; each
// chunk's forward runs on its own thread with the caller's autocast and grad state
// (amp::propagate_state: autocast state is per thread, so a thread would otherwise run without
// it), inside the module's forward scope (its own set_autocast holds); the outputs are copied to
// the output device (devices[0] by default) and concatenated on the caller's thread. Backward (on
// the caller's thread) accumulates every chunk's gradient into the original parameters.
//
// Two ways to run the chunks:
// - CPU devices (threads), the default there: every chunk runs the module itself, so the chunks
//   share the parameters and their gradients meet in the one .grad. The module's forward must be
//   safe to run concurrently (layers that update state in forward, such as batch norm's running
//   statistics in training mode, are not).
// - CUDA devices (several GPUs in one process), or replicate(true) with CPU devices (which runs the
//   same path on a machine without GPUs): the module must live on devices[0] and provide
//   clone_structure() (nn/module.h; every built-in layer and model does). The first chunk runs on
//   the module itself; every other device gets a replica, built once and refreshed before each
//   forward (distributed/replicate.h): its parameters are recorded copies of the module's, so
//   their gradients flow back into the module's .grad; its buffers are copies, and what it writes
//   into them is lost (as PyTorch: only devices[0]'s buffer updates are kept). The module's
//   structure must not change after DataParallel is built. A graph kept from an earlier forward
//   (two forwards, then one backward) reads the replicas as the latest forward refreshed them:
//   the same values, unless the module's parameters were changed in between (PyTorch's replicas
//   would keep the old values there).
//
//   dist::DataParallel dp(model, 2);                  // two threads
//   { amp::autocast scope(DeviceType::CPU); out = dp.forward(x); }   // bf16 on both threads
//   dist::DataParallel gpus(model, {Device::cuda(0), Device::cuda(1)});   // model on cuda:0
#pragma once
#include <algorithm>
#include <exception>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "autocast/state.h"
#include "distributed/replicate.h"
#include "framework/error.h"
#include "framework/grad_mode.h"
#include "nn/module.h"
#include "ops/node.h"
#include "ops/ops.h"

namespace minidl::dist {

struct DataParallelOptions {
  std::optional<Device> output_device_;  // where the outputs are gathered; devices[0] when unset
  bool replicate_ = false;               // replicate with CPU devices too (always on with CUDA devices)

  DataParallelOptions& output_device(Device d) { output_device_ = d; return *this; }
  DataParallelOptions& replicate(bool on = true) { replicate_ = on; return *this; }
};

template <class M>
class DataParallel {
 public:
  // devices: all CPU (one thread each) or all CUDA (a device may be listed twice: two replicas on
  // one GPU).
  DataParallel(std::shared_ptr<M> module, std::vector<Device> devices, DataParallelOptions options = {})
      : module_(std::move(module)), devices_(std::move(devices)) {
    MINIDL_CHECK(module_ != nullptr, "DataParallel", "needs a module");
    detail::check_data_parallel_devices(devices_);
    output_device_ = options.output_device_.value_or(devices_[0]);
    replicating_ = options.replicate_ || devices_[0].is_cuda();
    if (!replicating_) return;
    detail::check_module_on(*module_, devices_[0]);
    for (size_t i = 1; i < devices_.size(); ++i) {
      auto replica = std::dynamic_pointer_cast<M>(detail::make_replica_structure(*module_));
      MINIDL_CHECK(replica != nullptr, "DataParallel", module_->type_name(),
                   "::clone_structure() returned a module of another type");
      NoGradGuard no_grad;  // a trial binding: a replica that does not match fails here, not at the first forward
      detail::refresh_replica(*replica, *module_, devices_[i]);
      replicas_.push_back(std::move(replica));
    }
  }
  DataParallel(std::shared_ptr<M> module, int threads, DataParallelOptions options = {})
      : DataParallel(std::move(module), std::vector<Device>(static_cast<size_t>(std::max(threads, 0)), Device::cpu()),
                     options) {}

  Tensor forward(const Tensor& input) {
    MINIDL_CHECK(input.dim() >= 1 && input.size(0) >= 1, "DataParallel", "cannot scatter an input of shape ",
                 shape_str(input.shape()), " along dim 0");
    if (replicating_) detail::check_module_on(*module_, devices_[0]);
    const int64_t b = input.size(0), n = static_cast<int64_t>(devices_.size());
    const int64_t chunk = (b + n - 1) / n;
    std::vector<Tensor> inputs;
    for (int64_t start = 0; start < b; start += chunk)
      inputs.push_back(input.narrow(0, start, std::min(chunk, b - start)).to(devices_[inputs.size()]));
    if (inputs.size() == 1) return nn::call(*module_, inputs[0]).to(output_device_);
    // Who runs each chunk: the module itself, or (replicating) the first chunk on the module and
    // the others on replicas refreshed from it now, on this thread, so the copies are recorded
    // with the caller's grad mode.
    std::vector<M*> runners(inputs.size(), module_.get());
    if (replicating_)
      for (size_t i = 1; i < inputs.size(); ++i) {
        detail::refresh_replica(*replicas_[i - 1], *module_, devices_[i]);
        runners[i] = replicas_[i - 1].get();
      }
    // Create every parameter's gradient accumulator here and hold it, so the threads only read it.
    std::vector<autograd::Edge> accumulators;
    for (const Tensor& p : module_->parameters())
      if (p.requires_grad()) accumulators.push_back(autograd::gradient_edge(p));
    std::vector<Tensor> outputs(inputs.size());
    std::vector<std::exception_ptr> errors(inputs.size());
    auto run = [&](size_t i) {
      try {
        outputs[i] = nn::call(*runners[i], inputs[i]);  // in the module's scope (its set_autocast holds)
      } catch (...) {
        errors[i] = std::current_exception();
      }
    };
    std::vector<std::thread> threads;
    for (size_t i = 1; i < inputs.size(); ++i) threads.emplace_back(amp::propagate_state([&run, i] { run(i); }));
    run(0);  // the first chunk on the caller's thread
    for (auto& t : threads) t.join();
    for (auto& e : errors)
      if (e) std::rethrow_exception(e);
    for (Tensor& out : outputs) out = out.to(output_device_);
    return cat(outputs, 0);
  }
  Tensor operator()(const Tensor& input) { return forward(input); }

  const std::shared_ptr<M>& module() const { return module_; }
  const std::vector<Device>& devices() const { return devices_; }
  Device output_device() const { return output_device_; }
  // Whether chunks after the first run on replicas (CUDA devices, or replicate(true)).
  bool replicating() const { return replicating_; }
  // The replicas of devices[1..] (empty when not replicating); refreshed by each forward.
  const std::vector<std::shared_ptr<M>>& replicas() const { return replicas_; }

 private:
  std::shared_ptr<M> module_;
  std::vector<Device> devices_;
  Device output_device_ = Device::cpu();
  bool replicating_ = false;
  std::vector<std::shared_ptr<M>> replicas_;
};

template <class M>
DataParallel(std::shared_ptr<M>, int) -> DataParallel<M>;
template <class M>
DataParallel(std::shared_ptr<M>, std::vector<Device>) -> DataParallel<M>;
template <class M>
DataParallel(std::shared_ptr<M>, int, DataParallelOptions) -> DataParallel<M>;
template <class M>
DataParallel(std::shared_ptr<M>, std::vector<Device>, DataParallelOptions) -> DataParallel<M>;

}  // namespace minidl::dist
