// dist::ProcessGroup over Open MPI. Each collective posts one nonblocking MPI call per tensor and
// returns an MpiWork holding the requests, the tensors and the step that finishes the result
// (copy back from a staging buffer, divide for Avg). f16/bf16 are staged in f32 so sums are taken
// in f32; broadcast and allgather move raw bytes, so any dtype is copied bitwise.
#include "distributed/mpi/mpi_process_group.h"

#include <mpi.h>

#include <climits>
#include <cstdlib>
#include <functional>
#include <mutex>

#include "framework/error.h"
#include "framework/grad_mode.h"
#include "distributed/staging.h"
#include "ops/ops.h"

namespace minidl::dist {

namespace {

// MPI runs at MPI_THREAD_SERIALIZED: every MPI call of this process goes through this mutex.
std::mutex& mpi_mutex() {
  static std::mutex mu;
  return mu;
}

void check_mpi(int rc, const char* op) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  MINIDL_FAIL(op, "MPI error: ", std::string(msg, static_cast<size_t>(len)));
}

void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

void ensure_mpi_initialized() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return;
  int provided = 0;
  check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "init_process_group");
  MINIDL_CHECK(provided >= MPI_THREAD_SERIALIZED, "init_process_group",
               "the MPI library does not support MPI_THREAD_SERIALIZED");
  std::atexit(finalize_at_exit);
}

// The MPI type of a reduction buffer.
MPI_Datatype mpi_type(DType t, const char* op) {
  switch (t) {
    case DType::F32: return MPI_FLOAT;
    case DType::F64: return MPI_DOUBLE;
    case DType::I32: return MPI_INT32_T;
    case DType::I64: return MPI_INT64_T;
    default: MINIDL_FAIL(op, "cannot reduce tensors of dtype ", dtype_name(t));
  }
}

int checked_count(int64_t n, const char* op) {
  MINIDL_CHECK(n <= INT_MAX, op, "a tensor of ", n, " elements/bytes exceeds MPI's int count");
  return static_cast<int>(n);
}

void check_cpu(const Tensor& t, const char* op, size_t i) {
  MINIDL_CHECK(t.defined(), op, "tensor ", i, " is undefined");
  MINIDL_CHECK(t.device().is_cpu(), op, "the MPI backend takes CPU tensors, tensor ", i, " is ", t.meta_str());
}

class MpiWork final : public Work {
 public:
  std::vector<MPI_Request> requests;
  std::function<void()> finish;  // runs once, after every request completed
  std::vector<Tensor> keep;      // buffers the requests read and write

  ~MpiWork() override {
    try {
      wait();
    } catch (...) {  // a destructor must not throw; the error was (or will be) seen by wait()
    }
  }
  void wait() override {
    if (done_) return;
    {
      std::lock_guard<std::mutex> lk(mpi_mutex());
      check_mpi(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE), "Work::wait");
    }
    complete();
  }
  bool is_completed() override {
    if (done_) return true;
    int flag = 0;
    {
      std::lock_guard<std::mutex> lk(mpi_mutex());
      check_mpi(MPI_Testall(static_cast<int>(requests.size()), requests.data(), &flag, MPI_STATUSES_IGNORE),
                "Work::is_completed");
    }
    if (flag) complete();
    return done_;
  }

 private:
  void complete() {
    done_ = true;
    NoGradGuard no_grad;  // results are written into parameters too (broadcast)
    if (finish) finish();
    keep.clear();
  }
  bool done_ = false;
};

class MpiProcessGroup final : public ProcessGroup {
 public:
  MpiProcessGroup() {
    std::lock_guard<std::mutex> lk(mpi_mutex());
    ensure_mpi_initialized();
    check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "init_process_group");
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  ~MpiProcessGroup() override {
    std::lock_guard<std::mutex> lk(mpi_mutex());
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "mpi"; }

  WorkPtr allreduce(const std::vector<Tensor>& tensors, AllreduceOptions options) override {
    const char* op = "allreduce";
    auto work = std::make_shared<MpiWork>();
    std::vector<StagedTensor> items;
    for (size_t i = 0; i < tensors.size(); ++i) {
      const Tensor& t = tensors[i];
      check_cpu(t, op, i);
      mpi_type(reduction_dtype(t.dtype()), op);
      MINIDL_CHECK(options.op_ != ReduceOp::Avg || is_floating(t.dtype()), op, "avg needs a floating tensor, tensor ",
                   i, " is ", t.meta_str());
      items.push_back(stage(t, reduction_dtype(t.dtype())));
    }
    std::lock_guard<std::mutex> lk(mpi_mutex());
    for (StagedTensor& it : items) {
      work->requests.emplace_back();
      check_mpi(MPI_Iallreduce(MPI_IN_PLACE, it.buf.raw_data(), checked_count(it.buf.numel(), op),
                               mpi_type(it.buf.dtype(), op), MPI_SUM, comm_, &work->requests.back()),
                op);
      work->keep.push_back(it.buf);
    }
    const bool avg = options.op_ == ReduceOp::Avg;
    const double n = size_;
    work->finish = [items = std::move(items), avg, n] {
      for (const StagedTensor& it : items) write_back(it, avg ? div(it.buf, n) : it.buf);
    };
    return work;
  }

  WorkPtr broadcast(const std::vector<Tensor>& tensors, int root) override {
    const char* op = "broadcast";
    MINIDL_CHECK(root >= 0 && root < size_, op, "root ", root, " is not a rank of a group of ", size_);
    auto work = std::make_shared<MpiWork>();
    std::vector<StagedTensor> items;
    for (size_t i = 0; i < tensors.size(); ++i) {
      check_cpu(tensors[i], op, i);
      items.push_back(stage(tensors[i], tensors[i].dtype()));
    }
    std::lock_guard<std::mutex> lk(mpi_mutex());
    for (StagedTensor& it : items) {
      work->requests.emplace_back();
      check_mpi(MPI_Ibcast(it.buf.raw_data(), checked_count(static_cast<int64_t>(it.buf.nbytes()), op), MPI_BYTE,
                           root, comm_, &work->requests.back()),
                op);
      work->keep.push_back(it.buf);
    }
    work->finish = [items = std::move(items)] {
      for (const StagedTensor& it : items) write_back(it);
    };
    return work;
  }

  WorkPtr allgather(std::vector<Tensor>& outputs, const Tensor& input) override {
    const char* op = "allgather";
    check_cpu(input, op, 0);
    prepare_gather_outputs(outputs, input, size_, op);
    auto work = std::make_shared<MpiWork>();
    Tensor send = input.contiguous();
    Tensor recv = gather_buffer(input, size_);
    const int bytes = checked_count(static_cast<int64_t>(send.nbytes()), op);
    {
      std::lock_guard<std::mutex> lk(mpi_mutex());
      work->requests.emplace_back();
      check_mpi(MPI_Iallgather(send.raw_data(), bytes, MPI_BYTE, recv.raw_data(), bytes, MPI_BYTE, comm_,
                               &work->requests.back()),
                op);
    }
    work->keep = {send, recv};
    work->finish = [outs = outputs, recv] { split_gathered(outs, recv); };
    return work;
  }

  WorkPtr barrier() override {
    auto work = std::make_shared<MpiWork>();
    std::lock_guard<std::mutex> lk(mpi_mutex());
    work->requests.emplace_back();
    check_mpi(MPI_Ibarrier(comm_, &work->requests.back()), "barrier");
    return work;
  }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace

ProcessGroupPtr make_mpi_world_group() { return std::make_shared<MpiProcessGroup>(); }

void abort_mpi_world(int code) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, code);
}

}  // namespace minidl::dist
