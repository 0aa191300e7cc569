// dist::ProcessGroup: the collectives data-parallel training needs (torch.distributed's
// ProcessGroup), over an existing engine: Open MPI for CPU ranks (dist/mpi/). Every collective
// works in place on a list of tensors and returns a Work to wait on, so a caller (DDP's reducer)
// can start one during backward and await it later. All ranks must issue the same collectives in
// the same order.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "ops/tensor.h"

namespace minidl::dist {

enum class ReduceOp { Sum, Avg };
const char* reduce_op_name(ReduceOp op);

// A collective in flight. wait() blocks until it finished and its results are in the tensors it
// was given; is_completed() polls (and lets the engine make progress). Destroying an unfinished
// Work waits for it: the buffers it writes stay alive until then.
class Work {
 public:
  virtual ~Work() = default;
  virtual void wait() = 0;
  virtual bool is_completed() = 0;
};
using WorkPtr = std::shared_ptr<Work>;

struct AllreduceOptions {
  ReduceOp op_ = ReduceOp::Sum;  // Avg: the sum divided by size() (a true division, per element)

  AllreduceOptions& op(ReduceOp v) { op_ = v; return *this; }
};

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string backend() const = 0;  // "mpi"

  // Reduces each tensor elementwise over all ranks, in place. CPU tensors of f32, f64, i32, i64,
  // and f16/bf16 (summed in f32, rounded once at the end). The same shapes and dtypes on every rank.
  virtual WorkPtr allreduce(const std::vector<Tensor>& tensors, AllreduceOptions options = {}) = 0;
  // Copies each tensor of rank `root` into the same tensor of every other rank (bitwise).
  virtual WorkPtr broadcast(const std::vector<Tensor>& tensors, int root = 0) = 0;
  // outputs[r] receives rank r's input. outputs has size() tensors shaped and typed as input, or is
  // empty: then it is filled with new tensors.
  virtual WorkPtr allgather(std::vector<Tensor>& outputs, const Tensor& input) = 0;
  virtual WorkPtr barrier() = 0;
};
using ProcessGroupPtr = std::shared_ptr<ProcessGroup>;

// A Work that is already done (a collective over a world of one, or an empty list).
WorkPtr completed_work();

}  // namespace minidl::dist
