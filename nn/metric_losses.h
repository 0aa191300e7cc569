// Modules for the distances and the margin/embedding losses (ops/distance.cpp,
// ops/margin_loss.cpp), as torch.nn's: CosineSimilarity, PairwiseDistance, MarginRankingLoss,
// HingeEmbeddingLoss, SoftMarginLoss, MultiLabelSoftMarginLoss, CosineEmbeddingLoss,
// TripletMarginLoss, MultiMarginLoss, PoissonNLLLoss and GaussianNLLLoss. Their options are torch's constructor
// arguments, in its order; none has parameters (a class weight is a buffer, as torch's).
#pragma once
#include <string>

#include "nn/module.h"
#include "ops/ops.h"

namespace minidl::nn {

class CosineSimilarity : public Module {
 public:
  explicit CosineSimilarity(int64_t dim = 1, double eps = 1e-8) : dim(dim), eps(eps) {}
  Tensor forward(const Tensor& x1, const Tensor& x2);
  Tensor operator()(const Tensor& x1, const Tensor& x2) { return forward(x1, x2); }
  std::string type_name() const override { return "CosineSimilarity"; }
  ModulePtr clone_structure() const override { return std::make_shared<CosineSimilarity>(dim, eps); }
  std::string describe() const override;  // "CosineSimilarity(dim=1, eps=1e-08)"
  int64_t dim;
  double eps;
};

class PairwiseDistance : public Module {
 public:
  explicit PairwiseDistance(double p = 2.0, double eps = 1e-6, bool keepdim = false) : p(p), eps(eps), keepdim(keepdim) {}
  Tensor forward(const Tensor& x1, const Tensor& x2);
  Tensor operator()(const Tensor& x1, const Tensor& x2) { return forward(x1, x2); }
  std::string type_name() const override { return "PairwiseDistance"; }
  ModulePtr clone_structure() const override { return std::make_shared<PairwiseDistance>(p, eps, keepdim); }
  std::string describe() const override;
  double p, eps;
  bool keepdim;
};

// (x1, x2, y) -> loss: MarginRankingLoss and CosineEmbeddingLoss.
class MarginRankingLoss : public Module {
 public:
  explicit MarginRankingLoss(double margin = 0.0, Reduction reduction = Reduction::Mean) : margin(margin), reduction(reduction) {}
  Tensor forward(const Tensor& x1, const Tensor& x2, const Tensor& target);
  Tensor operator()(const Tensor& x1, const Tensor& x2, const Tensor& target) { return forward(x1, x2, target); }
  std::string type_name() const override { return "MarginRankingLoss"; }
  ModulePtr clone_structure() const override { return std::make_shared<MarginRankingLoss>(margin, reduction); }
  std::string describe() const override;
  double margin;
  Reduction reduction;
};

class CosineEmbeddingLoss : public Module {
 public:
  explicit CosineEmbeddingLoss(double margin = 0.0, Reduction reduction = Reduction::Mean) : margin(margin), reduction(reduction) {}
  Tensor forward(const Tensor& x1, const Tensor& x2, const Tensor& target);
  Tensor operator()(const Tensor& x1, const Tensor& x2, const Tensor& target) { return forward(x1, x2, target); }
  std::string type_name() const override { return "CosineEmbeddingLoss"; }
  ModulePtr clone_structure() const override { return std::make_shared<CosineEmbeddingLoss>(margin, reduction); }
  std::string describe() const override;
  double margin;
  Reduction reduction;
};

// (input, target) -> loss.
class HingeEmbeddingLoss : public Module {
 public:
  explicit HingeEmbeddingLoss(double margin = 1.0, Reduction reduction = Reduction::Mean) : margin(margin), reduction(reduction) {}
  Tensor forward(const Tensor& input, const Tensor& target);
  Tensor operator()(const Tensor& input, const Tensor& target) { return forward(input, target); }
  std::string type_name() const override { return "HingeEmbeddingLoss"; }
  ModulePtr clone_structure() const override { return std::make_shared<HingeEmbeddingLoss>(margin, reduction); }
  std::string describe() const override;
  double margin;
  Reduction reduction;
};

class SoftMarginLoss : public Module {
 public:
  explicit SoftMarginLoss(Reduction reduction = Reduction::Mean) : reduction(reduction) {}
  Tensor forward(const Tensor& input, const Tensor& target);
  Tensor operator()(const Tensor& input, const Tensor& target) { return forward(input, target); }
  std::string type_name() const override { return "SoftMarginLoss"; }
  ModulePtr clone_structure() const override { return std::make_shared<SoftMarginLoss>(reduction); }
  std::string describe() const override;
  Reduction reduction;
};

class MultiLabelSoftMarginLoss : public Module {
 public:
  explicit MultiLabelSoftMarginLoss(Tensor weight = Tensor(), Reduction reduction = Reduction::Mean);
  Tensor forward(const Tensor& input, const Tensor& target);
  Tensor operator()(const Tensor& input, const Tensor& target) { return forward(input, target); }
  std::string type_name() const override { return "MultiLabelSoftMarginLoss"; }
  ModulePtr clone_structure() const override { return std::make_shared<MultiLabelSoftMarginLoss>(weight, reduction); }
  std::string describe() const override;
  Tensor weight;  // [C] or undefined: a buffer (moves with the module, in its state dict), as torch's
  Reduction reduction;
};

class MultiMarginLoss : public Module {
 public:
  explicit MultiMarginLoss(int64_t p = 1, double margin = 1.0, Tensor weight = Tensor(), Reduction reduction = Reduction::Mean);
  Tensor forward(const Tensor& input, const Tensor& target);
  Tensor operator()(const Tensor& input, const Tensor& target) { return forward(input, target); }
  std::string type_name() const override { return "MultiMarginLoss"; }
  ModulePtr clone_structure() const override { return std::make_shared<MultiMarginLoss>(p, margin, weight, reduction); }
  std::string describe() const override;
  int64_t p;
  double margin;
  Tensor weight;  // [C] or undefined: a buffer, as above
  Reduction reduction;
};

class PoissonNLLLoss : public Module {
 public:
  explicit PoissonNLLLoss(bool log_input = true, bool full = false, double eps = 1e-8, Reduction reduction = Reduction::Mean)
      : log_input(log_input), full(full), eps(eps), reduction(reduction) {}
  Tensor forward(const Tensor& input, const Tensor& target);
  Tensor operator()(const Tensor& input, const Tensor& target) { return forward(input, target); }
  std::string type_name() const override { return "PoissonNLLLoss"; }
  ModulePtr clone_structure() const override { return std::make_shared<PoissonNLLLoss>(log_input, full, eps, reduction); }
  std::string describe() const override;
  bool log_input, full;
  double eps;
  Reduction reduction;
};

// (anchor, positive, negative) -> loss.
class TripletMarginLoss : public Module {
 public:
  explicit TripletMarginLoss(double margin = 1.0, double p = 2.0, double eps = 1e-6, bool swap = false,
                             Reduction reduction = Reduction::Mean)
      : margin(margin), p(p), eps(eps), swap(swap), reduction(reduction) {}
  Tensor forward(const Tensor& anchor, const Tensor& positive, const Tensor& negative);
  Tensor operator()(const Tensor& a, const Tensor& p_, const Tensor& n) { return forward(a, p_, n); }
  std::string type_name() const override { return "TripletMarginLoss"; }
  ModulePtr clone_structure() const override { return std::make_shared<TripletMarginLoss>(margin, p, eps, swap, reduction); }
  std::string describe() const override;
  double margin, p, eps;
  bool swap;
  Reduction reduction;
};

// (anchor, positive, negative) -> loss with any distance (pairwise_distance when empty).
class TripletMarginWithDistanceLoss : public Module {
 public:
  explicit TripletMarginWithDistanceLoss(DistanceFn distance_function = nullptr, double margin = 1.0, bool swap = false,
                                         Reduction reduction = Reduction::Mean)
      : distance_function(std::move(distance_function)), margin(margin), swap(swap), reduction(reduction) {}
  Tensor forward(const Tensor& anchor, const Tensor& positive, const Tensor& negative);
  Tensor operator()(const Tensor& a, const Tensor& p, const Tensor& n) { return forward(a, p, n); }
  std::string type_name() const override { return "TripletMarginWithDistanceLoss"; }
  ModulePtr clone_structure() const override {
    return std::make_shared<TripletMarginWithDistanceLoss>(distance_function, margin, swap, reduction);
  }
  std::string describe() const override;
  DistanceFn distance_function;
  double margin;
  bool swap;
  Reduction reduction;
};

// (input, target) -> loss; target i64 of input's shape, each row's classes up to its first -1.
class MultiLabelMarginLoss : public Module {
 public:
  explicit MultiLabelMarginLoss(Reduction reduction = Reduction::Mean) : reduction(reduction) {}
  Tensor forward(const Tensor& input, const Tensor& target);
  Tensor operator()(const Tensor& input, const Tensor& target) { return forward(input, target); }
  std::string type_name() const override { return "MultiLabelMarginLoss"; }
  ModulePtr clone_structure() const override { return std::make_shared<MultiLabelMarginLoss>(reduction); }
  std::string describe() const override;
  Reduction reduction;
};

// (input, target, var) -> loss; var of input's shape, or with its last dim 1 or missing.
class GaussianNLLLoss : public Module {
 public:
  explicit GaussianNLLLoss(bool full = false, double eps = 1e-6, Reduction reduction = Reduction::Mean)
      : full(full), eps(eps), reduction(reduction) {}
  Tensor forward(const Tensor& input, const Tensor& target, const Tensor& var);
  Tensor operator()(const Tensor& input, const Tensor& target, const Tensor& var) { return forward(input, target, var); }
  std::string type_name() const override { return "GaussianNLLLoss"; }
  ModulePtr clone_structure() const override { return std::make_shared<GaussianNLLLoss>(full, eps, reduction); }
  std::string describe() const override { return "GaussianNLLLoss()"; }  // torch's repr shows no options
  bool full;
  double eps;
  Reduction reduction;
};

}  // namespace minidl::nn
