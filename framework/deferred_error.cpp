// The messages of deferred errors (framework/deferred_error.h). Host code only, in every build (the
// CPU-only build never fills a record, but the words are the CPU ops' words and are tested there).
#include "framework/deferred_error.h"

#include "framework/error.h"

namespace minidl::cuda {

namespace {
// What the CPU op says about the same input.
std::string problem(const DeferredErrorRecord& r) {
  const int64_t v = r.value, n = r.bound;
  switch (static_cast<DeferredOp>(r.op)) {
    case DeferredOp::CrossEntropy:
    case DeferredOp::NllLoss:
      return detail::concat(r.op == static_cast<int32_t>(DeferredOp::CrossEntropy) ? "cross_entropy" : "nll_loss",
                            ": target ", v, " is out of bounds for ", n, " classes (expected 0..", n - 1,
                            " or ignore_index ", r.detail, ")");
    case DeferredOp::IndexSelect:
    case DeferredOp::Gather:
      return detail::concat(r.op == static_cast<int32_t>(DeferredOp::Gather) ? "gather" : "index_select", ": index ", v,
                            " is out of bounds for dimension ", r.detail, " with size ", n);
    case DeferredOp::Embedding:
      return detail::concat("embedding: index ", v, " is out of range for a table of ", n, " rows");
    case DeferredOp::OneHot:
      if (v < 0) return detail::concat("one_hot: class values must be non-negative, got ", v);
      return detail::concat("one_hot: class values must be smaller than num_classes (", n, "), got ", v);
    case DeferredOp::None: break;
  }
  return detail::concat("a kernel reported invalid input (unknown op id ", r.op, ", value ", v, ", bound ", n, ")");
}
}  // namespace

std::string describe(const DeferredErrorRecord& record, int device) {
  return detail::concat(problem(record), "; found on cuda:", device, " and reported at the next synchronisation");
}

}  // namespace minidl::cuda
