// Loss modules (torch.nn.CrossEntropyLoss, NLLLoss, MSELoss, L1Loss, SmoothL1Loss, HuberLoss,
// KLDivLoss, BCELoss, BCEWithLogitsLoss): options structs around the functional losses of ops/ops.h. Class weights and pos_weight are
// registered as buffers, so they follow to() and appear in the state dict, as in PyTorch.
#pragma once
#include "nn/module.h"
#include "ops/ops.h"

namespace minidl::nn {

struct CrossEntropyLossOptions {
  Reduction reduction_ = Reduction::Mean;  // None, Mean (over non-ignored targets, weighted) or Sum
  int64_t ignore_index_ = -100;            // targets equal to this contribute nothing
  double label_smoothing_ = 0.0;           // in [0, 1]: mix of the target with a uniform distribution
  Tensor weight_;                          // optional per-class weight [C]

  CrossEntropyLossOptions& reduction(Reduction r) { reduction_ = r; return *this; }
  CrossEntropyLossOptions& ignore_index(int64_t i) { ignore_index_ = i; return *this; }
  CrossEntropyLossOptions& label_smoothing(double s) { label_smoothing_ = s; return *this; }
  CrossEntropyLossOptions& weight(Tensor w) { weight_ = std::move(w); return *this; }
};

// Loss modules take (input, target), so they are Modules, not Layers.
class CrossEntropyLoss : public Module {
 public:
  explicit CrossEntropyLoss(const CrossEntropyLossOptions& options = {});
  // logits [N, C] (or [C], [N, C, d...]); target: class indices (i64) or class probabilities.
  Tensor forward(const Tensor& input, const Tensor& target);
  Tensor operator()(const Tensor& input, const Tensor& target) { return forward(input, target); }
  std::string type_name() const override { return "CrossEntropyLoss"; }
  ModulePtr clone_structure() const override { return std::make_shared<CrossEntropyLoss>(options); }
  std::string describe() const override;
  CrossEntropyLossOptions options;
  Tensor weight;
};

struct NLLLossOptions {
  Reduction reduction_ = Reduction::Mean;  // None, Mean (weighted) or Sum
  int64_t ignore_index_ = -100;            // targets equal to this contribute nothing
  Tensor weight_;                          // optional per-class weight [C]

  NLLLossOptions& reduction(Reduction r) { reduction_ = r; return *this; }
  NLLLossOptions& ignore_index(int64_t i) { ignore_index_ = i; return *this; }
  NLLLossOptions& weight(Tensor w) { weight_ = std::move(w); return *this; }
};

class NLLLoss : public Module {
 public:
  explicit NLLLoss(const NLLLossOptions& options = {});
  // log-probabilities [N, C]; target: class indices (i64).
  Tensor forward(const Tensor& input, const Tensor& target);
  Tensor operator()(const Tensor& input, const Tensor& target) { return forward(input, target); }
  std::string type_name() const override { return "NLLLoss"; }
  ModulePtr clone_structure() const override { return std::make_shared<NLLLoss>(options); }
  std::string describe() const override;
  NLLLossOptions options;
  Tensor weight;
};

struct MSELossOptions {
  Reduction reduction_ = Reduction::Mean;  // None, Mean or Sum

  MSELossOptions(Reduction r = Reduction::Mean) : reduction_(r) {}  // NOLINT
  MSELossOptions& reduction(Reduction r) { reduction_ = r; return *this; }
};

class MSELoss : public Module {
 public:
  explicit MSELoss(const MSELossOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& input, const Tensor& target);
  Tensor operator()(const Tensor& input, const Tensor& target) { return forward(input, target); }
  std::string type_name() const override { return "MSELoss"; }
  ModulePtr clone_structure() const override { return std::make_shared<MSELoss>(options); }
  std::string describe() const override;
  MSELossOptions options;
};

class L1Loss : public Module {
 public:
  explicit L1Loss(const MSELossOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& input, const Tensor& target);
  Tensor operator()(const Tensor& input, const Tensor& target) { return forward(input, target); }
  std::string type_name() const override { return "L1Loss"; }
  ModulePtr clone_structure() const override { return std::make_shared<L1Loss>(options); }
  std::string describe() const override;
  MSELossOptions options;  // the same single option
};

struct SmoothL1LossOptions {
  Reduction reduction_ = Reduction::Mean;  // None, Mean or Sum
  double beta_ = 1.0;                      // >= 0: where the loss turns from quadratic to linear (0: L1)

