// The backend-independent parts of dist::ProcessGroup.
#include "distributed/process_group.h"

namespace minidl::dist {

const char* reduce_op_name(ReduceOp op) { return op == ReduceOp::Sum ? "sum" : "avg"; }

namespace {
struct CompletedWork final : Work {
  void wait() override {}
  bool is_completed() override { return true; }
};
}  // namespace

WorkPtr completed_work() { return std::make_shared<CompletedWork>(); }

}  // namespace minidl::dist
