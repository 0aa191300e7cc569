#include "distributed/self_process_group.h"

#include "distributed/staging.h"
#include "framework/error.h"

namespace minidl::dist {

namespace {
class SelfProcessGroup final : public ProcessGroup {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string backend() const override { return "self"; }

  WorkPtr allreduce(const std::vector<Tensor>& tensors, AllreduceOptions) override {
    for (size_t i = 0; i < tensors.size(); ++i) MINIDL_CHECK(tensors[i].defined(), "allreduce", "tensor ", i, " is undefined");
    return completed_work();
  }
  WorkPtr broadcast(const std::vector<Tensor>& tensors, int root) override {
    MINIDL_CHECK(root == 0, "broadcast", "root ", root, " is not a rank of a group of 1");
    return completed_work();
  }
  WorkPtr allgather(std::vector<Tensor>& outputs, const Tensor& input) override {
    MINIDL_CHECK(input.defined(), "allgather", "the input is undefined");
    prepare_gather_outputs(outputs, input, 1, "allgather");
    write_back({outputs[0], input});
    return completed_work();
  }
  WorkPtr barrier() override { return completed_work(); }
};
}  // namespace

ProcessGroupPtr make_self_group() { return std::make_shared<SelfProcessGroup>(); }

}  // namespace minidl::dist
