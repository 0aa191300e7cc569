// dist::DistributedDataParallel: data-parallel training over a process group, as
// torch.nn.parallel.DistributedDataParallel. At construction every rank takes rank 0's parameters
// and buffers; each backward averages the gradients over the ranks in buckets whose allreduce
// starts during backward (dist/reducer.h), so after backward every rank holds the same .grad and
// the optimizer (and a GradScaler's found-inf check) sees the same values everywhere.
//
//   auto group = dist::init_process_group();
//   auto model = std::make_shared<Net>();
//   dist::DistributedDataParallel ddp(model, group);
//   Tensor loss = cross_entropy(ddp.forward(x), y);   // forward goes through the wrapper
//   scaler.scale(loss).backward();                    // gradients are averaged by now
//   { auto guard = ddp.no_sync(); ... backward ... }  // accumulate locally, sync on the next one
#pragma once
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "distributed/init.h"
#include "distributed/reducer.h"
#include "nn/module.h"

namespace minidl::dist {

template <class M>
class DistributedDataParallel {
 public:
  // module: any nn::Module with a forward(); group: the default group unless given.
  explicit DistributedDataParallel(std::shared_ptr<M> module, ProcessGroupPtr group = nullptr, DDPOptions options = {})
      : module_(std::move(module)) {
    MINIDL_CHECK(module_ != nullptr, "DistributedDataParallel", "needs a module");
    reducer_ = std::make_unique<Reducer>(module_->parameters(), module_->buffers(),
                                         group ? std::move(group) : default_group(), options);
  }

  // Calls the module's forward. A Tensor or std::vector<Tensor> result is where backward will
  // start (find_unused_parameters looks at its graph); with another result type every parameter is
  // taken as used.
  template <class... Args>
  auto forward(Args&&... args) {
    reducer_->before_forward();
    auto out = nn::call(*module_, std::forward<Args>(args)...);  // in the module's scope
    using Out = std::decay_t<decltype(out)>;
    if constexpr (std::is_same_v<Out, Tensor>) reducer_->prepare_for_backward({out});
    else if constexpr (std::is_same_v<Out, std::vector<Tensor>>) reducer_->prepare_for_backward(out);
    else reducer_->prepare_for_backward({});
    return out;
  }
  template <class... Args>
  auto operator()(Args&&... args) { return forward(std::forward<Args>(args)...); }

  // While alive, forwards (and the backwards after them) do not synchronize: gradients accumulate
  // locally, and the first backward after a forward outside the guard reduces the accumulated sum.
  class NoSync {
   public:
    explicit NoSync(Reducer& r) : r_(&r), prev_(r.sync_enabled()) { r_->set_sync(false); }
    ~NoSync() { if (r_) r_->set_sync(prev_); }
    NoSync(NoSync&& o) noexcept : r_(std::exchange(o.r_, nullptr)), prev_(o.prev_) {}
    NoSync(const NoSync&) = delete;
    NoSync& operator=(const NoSync&) = delete;
    NoSync& operator=(NoSync&&) = delete;

   private:
    Reducer* r_;
    bool prev_;
  };
  [[nodiscard]] NoSync no_sync() { return NoSync(*reducer_); }

  const std::shared_ptr<M>& module() const { return module_; }
  std::vector<Tensor> parameters() const { return module_->parameters(); }
  const ProcessGroupPtr& group() const { return reducer_->group(); }
  Reducer& reducer() { return *reducer_; }

 private:
  std::shared_ptr<M> module_;
  std::unique_ptr<Reducer> reducer_;
};

template <class M>
DistributedDataParallel(std::shared_ptr<M>, ProcessGroupPtr = nullptr, DDPOptions = {}) -> DistributedDataParallel<M>;

}  // namespace minidl::dist
