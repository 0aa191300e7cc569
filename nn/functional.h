// nn::functional: the stateless forms of the layers and losses (torch.nn.functional), forwarding
// to the op library in ops/ops.h. `nn::functional::cross_entropy(logits, target)` is what a
// training loop calls; everything here is differentiable and follows the ops' autocast policies.
#pragma once
#include "ops/ops.h"

namespace minidl {
class Generator;  // framework/generator.h
}  // namespace minidl

namespace minidl::nn::functional {

// ---- activations
inline Tensor relu(const Tensor& x) { return minidl::relu(x); }
inline Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01) { return minidl::leaky_relu(x, negative_slope); }
inline Tensor gelu(const Tensor& x, bool tanh_approximation = false) { return minidl::gelu(x, tanh_approximation); }
inline Tensor sigmoid(const Tensor& x) { return minidl::sigmoid(x); }
inline Tensor tanh(const Tensor& x) { return minidl::tanh(x); }
inline Tensor softplus(const Tensor& x, double beta = 1.0, double threshold = 20.0) {
  return minidl::softplus(x, beta, threshold);
}
inline Tensor silu(const Tensor& x) { return minidl::silu(x); }
inline Tensor elu(const Tensor& x, double alpha = 1.0) { return minidl::elu(x, alpha); }
inline Tensor hardtanh(const Tensor& x, double min_val = -1.0, double max_val = 1.0) {
  return minidl::hardtanh(x, min_val, max_val);
}
inline Tensor relu6(const Tensor& x) { return minidl::relu6(x); }
inline Tensor prelu(const Tensor& x, const Tensor& weight) { return minidl::prelu(x, weight); }
inline Tensor hardswish(const Tensor& x) { return minidl::hardswish(x); }
inline Tensor hardsigmoid(const Tensor& x) { return minidl::hardsigmoid(x); }
inline Tensor mish(const Tensor& x) { return minidl::mish(x); }
inline Tensor logsigmoid(const Tensor& x) { return minidl::logsigmoid(x); }
inline Tensor selu(const Tensor& x) { return minidl::selu(x); }
inline Tensor celu(const Tensor& x, double alpha = 1.0) { return minidl::celu(x, alpha); }
inline Tensor softsign(const Tensor& x) { return minidl::softsign(x); }
inline Tensor tanhshrink(const Tensor& x) { return minidl::tanhshrink(x); }
inline Tensor softshrink(const Tensor& x, double lambd = 0.5) { return minidl::softshrink(x, lambd); }
inline Tensor hardshrink(const Tensor& x, double lambd = 0.5) { return minidl::hardshrink(x, lambd); }
inline Tensor threshold(const Tensor& x, double threshold, double value) { return minidl::threshold(x, threshold, value); }
inline Tensor glu(const Tensor& x, int64_t dim = -1) { return minidl::glu(x, dim); }
inline Tensor softmax(const Tensor& x, int64_t dim) { return minidl::softmax(x, dim); }
inline Tensor log_softmax(const Tensor& x, int64_t dim) { return minidl::log_softmax(x, dim); }
inline Tensor softmin(const Tensor& x, int64_t dim) { return minidl::softmax(minidl::neg(x), dim); }

// ---- layers
inline Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor()) {
  return minidl::linear(x, weight, bias);
}
inline Tensor dropout(const Tensor& x, double p = 0.5, bool training = true, Generator* gen = nullptr) {
  return minidl::dropout(x, p, training, gen);
}

// F.pad(x, (1, 1, 2, 2), mode="reflect"): pads from the last dim backwards (ops/nn_ops.h).
inline Tensor pad(const Tensor& x, const std::vector<int64_t>& pads, const std::string& mode = "constant",
                  double value = 0.0) {
  return minidl::pad(x, pads, pad_mode_from_string(mode), value);
}

// ---- losses
// F.interpolate(x, size=(14, 14), mode="bilinear"):
//   interpolate(x, InterpolateOptions().size({14, 14}).mode(InterpolateMode::Bilinear)) (ops/nn_ops.h).
inline Tensor interpolate(const Tensor& x, const InterpolateOptions& options) { return minidl::interpolate(x, options); }
inline Tensor cross_entropy(const Tensor& logits, const Tensor& target, const CrossEntropyOptions& opts = {}) {
  return minidl::cross_entropy(logits, target, opts);
}
inline Tensor nll_loss(const Tensor& log_probs, const Tensor& target, const CrossEntropyOptions& opts = {}) {
  return minidl::nll_loss(log_probs, target, opts);
}
inline Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean) {
  return minidl::mse_loss(input, target, reduction);
}
inline Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean) {
  return minidl::l1_loss(input, target, reduction);
}
inline Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean,
                             double beta = 1.0) {
  return minidl::smooth_l1_loss(input, target, reduction, beta);
}
inline Tensor huber_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean,
                         double delta = 1.0) {
  return minidl::huber_loss(input, target, reduction, delta);
}
inline Tensor kl_div(const Tensor& input, const Tensor& target, KLDivReduction reduction = KLDivReduction::Mean,
                     bool log_target = false) {
  return minidl::kl_div(input, target, reduction, log_target);
}
inline Tensor binary_cross_entropy(const Tensor& probs, const Tensor& target, Reduction reduction = Reduction::Mean) {
  return minidl::binary_cross_entropy(probs, target, reduction);
}
inline Tensor binary_cross_entropy_with_logits(const Tensor& logits, const Tensor& target,
                                               Reduction reduction = Reduction::Mean, const Tensor& pos_weight = Tensor()) {
  return minidl::binary_cross_entropy_with_logits(logits, target, reduction, pos_weight);
}

// distances and margin/embedding losses: the ops of ops/ops.h under their torch.nn.functional names
using minidl::bilinear;
using minidl::cdist;
using minidl::cosine_embedding_loss;
using minidl::cosine_similarity;
using minidl::gaussian_nll_loss;
using minidl::hinge_embedding_loss;
using minidl::margin_ranking_loss;
using minidl::multi_margin_loss;
using minidl::multilabel_soft_margin_loss;
using minidl::normalize;
using minidl::pairwise_distance;
using minidl::poisson_nll_loss;
using minidl::soft_margin_loss;
using minidl::triplet_margin_loss;

}  // namespace minidl::nn::functional
