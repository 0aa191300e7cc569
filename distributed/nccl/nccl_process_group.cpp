// dist::ProcessGroup over NCCL. Each group owns a communicator and a stream of its own, so that
// collectives overlap the kernels of the device's compute stream (framework/cuda/runtime.h):
//   start:  record `ready` on the compute stream, the NCCL stream waits for it (the inputs are
//           written), then the NCCL calls (one ncclGroupStart/End for a list), then record `done`.
//   wait(): the compute stream waits for `done` (the host does not block, as PyTorch's
//           Work::wait for NCCL), then the finishing step (copy back from staging) is queued there.
// The buffers stay referenced by the Work until then; the caching allocator hands a freed block
// to later work of the compute stream only, which by then is ordered after `done`.
#include "distributed/nccl/nccl_process_group.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstring>
#include <functional>
#include <mutex>

#include "distributed/staging.h"
#include "framework/cuda.h"
#include "framework/cuda/check.h"
#include "framework/cuda/runtime.h"
#include "framework/error.h"
#include "framework/grad_mode.h"
#include "ops/ops.h"

namespace minidl::dist {

namespace {

void check_nccl(ncclResult_t rc, const char* op, ncclComm_t comm = nullptr) {
  if (rc == ncclSuccess || rc == ncclInProgress) return;
  const char* last = comm ? ncclGetLastError(comm) : nullptr;
  MINIDL_FAIL(op, "NCCL error: ", ncclGetErrorString(rc), last && *last ? std::string(" (") + last + ")" : std::string());
}

ncclDataType_t nccl_type(DType t, const char* op) {
  switch (t) {
    case DType::F32: return ncclFloat32;
    case DType::F64: return ncclFloat64;
    case DType::I32: return ncclInt32;
    case DType::I64: return ncclInt64;
    default: MINIDL_FAIL(op, "cannot reduce tensors of dtype ", dtype_name(t));
  }
}

class NcclWork final : public Work {
 public:
  NcclWork(int device, cudaStream_t compute) : device_(device), compute_(compute) {
    cuda::DeviceGuard g(device_);
    MINIDL_CUDA_CHECK(cudaEventCreateWithFlags(&done_event, cudaEventDisableTiming));
  }
  ~NcclWork() override {
    try {
      wait();
    } catch (...) {  // a destructor must not throw; the error was (or will be) seen by wait()
    }
    cudaEventDestroy(done_event);
  }

  cudaEvent_t done_event = nullptr;
  std::function<void()> finish;  // queued on the compute stream, once
  std::vector<Tensor> keep;      // buffers NCCL reads and writes
  bool host_blocks = false;      // barrier(): wait() also blocks the host

  void wait() override {
    if (!completed_) complete();
    if (host_blocks) MINIDL_CUDA_CHECK(cudaEventSynchronize(done_event));
  }
  bool is_completed() override {
    if (completed_) return cudaEventQuery(done_event) == cudaSuccess;
    const cudaError_t q = cudaEventQuery(done_event);
    if (q == cudaErrorNotReady) return false;
    MINIDL_CUDA_CHECK(q);
    complete();
    return true;
  }

 private:
  void complete() {
    completed_ = true;
    cuda::DeviceGuard g(device_);
    MINIDL_CUDA_CHECK(cudaStreamWaitEvent(compute_, done_event, 0));
    NoGradGuard no_grad;  // results are written into parameters too (broadcast)
    if (finish) finish();
    keep.clear();
  }
  int device_;
  cudaStream_t compute_;
  bool completed_ = false;
};

class NcclProcessGroup final : public ProcessGroup {
 public:
  NcclProcessGroup(ProcessGroup& bootstrap, int device) : device_(device), rank_(bootstrap.rank()), size_(bootstrap.size()) {
    const char* op = "init_process_group(nccl)";
    cuda::check_device(Device::cuda(device), op);
    cuda::DeviceGuard g(device_);
    compute_ = cuda::stream(device_);
    // The unique id travels as raw bytes in a CPU tensor over the bootstrap group.
    static_assert(sizeof(ncclUniqueId) % sizeof(int32_t) == 0);
    ncclUniqueId id{};
    if (rank_ == 0) check_nccl(ncclGetUniqueId(&id), op);
    std::vector<int32_t> words(sizeof(ncclUniqueId) / sizeof(int32_t));
    std::memcpy(words.data(), &id, sizeof(id));
    Tensor bytes = from_vector<int32_t>(words);
    bootstrap.broadcast({bytes}, 0)->wait();
    words = bytes.to_vector<int32_t>();
    std::memcpy(&id, words.data(), sizeof(id));
    // A constructor left by an exception runs no destructor: what was created is released here.
    try {
      check_nccl(ncclCommInitRank(&comm_, size_, id, rank_), op);
      MINIDL_CUDA_CHECK(cudaStreamCreateWithFlags(&nccl_stream_, cudaStreamNonBlocking));
      MINIDL_CUDA_CHECK(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming));
    } catch (...) {
      release();
      throw;
    }
  }
  ~NcclProcessGroup() override {
    cuda::DeviceGuard g(device_);
    release();
  }
  void release() noexcept {
    if (comm_) ncclCommDestroy(comm_);
    if (ready_) cudaEventDestroy(ready_);
    if (nccl_stream_) cudaStreamDestroy(nccl_stream_);
    comm_ = nullptr, ready_ = nullptr, nccl_stream_ = nullptr;
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "nccl"; }

