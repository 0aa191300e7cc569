// The precision report: for every graph node recorded while a Recorder is alive, the op, module
// path, autocast policy, input and output dtypes, max |output| and its headroom to the dtype's
// largest finite value, and the fractions of zeros and subnormals; for every parameter, the
// fraction of its gradient that underflows (zero or subnormal) in the dtype it was computed in.
// Printed as a table, exported as Graphviz DOT.
#pragma once
#include <iosfwd>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ops/node.h"

namespace minidl::amp {

struct NodeStats {
  uint64_t id = 0;  // the node's sequence number
  std::string op;
  std::string scope;
  std::string policy;
  std::vector<DType> input_dtypes;
  DType output_dtype = DType::F32;
  Shape output_shape;
  double max_abs = 0;            // largest finite |value| (inf/NaN counted separately)
  double headroom_log2 = 0;      // log2(dtype max / max_abs): doublings left before overflow
  double zero_fraction = 0;
  double subnormal_fraction = 0;
  int64_t nonfinite = 0;
  std::vector<uint64_t> inputs;  // ids of recorded producer nodes (for the DOT graph)
};

struct GradientStats {
  std::string param;           // module path, e.g. "fc2.weight"
  DType compute_dtype = DType::F32;
  int64_t numel = 0;
  double underflow_fraction = 0;  // zero or subnormal in compute_dtype
};

class PrecisionReport {
 public:
  // While alive on this thread, every recorded node is measured into the report, and the
  // low-precision casts of parameters get a hook that measures their incoming gradient.
  class Recorder {
   public:
    explicit Recorder(PrecisionReport& report);
    ~Recorder();
    Recorder(const Recorder&) = delete;
    Recorder& operator=(const Recorder&) = delete;
  };

  // After backward: parameters whose gradient was not seen in low precision are measured from
  // their f32 .grad. Parameters are named by Tensor::name() (set by nn::Module registration).
  void add_parameter_gradients(const std::vector<Tensor>& params);

  const std::vector<NodeStats>& nodes() const { return nodes_; }
  std::vector<GradientStats> gradients() const;

  void print(std::ostream& os) const;
  void write_dot(std::ostream& os) const;
  void write_dot(const std::string& path) const;  // atomic write

  // Called by the recorder hook.
  void observe(autograd::Node& node, const autograd::TensorList& outputs);

 private:
  std::vector<NodeStats> nodes_;
  std::map<std::string, std::shared_ptr<GradientStats>> grads_;
};

// Fraction of zero and subnormal values of t as if stored in dtype (t is converted to f32 first).
struct UnderflowCounts {
  int64_t zeros = 0;
  int64_t subnormals = 0;
  int64_t nonfinite = 0;
  double max_abs = 0;
  int64_t numel = 0;
};
UnderflowCounts count_underflow(const Tensor& t, DType dtype);

}  // namespace minidl::amp
