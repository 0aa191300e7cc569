// The gradient reducer behind DistributedDataParallel (torch's C++ Reducer). It owns the buckets
// (dist/bucket_assignment.h), one flat buffer per bucket. During backward each parameter's
// post-accumulate-grad hook copies its fresh .grad into its bucket slot; when a bucket's last slot
// is filled (and every earlier bucket was launched, so all ranks post the same allreduces in the
// same order) its averaging allreduce starts, overlapping the rest of backward. The end-of-backward
// callback the first hook queued waits for every bucket and writes the averages back into .grad.
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "distributed/process_group.h"

namespace minidl::dist {

struct DDPOptions {
  size_t first_bucket_bytes_ = 1u << 20;        // 1 MiB: the first bucket of each dtype, started early
  size_t bucket_cap_bytes_ = 25u << 20;         // 25 MiB: every later bucket (PyTorch's bucket_cap_mb=25)
  bool find_unused_parameters_ = false;         // find, at forward, parameters the output does not reach
                                                // and count their gradients as zero
  bool broadcast_buffers_ = true;               // copy rank 0's buffers to every rank before each forward
  int root_rank_ = 0;                           // whose parameters and buffers the others start from

  DDPOptions& bucket_cap_mb(double mb) { bucket_cap_bytes_ = static_cast<size_t>(mb * (1 << 20)); return *this; }
  DDPOptions& first_bucket_mb(double mb) { first_bucket_bytes_ = static_cast<size_t>(mb * (1 << 20)); return *this; }
  DDPOptions& bucket_cap_bytes(size_t v) { bucket_cap_bytes_ = v; return *this; }
  DDPOptions& first_bucket_bytes(size_t v) { first_bucket_bytes_ = v; return *this; }
  DDPOptions& find_unused_parameters(bool v = true) { find_unused_parameters_ = v; return *this; }
  DDPOptions& broadcast_buffers(bool v) { broadcast_buffers_ = v; return *this; }
  DDPOptions& root_rank(int v) { root_rank_ = v; return *this; }
};

// When each bucket's allreduce ran during one synchronized backward, against the end of backward:
// what the overlap of communication with backward is measured from (bench/bench_ddp.cpp). Opt-in
// (Reducer::set_timing_callback): without a callback the reducer reads no clock.
struct BucketTiming {
  size_t bytes = 0;
  std::chrono::steady_clock::time_point launched;   // the allreduce was posted
  std::chrono::steady_clock::time_point completed;  // first seen complete: by the poll of a later
                                                    // gradient hook, or by the end-of-backward wait
};
struct BackwardTiming {
  std::chrono::steady_clock::time_point backward_end;  // the engine had run the whole graph (the
                                                       // end-of-backward callback began)
  std::vector<BucketTiming> buckets;                   // in launch order
  // Of the buckets' allreduce time (launch to completion, summed), the fraction that ran before
  // backward_end; 0 without buckets or time.
  double overlap_fraction() const;
  // How long the end of backward waited for the last allreduce (0 when all were done by then).
  std::chrono::duration<double> exposed() const;
};

class Reducer {
 public:
  // params: the module's parameters in registration order (those that do not require grad are
  // ignored); buffers: its buffers. Checks that every rank has the same parameter shapes and
  // dtypes, then broadcasts params and buffers from the root rank and installs the hooks.
  Reducer(std::vector<Tensor> params, std::vector<Tensor> buffers, ProcessGroupPtr group, DDPOptions options);
  ~Reducer();  // removes the hooks (waits for any reduction in flight)
  Reducer(const Reducer&) = delete;
  Reducer& operator=(const Reducer&) = delete;

  // Before and after each forward that is followed by a backward: broadcasts buffers, records
  // whether this iteration synchronizes (not under no_sync), and with find_unused_parameters walks
  // the outputs' graph for the parameters it does not reach.
  void before_forward();
  void prepare_for_backward(const std::vector<Tensor>& outputs);

  void set_sync(bool on) { sync_enabled_ = on; }
  bool sync_enabled() const { return sync_enabled_; }

  // The buckets, as indices into the parameters that require grad (in registration order).
  const std::vector<std::vector<size_t>>& bucket_indices() const { return bucket_indices_; }
  const std::vector<Tensor>& parameters() const { return params_; }
  const DDPOptions& options() const { return options_; }
  // Buckets whose allreduce was started in the backward now running (0 outside backward).
  size_t launched_buckets() const { return next_bucket_; }
  const ProcessGroupPtr& group() const { return group_; }
  // Called at the end of each synchronized backward with its bucket timing; nullptr stops timing.
  using TimingCallback = std::function<void(const BackwardTiming&)>;
  void set_timing_callback(TimingCallback callback) { timing_callback_ = std::move(callback); }

 private:
  struct Bucket {
    std::vector<size_t> params;    // indices into params_
    std::vector<int64_t> offsets;  // element offset of each in flat
    Tensor flat;                   // the gradients, concatenated, in the params' dtype
    size_t pending = 0;            // slots not yet filled this iteration
    WorkPtr work;
    BucketTiming timing;           // filled only while a timing callback is set
    bool seen_complete = false;
  };

  void on_grad_ready(size_t i);              // a parameter's post-accumulate-grad hook
  void mark_ready(size_t i, bool has_grad);  // fills the slot; launches what became complete
  void launch_complete_buckets();
  void poll();                               // lets in-flight allreduces progress
  void finalize();                           // the end-of-backward callback
  void wait_all_buckets();                   // waits for every launched allreduce (noting when each finished, when timing)
  void reset_iteration();
  Tensor slot(size_t i) const;               // param i's slice of its bucket, shaped as the param

  std::vector<Tensor> params_;
  std::vector<Tensor> buffers_;
  Device device_ = Device::cpu();  // where the parameters and the buckets live
  ProcessGroupPtr group_;
  DDPOptions options_;
  std::vector<std::vector<size_t>> bucket_indices_;
  std::vector<Bucket> buckets_;
  std::vector<std::pair<size_t, size_t>> where_;  // param -> (bucket, slot)
  std::vector<uint64_t> hook_ids_;

  // This iteration.
  bool sync_enabled_ = true;     // off under no_sync()
  bool sync_this_ = true;        // sync_enabled_ as of the last forward
  std::vector<size_t> unused_;   // parameters the last forward's output does not reach
  std::vector<char> ready_, locally_used_;
  size_t next_bucket_ = 0;       // the next bucket to launch
  bool callback_queued_ = false;
  TimingCallback timing_callback_;
};

}  // namespace minidl::dist