  WorkPtr allreduce(const std::vector<Tensor>& tensors, AllreduceOptions options) override {
    const char* op = "allreduce";
    std::vector<StagedTensor> items;
    for (size_t i = 0; i < tensors.size(); ++i) {
      check_here(tensors[i], op, i);
      nccl_type(reduction_dtype(tensors[i].dtype()), op);
      MINIDL_CHECK(options.op_ != ReduceOp::Avg || is_floating(tensors[i].dtype()), op,
                   "avg needs a floating tensor, tensor ", i, " is ", tensors[i].meta_str());
      items.push_back(stage(tensors[i], reduction_dtype(tensors[i].dtype())));
    }
    const ncclRedOp_t red = options.op_ == ReduceOp::Avg ? ncclAvg : ncclSum;
    auto work = launch(op, [&] {
      for (const StagedTensor& it : items)
        check_nccl(ncclAllReduce(it.buf.raw_data(), it.buf.raw_data(), static_cast<size_t>(it.buf.numel()),
                                 nccl_type(it.buf.dtype(), op), red, comm_, nccl_stream_),
                   op, comm_);
    });
    for (const StagedTensor& it : items) work->keep.push_back(it.buf);
    work->finish = [items = std::move(items)] {
      for (const StagedTensor& it : items) write_back(it);
    };
    return work;
  }

  WorkPtr broadcast(const std::vector<Tensor>& tensors, int root) override {
    const char* op = "broadcast";
    MINIDL_CHECK(root >= 0 && root < size_, op, "root ", root, " is not a rank of a group of ", size_);
    std::vector<StagedTensor> items;
    for (size_t i = 0; i < tensors.size(); ++i) {
      check_here(tensors[i], op, i);
      items.push_back(stage(tensors[i], tensors[i].dtype()));
    }
    auto work = launch(op, [&] {
      for (const StagedTensor& it : items)
        check_nccl(ncclBroadcast(it.buf.raw_data(), it.buf.raw_data(), it.buf.nbytes(), ncclUint8, root, comm_,
                                 nccl_stream_),
                   op, comm_);
    });
    for (const StagedTensor& it : items) work->keep.push_back(it.buf);
    work->finish = [items = std::move(items)] {
      for (const StagedTensor& it : items) write_back(it);
    };
    return work;
  }

  WorkPtr allgather(std::vector<Tensor>& outputs, const Tensor& input) override {
    const char* op = "allgather";
    check_here(input, op, 0);
    prepare_gather_outputs(outputs, input, size_, op);
    Tensor send = input.contiguous();
    Tensor recv = gather_buffer(input, size_);
    auto work = launch(op, [&] {
      check_nccl(ncclAllGather(send.raw_data(), recv.raw_data(), send.nbytes(), ncclUint8, comm_, nccl_stream_), op,
                 comm_);
    });
    work->keep = {send, recv};
    work->finish = [outs = outputs, recv] { split_gathered(outs, recv); };
    return work;
  }

  // NCCL has no barrier: a one-element allreduce whose wait() also blocks the host.
  WorkPtr barrier() override {
    Tensor one = empty({1}, TensorOptions(DType::F32).device(Device::cuda(device_)));
    auto work = std::static_pointer_cast<NcclWork>(allreduce({one}, {}));
    work->host_blocks = true;
    return work;
  }

 private:
  void check_here(const Tensor& t, const char* op, size_t i) const {
    MINIDL_CHECK(t.defined(), op, "tensor ", i, " is undefined");
    MINIDL_CHECK(t.device() == Device::cuda(device_), op, "the NCCL group of this rank drives cuda:", device_,
                 ", tensor ", i, " is ", t.meta_str());
  }

  // Orders `enqueue` (the NCCL calls) after everything queued so far on the compute stream, and
  // returns the Work whose event marks their end. Serialized: ranks must post in the same order.
  std::shared_ptr<NcclWork> launch(const char* op, const std::function<void()>& enqueue) {
    std::lock_guard<std::mutex> lk(mu_);
    cuda::DeviceGuard g(device_);
    auto work = std::make_shared<NcclWork>(device_, compute_);
    MINIDL_CUDA_CHECK(cudaEventRecord(ready_, compute_));
    MINIDL_CUDA_CHECK(cudaStreamWaitEvent(nccl_stream_, ready_, 0));
    check_nccl(ncclGroupStart(), op, comm_);
    try {
      enqueue();
    } catch (...) {
      ncclGroupEnd();
      throw;
    }
    check_nccl(ncclGroupEnd(), op, comm_);
    MINIDL_CUDA_CHECK(cudaEventRecord(work->done_event, nccl_stream_));
    return work;
  }

  int device_;
  int rank_;
  int size_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t compute_ = nullptr;
  cudaStream_t nccl_stream_ = nullptr;
  cudaEvent_t ready_ = nullptr;
  std::mutex mu_;
};

}  // namespace

ProcessGroupPtr make_nccl_group(ProcessGroup& bootstrap, int device) {
  return std::make_shared<NcclProcessGroup>(bootstrap, device);
}

std::string nccl_version() {
  int v = 0;
  ncclGetVersion(&v);
  // NCCL 2.9 and later: major*10000 + minor*100 + patch.
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

}  // namespace minidl::dist
