#include "amp/precision_report.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <set>
#include <sstream>

#include "ops/autocast_hook.h"
#include "framework/grad_mode.h"
#include "framework/error.h"
#include "serialize/serialize.h"
#include "ops/ops.h"

namespace minidl::amp {

namespace {
void observer(void* ctx, autograd::Node& node, const autograd::TensorList& outputs) {
  static_cast<PrecisionReport*>(ctx)->observe(node, outputs);
}

// The name of the parameter behind a Cast node's input, if that input is a named leaf.
std::string cast_source_name(const autograd::Node& node) {
  if (node.name() != "CastBackward" || node.next_edges.empty() || !node.next_edges[0].fn) return "";
  auto* acc = dynamic_cast<autograd::AccumulateGrad*>(node.next_edges[0].fn.get());
  if (!acc) return "";
  auto leaf = acc->leaf.lock();
  return leaf ? leaf->name : "";
}

const char* dtype_color(DType t) {
  switch (t) {
    case DType::F16: return "#b7e4c7";
    case DType::BF16: return "#ffd6a5";
    case DType::F64: return "#e0e0e0";
    default: return "#a9d6f5";
  }
}
}  // namespace

// Built from ops (a few passes over the tensor, on its own device), so the report needs no element
// loop of its own: this is a diagnostic, not a training-step path.
UnderflowCounts count_underflow(const Tensor& t, DType dtype) {
  NoGradGuard ng;
  UnderflowCounts c;
  c.numel = t.numel();
  if (c.numel == 0) return c;
  const Tensor x = t.detach().to(DType::F32);
  const Tensor finite = eq(sub(x, x), 0.0);  // x - x is NaN exactly for inf and NaN
  const Tensor a = where(finite, abs(x), zeros_like(x));
  const int64_t finite_count = sum(finite).item_int();
  c.nonfinite = c.numel - finite_count;
  c.zeros = sum(mul(finite, eq(a, 0.0))).item_int();
  c.subnormals = sum(mul(gt(a, 0.0), lt(a, traits(dtype).min_normal))).item_int();
  c.max_abs = max(a).item();
  return c;
}

PrecisionReport::Recorder::Recorder(PrecisionReport& report) { autograd::set_node_observer(observer, &report); }
PrecisionReport::Recorder::~Recorder() { autograd::set_node_observer(nullptr, nullptr); }

void PrecisionReport::observe(autograd::Node& node, const autograd::TensorList& outputs) {
  NodeStats s;
  s.id = node.sequence_nr;
  s.op = node.name();
  s.scope = node.amp.scope;
  s.policy = node.amp.policy;
  for (const auto& m : node.input_meta) s.input_dtypes.push_back(m.dtype);
  for (const auto& e : node.next_edges)
    if (e.fn && !dynamic_cast<autograd::AccumulateGrad*>(e.fn.get())) s.inputs.push_back(e.fn->sequence_nr);
  if (!outputs.empty() && outputs[0].defined()) {
    const Tensor& out = outputs[0];
    s.output_dtype = out.dtype();
    s.output_shape = out.shape();
    UnderflowCounts c = count_underflow(out, out.dtype());
    const double n = std::max<int64_t>(c.numel, 1);
    s.max_abs = c.max_abs;
    s.headroom_log2 = c.max_abs > 0 ? std::log2(traits(out.dtype()).max / c.max_abs) : std::log2(traits(out.dtype()).max);
    s.zero_fraction = c.zeros / n;
    s.subnormal_fraction = c.subnormals / n;
    s.nonfinite = c.nonfinite;
    // A parameter cast to low precision: measure the gradient that arrives in that precision.
    std::string param = cast_source_name(node);
    if (!param.empty() && is_low_precision(out.dtype())) {
      auto stats = std::make_shared<GradientStats>();
      stats->param = param;
      stats->compute_dtype = out.dtype();
      grads_[param] = stats;
      node.pre_hooks.emplace_back(0, [stats](const Tensor& g) {
        UnderflowCounts c = count_underflow(g, stats->compute_dtype);
        stats->numel = c.numel;
        stats->underflow_fraction = static_cast<double>(c.zeros + c.subnormals) / std::max<int64_t>(c.numel, 1);
        return Tensor();
      });
    }
  }
  nodes_.push_back(std::move(s));
}

void PrecisionReport::add_parameter_gradients(const std::vector<Tensor>& params) {
  for (const Tensor& p : params) {
    if (!p.grad().defined()) continue;
    std::string name = p.name().empty() ? "param" + std::to_string(grads_.size()) : p.name();
    auto it = grads_.find(name);
    if (it != grads_.end() && it->second->numel > 0) continue;  // measured in low precision
    auto stats = std::make_shared<GradientStats>();
    stats->param = name;
    stats->compute_dtype = p.grad().dtype();
    UnderflowCounts c = count_underflow(p.grad(), p.grad().dtype());
    stats->numel = c.numel;
    stats->underflow_fraction = static_cast<double>(c.zeros + c.subnormals) / std::max<int64_t>(c.numel, 1);
    grads_[name] = stats;
  }
}

std::vector<GradientStats> PrecisionReport::gradients() const {
  std::vector<GradientStats> out;
  for (auto& [name, s] : grads_) out.push_back(*s);
  return out;
}

void PrecisionReport::print(std::ostream& os) const {
  os << "precision report: " << nodes_.size() << " nodes\n";
  os << std::left << std::setw(22) << "op" << std::setw(16) << "scope" << std::setw(18) << "policy" << std::setw(14)
     << "in" << std::setw(6) << "out" << std::right << std::setw(11) << "max|x|" << std::setw(10) << "headroom"
     << std::setw(8) << "zeros" << std::setw(8) << "subn" << '\n';
  for (const NodeStats& s : nodes_) {
    std::string in;
    for (size_t i = 0; i < s.input_dtypes.size(); ++i) in += (i ? "," : "") + std::string(dtype_name(s.input_dtypes[i]));
    std::ostringstream head;
    head << "2^" << std::fixed << std::setprecision(1) << s.headroom_log2;
    os << std::left << std::setw(22) << s.op << std::setw(16) << (s.scope.empty() ? "-" : s.scope) << std::setw(18)
       << s.policy << std::setw(14) << in << std::setw(6) << dtype_name(s.output_dtype) << std::right << std::setw(11)
       << std::setprecision(4) << std::defaultfloat << s.max_abs << std::setw(10) << head.str() << std::setw(7)
       << std::fixed << std::setprecision(1) << s.zero_fraction * 100 << '%' << std::setw(7) << s.subnormal_fraction * 100
       << '%' << std::defaultfloat << (s.nonfinite ? "  NONFINITE" : "") << '\n';
  }
  auto g = gradients();
  if (!g.empty()) {
    os << "gradient underflow per parameter (zero or subnormal in the compute dtype):\n";
    for (const GradientStats& s : g)
      os << "  " << std::left << std::setw(24) << s.param << std::setw(6) << dtype_name(s.compute_dtype) << std::right
         << std::fixed << std::setprecision(2) << s.underflow_fraction * 100 << "% of " << s.numel << std::defaultfloat << '\n';
  }
}

void PrecisionReport::write_dot(std::ostream& os) const {
  std::set<uint64_t> ids;
  for (const NodeStats& s : nodes_) ids.insert(s.id);
  os << "digraph precision {\n  rankdir=BT;\n  node [shape=box, style=filled, fontname=\"monospace\", fontsize=10];\n";
  for (const NodeStats& s : nodes_) {
    os << "  n" << s.id << " [label=\"" << s.op << (s.scope.empty() ? "" : "\\n" + s.scope) << "\\n" << s.policy << " -> "
       << dtype_name(s.output_dtype) << shape_str(s.output_shape) << "\\nmax " << std::setprecision(3) << s.max_abs
       << "  headroom 2^" << std::fixed << std::setprecision(1) << s.headroom_log2 << std::defaultfloat
       << "\", fillcolor=\"" << (s.nonfinite ? "#ff8080" : dtype_color(s.output_dtype)) << "\"];\n";
    for (uint64_t in : s.inputs)
      if (ids.count(in)) os << "  n" << in << " -> n" << s.id << ";\n";
  }
  os << "}\n";
}

void PrecisionReport::write_dot(const std::string& path) const {
  std::ostringstream os;
  write_dot(os);
  const std::string text = os.str();
  write_file_atomically(path, [&](const ByteSink& sink) { sink(text.data(), text.size()); });
}

}  // namespace minidl::amp
