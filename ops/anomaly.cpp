#include "ops/anomaly.h"

#include <atomic>
#include <cctype>
#include <cmath>

#include "autocast/state.h"
#include "framework/error.h"
#include "ops/foreach.h"

namespace minidl::autograd {

namespace {
std::atomic<uint64_t> g_checks{0};
thread_local int t_forward_checks_off = 0;

std::string module_of(const std::string& scope) {
  return scope.empty() ? "outside any module" : "in module '" + scope + "'";
}
}  // namespace

const char* non_finite_kind(const Tensor& t) {
  if (!t.defined() || !t.is_floating_point() || t.numel() == 0) return nullptr;
  g_checks.fetch_add(1, std::memory_order_relaxed);
  ForwardChecksOff scanning;
  const double max_abs = foreach_norm({t}, INFINITY)[0];
  if (std::isnan(max_abs)) return "nan";
  if (std::isinf(max_abs)) return "inf";
  return nullptr;
}

ForwardChecksOff::ForwardChecksOff() { ++t_forward_checks_off; }
ForwardChecksOff::~ForwardChecksOff() { --t_forward_checks_off; }

uint64_t anomaly_checks() { return g_checks.load(std::memory_order_relaxed); }

std::string forward_op_name(const std::string& node_name) {
  std::string base = node_name;
  const std::string suffix = "Backward";
  if (base.size() > suffix.size() && base.compare(base.size() - suffix.size(), suffix.size(), suffix) == 0)
    base.resize(base.size() - suffix.size());
  std::string out;
  for (size_t i = 0; i < base.size(); ++i) {
    const unsigned char ch = static_cast<unsigned char>(base[i]);
    // A word starts at an upper-case letter after a lower-case one ("LeakyRelu") or at the last
    // capital of a run followed by a lower-case letter ("2DWith"); digits join the word before ("2d").
    if (std::isupper(ch) && i > 0) {
      const unsigned char prev = static_cast<unsigned char>(base[i - 1]);
      const bool next_lower = i + 1 < base.size() && std::islower(static_cast<unsigned char>(base[i + 1]));
      if (std::islower(prev) || (std::isupper(prev) && next_lower)) out += '_';
    }
    out += static_cast<char>(std::tolower(ch));
  }
  return out;
}

void check_forward_outputs(const std::string& node_name, const Node* node, const TensorList& inputs,
                           const TensorList& outputs) {
  if (t_forward_checks_off > 0) return;
  for (size_t o = 0; o < outputs.size(); ++o) {
    const char* kind = non_finite_kind(outputs[o]);
    if (!kind) continue;
    // Made here, or carried in? Every recorded op's outputs are checked, so a non-finite input came
    // from outside them: the data, a parameter, an in-place update or an op without a graph node.
    std::string origin = "every input was finite, so this op made it";
    for (size_t i = 0; i < inputs.size(); ++i)
      if (const char* in_kind = non_finite_kind(inputs[i])) {
        origin = detail::concat("input ", i, " (", inputs[i].meta_str(), ") already held ", in_kind,
                                " values: they came from outside the checked ops (the data, a parameter, an "
                                "in-place update)");
        break;
      }
    const std::string graph_node =
        node ? detail::concat("graph node ", node_name, " #", node->sequence_nr) : std::string("no graph node: grad mode is off");
    MINIDL_FAIL("anomaly mode", "the forward op ", forward_op_name(node_name), " (", graph_node, ", ",
                module_of(node ? node->amp.scope : amp::current_scope_name()), ") produced ", kind,
                " values in its output ", o, " (", outputs[o].meta_str(), "); ", origin);
  }
}

void check_backward_output(const Node& node, size_t input_nr, const Tensor& grad) {
  const char* kind = non_finite_kind(grad);
  if (!kind) return;
  MINIDL_FAIL("anomaly mode", "Function '", node.name(), "' returned ", kind, " values in its gradient for input ",
              input_nr, " (", grad.meta_str(), "); the node (#", node.sequence_nr, ") was recorded by the forward op ",
              forward_op_name(node.name()), " ", module_of(node.amp.scope));
}

}  // namespace minidl::autograd
