// DDP's gradient reducer: see reducer.h.
#include "distributed/reducer.h"

#include <algorithm>
#include <sstream>
#include <thread>
#include <unordered_set>

#include "autograd/engine.h"
#include "distributed/bucket_assignment.h"
#include "framework/error.h"
#include "framework/grad_mode.h"
#include "ops/node.h"
#include "ops/ops.h"

namespace minidl::dist {

namespace {
constexpr const char* kOp = "DistributedDataParallel";

std::string param_name(const Tensor& p, size_t i) {
  return p.name().empty() ? "param" + std::to_string(i) : p.name();
}

// Every rank must hold the same parameters: compares (count, and per parameter numel and dtype,
// folded into a checksum) across ranks.
void verify_same_parameters(const std::vector<Tensor>& params, ProcessGroup& group, Device device) {
  int64_t numel = 0;
  uint64_t h = 1469598103934665603ull;
  for (const Tensor& p : params) {
    numel += p.numel();
    for (int64_t d : p.shape()) h = (h ^ static_cast<uint64_t>(d)) * 1099511628211ull;
    h = (h ^ static_cast<uint64_t>(p.dtype())) * 1099511628211ull;
  }
  Tensor mine = from_vector<int64_t>({static_cast<int64_t>(params.size()), numel, static_cast<int64_t>(h >> 1)});
  std::vector<Tensor> all;
  group.allgather(all, mine.to(device))->wait();
  for (int r = 0; r < group.size(); ++r)
    MINIDL_CHECK(all[r].to_vector<int64_t>() == mine.to_vector<int64_t>(), kOp, "rank ", group.rank(), " has ",
                 params.size(), " parameters of ", numel, " elements, rank ", r, " has ",
                 all[r].to_vector<int64_t>()[0], " of ", all[r].to_vector<int64_t>()[1],
                 " (or other shapes/dtypes): every rank must build the same model");
}
using Clock = std::chrono::steady_clock;
}  // namespace

double BackwardTiming::overlap_fraction() const {
  double before_end = 0, total = 0;
  for (const BucketTiming& b : buckets) {
    total += std::chrono::duration<double>(b.completed - b.launched).count();
    before_end += std::max(0.0, std::chrono::duration<double>(std::min(b.completed, backward_end) - b.launched).count());
  }
  return total > 0 ? before_end / total : 0.0;
}

std::chrono::duration<double> BackwardTiming::exposed() const {
  Clock::time_point last = backward_end;
  for (const BucketTiming& b : buckets) last = std::max(last, b.completed);
  return last - backward_end;
}

Reducer::Reducer(std::vector<Tensor> params, std::vector<Tensor> buffers, ProcessGroupPtr group, DDPOptions options)
    : buffers_(std::move(buffers)), group_(std::move(group)), options_(options) {
  MINIDL_CHECK(group_ != nullptr, kOp, "needs a process group");
  MINIDL_CHECK(options_.root_rank_ >= 0 && options_.root_rank_ < group_->size(), kOp, "root rank ",
               options_.root_rank_, " is not a rank of a group of ", group_->size());
  // The group's backend decides where collectives run: MPI reduces CPU tensors, NCCL the tensors
  // of its rank's GPU; every parameter lives there.
  for (Tensor& p : params)
    if (p.defined() && p.requires_grad()) {
      if (params_.empty()) device_ = p.device();
      MINIDL_CHECK(p.device() == device_, kOp, "every parameter must be on one device: ", param_name(p, params_.size()),
                   " is ", p.meta_str(), ", the first was on ", device_.str());
      params_.push_back(p);
    }
  MINIDL_CHECK(device_.is_cpu() || group_->backend() != "mpi", kOp, "the MPI backend reduces CPU tensors, the model is on ",
               device_.str(), " (use the nccl backend for CUDA models)");
  MINIDL_CHECK(!device_.is_cpu() || group_->backend() != "nccl", kOp,
               "the NCCL backend reduces CUDA tensors, the model is on the CPU (use the mpi backend)");
  verify_same_parameters(params_, *group_, device_);

  // Everyone starts from the root's parameters and buffers.
  {
    NoGradGuard no_grad;
    std::vector<Tensor> state = params_;
    for (const Tensor& b : buffers_)
      if (b.defined()) state.push_back(b);
    group_->broadcast(state, options_.root_rank_)->wait();
  }

  std::vector<BucketParam> sizes;
  for (const Tensor& p : params_) sizes.push_back({p.numel(), p.dtype()});
  bucket_indices_ = compute_bucket_assignment(sizes, options_.first_bucket_bytes_, options_.bucket_cap_bytes_);
  where_.resize(params_.size());
  for (size_t b = 0; b < bucket_indices_.size(); ++b) {
    Bucket bucket;
    bucket.params = bucket_indices_[b];
    int64_t offset = 0;
    for (size_t s = 0; s < bucket.params.size(); ++s) {
      where_[bucket.params[s]] = {b, s};
      bucket.offsets.push_back(offset);
      offset += params_[bucket.params[s]].numel();
    }
    bucket.flat = zeros({offset}, TensorOptions(params_[bucket.params[0]].dtype()).device(device_));
    buckets_.push_back(std::move(bucket));
  }
  reset_iteration();
  for (size_t i = 0; i < params_.size(); ++i)
    hook_ids_.push_back(params_[i].register_post_accumulate_grad_hook([this, i](const Tensor&) { on_grad_ready(i); }));
}

Reducer::~Reducer() {
  for (size_t i = 0; i < params_.size(); ++i) params_[i].remove_post_accumulate_grad_hook(hook_ids_[i]);
  for (Bucket& b : buckets_)
    if (b.work) {
      try {
        b.work->wait();
      } catch (...) {  // destructors do not throw
      }
    }
}

Tensor Reducer::slot(size_t i) const {
  const auto [b, s] = where_[i];
  return buckets_[b].flat.narrow(0, buckets_[b].offsets[s], params_[i].numel()).view(params_[i].shape());
}

void Reducer::reset_iteration() {
  ready_.assign(params_.size(), 0);
  locally_used_.assign(params_.size(), 0);
  for (Bucket& b : buckets_) {
    b.pending = b.params.size();
    b.work.reset();
    b.seen_complete = false;
  }
  next_bucket_ = 0;
  callback_queued_ = false;
}

void Reducer::before_forward() {
  // A backward that failed half-way leaves buckets in flight: finish them before a new iteration.
  if (callback_queued_ || next_bucket_ > 0) {
    for (Bucket& b : buckets_)
      if (b.work) b.work->wait();
    reset_iteration();
  }
  if (options_.broadcast_buffers_ && !buffers_.empty() && group_->size() > 1) {
    NoGradGuard no_grad;
    std::vector<Tensor> bufs;
    for (const Tensor& b : buffers_)
      if (b.defined()) bufs.push_back(b);
    group_->broadcast(bufs, options_.root_rank_)->wait();
  }
}

void Reducer::prepare_for_backward(const std::vector<Tensor>& outputs) {
  sync_this_ = sync_enabled_;
  unused_.clear();
  if (!options_.find_unused_parameters_ || !sync_this_) return;
  // The leaves the outputs' graph reaches, through their AccumulateGrad nodes.
  std::unordered_set<const TensorImpl*> reached;
  std::unordered_set<const autograd::Node*> seen;
  std::vector<autograd::Node*> stack;
  for (const Tensor& out : outputs)
    if (out.defined() && out.requires_grad()) {
      autograd::Edge e = autograd::gradient_edge(out);
      if (e.fn && seen.insert(e.fn.get()).second) stack.push_back(e.fn.get());
    }
  while (!stack.empty()) {
    autograd::Node* n = stack.back();
    stack.pop_back();
    if (auto* acc = dynamic_cast<autograd::AccumulateGrad*>(n))
      if (auto leaf = acc->leaf.lock()) reached.insert(leaf.get());
    for (const autograd::Edge& e : n->next_edges)
      if (e.fn && seen.insert(e.fn.get()).second) stack.push_back(e.fn.get());
  }
  for (size_t i = 0; i < params_.size(); ++i)
    if (!reached.count(params_[i].impl())) unused_.push_back(i);
}

void Reducer::on_grad_ready(size_t i) {
  if (!sync_this_) return;  // no_sync(): gradients only accumulate locally
  if (!callback_queued_) {
    callback_queued_ = true;
    autograd::queue_callback([this] { finalize(); });
    // Parameters the forward did not reach never get a hook call: their slots are zero now.
    for (size_t u : unused_) mark_ready(u, false);
  }
  mark_ready(i, true);
}

void Reducer::mark_ready(size_t i, bool has_grad) {
  MINIDL_CHECK(!ready_[i], kOp, "parameter ", param_name(params_[i], i),
               " received a gradient twice in one iteration (two backward passes through it without no_sync(), "
               "or a parameter marked unused that was used after all)");
  ready_[i] = 1;
  Tensor g = params_[i].grad();
  locally_used_[i] = has_grad && g.defined();
  Tensor s = slot(i);
  if (locally_used_[i]) s.copy_(g);
  else s.zero_();
  Bucket& b = buckets_[where_[i].first];
  if (--b.pending == 0) launch_complete_buckets();
  else poll();
}

void Reducer::launch_complete_buckets() {
  while (next_bucket_ < buckets_.size() && buckets_[next_bucket_].pending == 0) {
    Bucket& b = buckets_[next_bucket_++];
    if (timing_callback_) b.timing = {b.flat.nbytes(), Clock::now(), {}};
    b.work = group_->allreduce({b.flat}, AllreduceOptions().op(ReduceOp::Avg));
  }
}

void Reducer::poll() {
  for (size_t i = 0; i < next_bucket_; ++i) {
    Bucket& b = buckets_[i];
    if (!b.work || b.seen_complete || !b.work->is_completed()) continue;
    b.seen_complete = true;
    if (timing_callback_) b.timing.completed = Clock::now();
  }
}

void Reducer::wait_all_buckets() {
  if (!timing_callback_) {
    for (size_t i = 0; i < next_bucket_; ++i) buckets_[i].work->wait();
    return;
  }
  // Polls them all, so each one's completion is noted when it happens, not when an earlier
  // bucket's wait returns.
  for (;;) {
    poll();
    bool all = true;
    for (size_t i = 0; i < next_bucket_; ++i) all = all && buckets_[i].seen_complete;
    if (all) break;
    std::this_thread::yield();
  }
  for (size_t i = 0; i < next_bucket_; ++i) buckets_[i].work->wait();  // completed: returns at once
}

void Reducer::finalize() {
  const Clock::time_point backward_end = timing_callback_ ? Clock::now() : Clock::time_point();
  if (next_bucket_ < buckets_.size()) {
    std::vector<size_t> missing;
    for (size_t i = 0; i < params_.size(); ++i)
      if (!ready_[i]) missing.push_back(i);
    if (!options_.find_unused_parameters_) {
      std::ostringstream names;
      for (size_t k = 0; k < missing.size(); ++k) names << (k ? ", " : "") << param_name(params_[missing[k]], missing[k]);
      wait_all_buckets();
      reset_iteration();
      MINIDL_FAIL(kOp, "expected every parameter to receive a gradient in backward, but ", missing.size(),
                  " did not: ", names.str(),
                  ". If the forward leaves some parameters unused, pass DDPOptions().find_unused_parameters(true)");
    }
    for (size_t i : missing) mark_ready(i, false);  // reached by the graph but given no gradient
  }
  wait_all_buckets();
  if (timing_callback_) {
    BackwardTiming timing{backward_end, {}};
    for (const Bucket& b : buckets_) timing.buckets.push_back(b.timing);
    timing_callback_(timing);
  }
  std::vector<char> globally_used(params_.size(), 1);
  if (options_.find_unused_parameters_) {
    // A parameter no rank used keeps its .grad untouched (as PyTorch); one that some rank used gets
    // the average, zeros counted for the ranks that did not use it.
    std::vector<int32_t> used(locally_used_.begin(), locally_used_.end());
    Tensor t = from_vector<int32_t>(used).to(device_);
    group_->allreduce({t}, AllreduceOptions().op(ReduceOp::Sum))->wait();
    std::vector<int32_t> all = t.to_vector<int32_t>();
    for (size_t i = 0; i < params_.size(); ++i) globally_used[i] = all[i] > 0;
  }
  NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!globally_used[i]) continue;
    Tensor g = params_[i].grad();
    if (g.defined()) g.copy_(slot(i));
    else params_[i].set_grad(slot(i).clone());
  }
  reset_iteration();
}

}  // namespace minidl::dist