  SmoothL1LossOptions& reduction(Reduction r) { reduction_ = r; return *this; }
  SmoothL1LossOptions& beta(double b) { beta_ = b; return *this; }
};

class SmoothL1Loss : public Module {
 public:
  explicit SmoothL1Loss(const SmoothL1LossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target);
  Tensor operator()(const Tensor& input, const Tensor& target) { return forward(input, target); }
  std::string type_name() const override { return "SmoothL1Loss"; }
  ModulePtr clone_structure() const override { return std::make_shared<SmoothL1Loss>(options); }
  std::string describe() const override;
  SmoothL1LossOptions options;
};

struct HuberLossOptions {
  Reduction reduction_ = Reduction::Mean;  // None, Mean or Sum
  double delta_ = 1.0;                     // > 0: where the loss turns from quadratic to linear

  HuberLossOptions& reduction(Reduction r) { reduction_ = r; return *this; }
  HuberLossOptions& delta(double d) { delta_ = d; return *this; }
};

class HuberLoss : public Module {
 public:
  explicit HuberLoss(const HuberLossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target);
  Tensor operator()(const Tensor& input, const Tensor& target) { return forward(input, target); }
  std::string type_name() const override { return "HuberLoss"; }
  ModulePtr clone_structure() const override { return std::make_shared<HuberLoss>(options); }
  std::string describe() const override;
  HuberLossOptions options;
};

struct KLDivLossOptions {
  KLDivReduction reduction_ = KLDivReduction::Mean;  // None, Mean (every element; warns), Sum or BatchMean
  bool log_target_ = false;                          // the target holds log-probabilities

  KLDivLossOptions& reduction(KLDivReduction r) { reduction_ = r; return *this; }
  KLDivLossOptions& log_target(bool l) { log_target_ = l; return *this; }
};

// input: log-probabilities; target: probabilities (or log-probabilities with log_target).
class KLDivLoss : public Module {
 public:
  explicit KLDivLoss(const KLDivLossOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& input, const Tensor& target);
  Tensor operator()(const Tensor& input, const Tensor& target) { return forward(input, target); }
  std::string type_name() const override { return "KLDivLoss"; }
  ModulePtr clone_structure() const override { return std::make_shared<KLDivLoss>(options); }
  std::string describe() const override;
  KLDivLossOptions options;
};

struct BCELossOptions {
  Reduction reduction_ = Reduction::Mean;  // None, Mean or Sum
  Tensor weight_;                          // optional rescaling weight, broadcast to the input
  Tensor pos_weight_;                      // with-logits only: weight of positive examples, per class

  BCELossOptions& reduction(Reduction r) { reduction_ = r; return *this; }
  BCELossOptions& weight(Tensor w) { weight_ = std::move(w); return *this; }
  BCELossOptions& pos_weight(Tensor w) { pos_weight_ = std::move(w); return *this; }
};

// Binary cross-entropy on probabilities (banned under CUDA autocast; prefer BCEWithLogitsLoss).
class BCELoss : public Module {
 public:
  explicit BCELoss(const BCELossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target);
  Tensor operator()(const Tensor& input, const Tensor& target) { return forward(input, target); }
  std::string type_name() const override { return "BCELoss"; }
  ModulePtr clone_structure() const override { return std::make_shared<BCELoss>(options); }
  std::string describe() const override;
  BCELossOptions options;
  Tensor weight;
};

// Sigmoid + binary cross-entropy in one numerically stable op.
class BCEWithLogitsLoss : public Module {
 public:
  explicit BCEWithLogitsLoss(const BCELossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target);
  Tensor operator()(const Tensor& input, const Tensor& target) { return forward(input, target); }
  std::string type_name() const override { return "BCEWithLogitsLoss"; }
  ModulePtr clone_structure() const override { return std::make_shared<BCEWithLogitsLoss>(options); }
  std::string describe() const override;
  BCELossOptions options;
  Tensor weight, pos_weight;
};

// "none", "mean", "sum" (and "batchmean" for kl_div's)
const char* reduction_name(Reduction r);
const char* reduction_name(KLDivReduction r);

}  // namespace minidl::nn
