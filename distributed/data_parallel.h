// dist::DataParallel: data parallelism inside one process, as torch.nn.DataParallel's
// scatter -> parallel_apply -> gather, with CPU threads as the "devices". The input is split along
// dim 0 into one chunk per device (torch.chunk sizes: ceil(B / n), fewer chunks when B < n); each
// chunk's forward runs on its own thread with the caller's autocast and grad state
// (amp::propagate_state: autocast state is per thread, so a thread would otherwise run without
// it); the outputs are concatenated on the caller's thread. On the CPU the replicas are the module
// itself: the chunks share the parameters, and backward (on the caller's thread) accumulates every
// chunk's gradient into the one .grad.
//
//   dist::DataParallel dp(model, 2);                  // two threads
//   { amp::autocast scope(DeviceType::CPU); out = dp.forward(x); }   // bf16 on both threads
//
// The module's forward must be safe to run concurrently (layers that update state in forward,
// such as batch norm's running statistics in training mode, are not).
#pragma once
#include <exception>
#include <memory>
#include <thread>
#include <vector>

#include "autocast/state.h"
#include "framework/error.h"
#include "nn/module.h"
#include "ops/node.h"
#include "ops/ops.h"

namespace minidl::dist {

template <class M>
class DataParallel {
 public:
  // devices: CPU devices, one thread each (CUDA devices are not supported yet).
  DataParallel(std::shared_ptr<M> module, std::vector<Device> devices) : module_(std::move(module)), devices_(std::move(devices)) {
    MINIDL_CHECK(module_ != nullptr, "DataParallel", "needs a module");
    MINIDL_CHECK(!devices_.empty(), "DataParallel", "needs at least one device");
    for (const Device& d : devices_)
      MINIDL_CHECK(d.is_cpu(), "DataParallel", "only CPU devices (threads) are supported so far, got ", d.str());
  }
  DataParallel(std::shared_ptr<M> module, int threads)
      : DataParallel(std::move(module), std::vector<Device>(static_cast<size_t>(std::max(threads, 0)), Device::cpu())) {}

  Tensor forward(const Tensor& input) {
    MINIDL_CHECK(input.dim() >= 1 && input.size(0) >= 1, "DataParallel", "cannot scatter an input of shape ",
                 shape_str(input.shape()), " along dim 0");
    const int64_t b = input.size(0), n = static_cast<int64_t>(devices_.size());
    const int64_t chunk = (b + n - 1) / n;
    std::vector<Tensor> inputs;
    for (int64_t start = 0; start < b; start += chunk) inputs.push_back(input.narrow(0, start, std::min(chunk, b - start)));
    if (inputs.size() == 1) return nn::call(*module_, inputs[0]);
    // Create every parameter's gradient accumulator here and hold it, so the threads only read it.
    std::vector<autograd::Edge> accumulators;
    for (const Tensor& p : module_->parameters())
      if (p.requires_grad()) accumulators.push_back(autograd::gradient_edge(p));
    std::vector<Tensor> outputs(inputs.size());
    std::vector<std::exception_ptr> errors(inputs.size());
    auto run = [&](size_t i) {
      try {
        outputs[i] = nn::call(*module_, inputs[i]);  // in the module's scope (its set_autocast holds)
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
    return cat(outputs, 0);
  }
  Tensor operator()(const Tensor& input) { return forward(input); }

  const std::shared_ptr<M>& module() const { return module_; }
  const std::vector<Device>& devices() const { return devices_; }

 private:
  std::shared_ptr<M> module_;
  std::vector<Device> devices_;
};

template <class M>
DataParallel(std::shared_ptr<M>, int) -> DataParallel<M>;
template <class M>
DataParallel(std::shared_ptr<M>, std::vector<Device>) -> DataParallel<M>;

}  // namespace minidl::dist
