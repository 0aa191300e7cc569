// Loss functions, matching torch.nn.functional: cross_entropy (class indices or class
// probabilities, ignore_index, label_smoothing, class weights), nll_loss, mse_loss, l1_loss,
// binary_cross_entropy and binary_cross_entropy_with_logits. Autocast policy: FP32 (set in
// amp/policy; binary_cross_entropy is Banned under CUDA autocast).
//
// The training hot path, cross_entropy with class indices and neither weights nor smoothing, is one
// fused node: a kernel computes logsumexp and the picked logit per row in one pass, and the
// backward writes (softmax - onehot) * g / count in one pass from the saved logits and logsumexp.
// Every other case is composed of log_softmax, gather and reductions, so all of it is
// differentiable to any order.
//
// On a GPU no loss here waits for the device: the targets are checked there (a bad one is reported
// at the next synchronisation, framework/deferred_error.h) and the fused loss is reduced there.
#include <cmath>

#include "ops/loss_common.h"

namespace minidl {

using namespace ops_detail;
using autograd::TensorList;

// Autocast policies of this family (the policy table is built from these rows).
namespace {
using P = amp::CastPolicy;
const amp::OpPolicy kCrossEntropy{"cross_entropy", P::FP32, P::FP32};
const amp::OpPolicy kNllLoss{"nll_loss", P::FP32, P::FP32};
const amp::OpPolicy kMseLoss{"mse_loss", P::FP32, P::FP32};
const amp::OpPolicy kL1Loss{"l1_loss", P::FP32, P::FP32};
const amp::OpPolicy kBinaryCrossEntropy{"binary_cross_entropy", P::FP32, P::Banned};
const amp::OpPolicy kBceWithLogits{"binary_cross_entropy_with_logits", P::FP32, P::FP32};
}  // namespace

std::vector<const amp::OpPolicy*> ops_detail::loss_policies() { return {&kCrossEntropy, &kNllLoss, &kMseLoss, &kL1Loss, &kBinaryCrossEntropy, &kBceWithLogits}; }

namespace {
// The options with a (possibly autocast) class weight swapped in.
CrossEntropyOptions with_weight(CrossEntropyOptions o, const Tensor& weight) {
  o.weight = weight;
  return o;
}

// Class-index targets: i64 of shape [N, d1, ...] for input [N, C, d1, ...], or 0-D for input [C].
void check_class_target(const char* op, const Tensor& input, const Tensor& target) {
  MINIDL_CHECK(input.dim() >= 1, op, "expected an input of shape [C] or [N, C, d1, ...], got ", input.meta_str());
  MINIDL_CHECK(target.dtype() == DType::I64, op, "expected class-index targets of dtype i64, got ", target.meta_str());
  Shape want;
  if (input.dim() >= 2) {
    want.push_back(input.shape()[0]);
    want.insert(want.end(), input.shape().begin() + 2, input.shape().end());
  }
  MINIDL_CHECK(target.shape() == want, op, "expected target of shape ", shape_str(want), " for input ",
               input.meta_str(), ", got target ", target.meta_str());
}

// Weight: 1-D, one floating value per class. Returned in the input's dtype.
Tensor checked_weight(const char* op, const Tensor& weight, const Tensor& input, int64_t classes) {
  if (!weight.defined()) return weight;
  check_same_device(op, input, weight);
  MINIDL_CHECK(weight.is_floating_point() && weight.dim() == 1 && weight.numel() == classes, op,
               "weight must be a floating 1-D tensor with one value per class (", classes, "), got ", weight.meta_str());
  return cast(weight, input.dtype());
}

// Every target is a class in [0, classes) or ignore_index, checked now on the host (CPU targets).
// Returns how many are not ignored.
int64_t check_class_range_on_host(const char* op, const Tensor& target, int64_t classes, int64_t ignore_index) {
  const Tensor h = target.to(Device::cpu()).contiguous();
  const int64_t* p = h.data_ptr<int64_t>();
  const int64_t n = h.numel();
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (p[i] == ignore_index) continue;
    MINIDL_CHECK(p[i] >= 0 && p[i] < classes, op, "target ", p[i], " is out of bounds for ", classes,
                 " classes (expected 0..", classes - 1, " or ignore_index ", ignore_index, ")");
    ++count;
  }
  return count;
}

// The same check on either device: on a GPU it is queued there (named as `id`) and reported at the
// next synchronisation, so nothing waits for the device here.
void check_class_range(const char* op, cuda::DeferredOp id, const Tensor& target, int64_t classes, int64_t ignore_index) {
  if (device_checks_indices(target.device()))
    check_index_range_on_device(target, {id, classes, ignore_index, /*skip_detail=*/true});
  else
    check_class_range_on_host(op, target, classes, ignore_index);
}

// Weight of each target's class ([N, d1...]; 0 where ignored) and the targets with ignored entries
// replaced by class 0 so they can index.
struct TargetWeights {
  Tensor mask;   // bool, true where not ignored
  Tensor safe;   // i64 targets, ignored -> 0
  Tensor w;      // input dtype
};
TargetWeights target_weights(const Tensor& target, const Tensor& weight, int64_t ignore_index, DType dtype) {
  TargetWeights t;
  t.mask = ne(target, static_cast<double>(ignore_index));
  t.safe = where(t.mask, target, zeros_like(target));
  t.w = cast(t.mask, dtype);
  if (weight.defined()) t.w = mul(t.w, index_select(weight, 0, t.safe.reshape({-1})).reshape(target.shape()));
  return t;
}

// nll over validated [N, C, d...] log-probabilities and [N, d...] targets.
Tensor nll_core(const Tensor& logp, const Tensor& target, const Tensor& weight, Reduction reduction, int64_t ignore_index) {
  TargetWeights t = target_weights(target, weight, ignore_index, logp.dtype());
  Tensor picked = gather(logp, 1, t.safe.unsqueeze(1)).squeeze(1);
  // Ignored targets are selected out (not multiplied by their 0 weight): when every target is
  // ignored the mean's 1/0 gradient must not turn into inf * 0 = NaN; PyTorch's gradient is 0 there.
  Tensor loss = where(t.mask, neg(mul(picked, t.w)), zeros_like(t.w));
  if (reduction == Reduction::Mean) return div(sum(loss), sum(t.w));  // weighted mean, as PyTorch
  return apply_reduction(loss, reduction);
}

// The fused loss reduced (sum or mean), and the scale of its gradient: 1 / count for the mean over
// `count` non-ignored targets, 0 when every target is ignored (no gradient then), else 1. The scale
// is a number when the count was taken on the host, a 0-dim tensor (compute dtype) on the device.
struct FusedReduction {
  Tensor out;
  double scale = 1.0;
  Tensor scale_on_device;
};

double gradient_scale(Reduction reduction, int64_t count) {
  if (reduction != Reduction::Mean) return 1.0;
  return count > 0 ? 1.0 / static_cast<double>(count) : 0.0;
}

// On the host (CPU losses): a serial f64 sum of the per-row losses, exact enough and independent of
// the thread count.
FusedReduction reduce_rows_on_host(const Tensor& loss_rows, Reduction reduction, int64_t count, DType dtype, Device device) {
  const std::vector<double> v = loss_rows.to_vector<double>();
  double total = 0;
  for (double l : v) total += l;
  if (reduction == Reduction::Mean) total /= static_cast<double>(count);  // 0/0 = NaN when all ignored, as PyTorch
  return {scalar_tensor(total, TensorOptions(dtype).device(device)), gradient_scale(reduction, count), Tensor()};
}

// On the device, without waiting for it: an f64 sum of the per-row losses (the reduce kernel's order
// is fixed, so every run gives the same bits, and the f64 sum rounds into the result's dtype as the
// host's does) and the count of non-ignored targets, which stays there too.
FusedReduction reduce_rows_on_device(const Tensor& loss_rows, const Tensor& target, Reduction reduction,
                                     int64_t ignore_index, DType dtype, DType compute) {
  const Tensor total = sum(cast(loss_rows, DType::F64));
  if (reduction == Reduction::Sum) return {cast(total, dtype), 1.0, Tensor()};
  const Tensor count = cast(sum(ne(target, static_cast<double>(ignore_index))), DType::F64);
  const Tensor out = cast(div(total, count), dtype);  // 0/0 = NaN when all ignored, as PyTorch
  const Tensor scale = where(gt(count, 0.0), div(ones_like(count), count), zeros_like(count));
  return {out, 1.0, cast(scale, compute)};
}

// The fused path: logits [N, C], targets [N]. CPU targets are checked here; on a GPU the kernel
// checks them (a bad target is reported at the next synchronisation).
Tensor fused_cross_entropy(const Tensor& x, const Tensor& target, Reduction reduction, int64_t ignore_index) {
  const int64_t rows = x.shape()[0];
  const bool on_device = device_checks_indices(x.device());
  const int64_t host_count = on_device ? 0 : check_class_range_on_host("cross_entropy", target, x.shape()[1], ignore_index);
  const DType cdt = x.dtype() == DType::F64 ? DType::F64 : DType::F32;
  const Tensor xc = x.detach().contiguous(), tc = target.contiguous();
  Tensor loss_rows = new_empty({rows}, cdt, x.device());
  Tensor stats = new_empty({rows, 2}, cdt, x.device());  // each row's max and log-sum-exp past it
  K().cross_entropy.get(x.device(), x.dtype())(loss_rows, stats, xc, tc, ignore_index);
  FusedReduction r;
  if (reduction == Reduction::None) r.out = cast(loss_rows, x.dtype());
  else if (on_device) r = reduce_rows_on_device(loss_rows, tc, reduction, ignore_index, x.dtype(), cdt);
  else r = reduce_rows_on_host(loss_rows, reduction, host_count, x.dtype(), x.device());
  autograd::record("CrossEntropyBackward", {x}, {r.out}, {x, tc, stats},
                   [scale = r.scale, scale_t = r.scale_on_device, ignore_index, cdt](const TensorList& g, const TensorList& s) {
                     const Tensor &xs = s[0], &ts = s[1], &row_stats = s[2];
                     if (GradMode::is_enabled()) {
                       // create_graph: the same formula in differentiable ops.
                       Tensor mask = ne(ts, static_cast<double>(ignore_index));
                       Tensor safe = where(mask, ts, zeros_like(ts));
                       Tensor onehot = cast(one_hot(safe, xs.shape()[1]), xs.dtype());
                       Tensor gr = mul(g[0].dim() == 0 ? g[0] : g[0].unsqueeze(1), cast(mask, xs.dtype()).unsqueeze(1));
                       // A device-side 1/count multiplies in the compute dtype and rounds once, as the
                       // host's double scale does (not rounded to f16/bf16 first).
                       gr = scale_t.defined() ? cast(mul(cast(gr, cdt), scale_t), xs.dtype()) : mul(gr, scale);
                       return TensorList{mul(sub(softmax(xs, 1), onehot), gr)};
                     }
                     // A device-side scale is folded into g (the kernel computes scale * g in the
                     // compute dtype either way, so the products are the same).
                     Tensor gc = cast(g[0], cdt);
                     if (scale_t.defined()) gc = mul(gc, scale_t);
                     Tensor gx = new_empty(xs.shape(), xs.dtype(), xs.device());
                     K().cross_entropy_backward.get(xs.device(), xs.dtype())(gx, xs.contiguous(), row_stats, ts, gc.contiguous(),
                                                                             scale_t.defined() ? 1.0 : scale, ignore_index);
                     return TensorList{gx};
                   });
  return r.out;
}

// Logits [N, C, d1, ...] as [N * d1 * ..., C] rows (a copy when there are spatial dims).
Tensor classes_last(const Tensor& x) {
  if (x.dim() == 2) return x;
  Shape perm{0};
  for (int64_t d = 2; d < x.dim(); ++d) perm.push_back(d);
  perm.push_back(1);
  return x.permute(perm).reshape({-1, x.shape()[1]});
}

Tensor cross_entropy_probs(const Tensor& logits, const Tensor& target, const CrossEntropyOptions& o, int64_t class_dim) {
  const char* op = "cross_entropy";
  const int64_t classes = logits.shape()[class_dim];
  MINIDL_CHECK(o.ignore_index < 0, op, "ignore_index is not supported for probability (floating point) targets, got ",
               o.ignore_index);
  check_same_device(op, logits, target);
  Tensor weight = checked_weight(op, o.weight, logits, classes);
  Tensor logp = log_softmax(logits, class_dim);
  // The target keeps its dtype: -(log_softmax(x) * target) promotes, as PyTorch's (f32 logits with an
  // f64 target give an f64 loss).
  Tensor t = target;
  if (o.label_smoothing > 0) t = add(mul(t, 1.0 - o.label_smoothing), o.label_smoothing / static_cast<double>(classes));
  Tensor prod = mul(logp, t);
  if (weight.defined()) {
    Shape ws(logits.dim(), 1);
    ws[class_dim] = classes;
    prod = mul(prod, weight.reshape(ws));
  }
  switch (o.reduction) {
    case Reduction::None: return neg(sum(prod, {class_dim}));
    case Reduction::Sum: return neg(sum(prod));
    case Reduction::Mean: return div(neg(sum(prod)), static_cast<double>(logits.numel() / std::max<int64_t>(classes, 1)));
  }
  return prod;
}
}  // namespace

Tensor nll_loss(const Tensor& input_arg, const Tensor& target, const CrossEntropyOptions& o_arg) {
  amp::AutocastInputs in(kNllLoss, {input_arg, o_arg.weight});
  const Tensor& input = in[0];
  const CrossEntropyOptions o = with_weight(o_arg, in[1]);
  const char* op = "nll_loss";
  check_defined(input, op, "input");
  check_defined(target, op, "target");
  check_floating(op, input);
  check_same_device(op, input, target);
  MINIDL_CHECK(o.label_smoothing == 0.0, op, "label_smoothing is not supported (got ", o.label_smoothing,
               "); use cross_entropy");
  check_class_target(op, input, target);
  if (input.dim() == 1) {
    Tensor r = nll_loss(input.unsqueeze(0), target.reshape({1}), o);
    return o.reduction == Reduction::None ? r.reshape({}) : r;
  }
  const int64_t classes = input.shape()[1];
  Tensor weight = checked_weight(op, o.weight, input, classes);
  check_class_range(op, cuda::DeferredOp::NllLoss, target, classes, o.ignore_index);
  return nll_core(input, target, weight, o.reduction, o.ignore_index);
}

Tensor cross_entropy(const Tensor& logits_arg, const Tensor& target_arg, const CrossEntropyOptions& o_arg) {
  amp::AutocastInputs in(kCrossEntropy, {logits_arg, target_arg, o_arg.weight});
  const Tensor &logits = in[0], &target = in[1];
  const CrossEntropyOptions o = with_weight(o_arg, in[2]);
  const char* op = "cross_entropy";
  check_defined(logits, op, "input");
  check_defined(target, op, "target");
  check_floating(op, logits);
  MINIDL_CHECK(logits.dim() >= 1, op, "expected an input of shape [C] or [N, C, d1, ...], got ", logits.meta_str());
  MINIDL_CHECK(o.label_smoothing >= 0.0 && o.label_smoothing <= 1.0, op,
               "label_smoothing must be between 0.0 and 1.0, got ", o.label_smoothing);
  const int64_t class_dim = logits.dim() == 1 ? 0 : 1;
  if (target.shape() == logits.shape()) {
    // Same shape as the input: class probabilities, as PyTorch.
    MINIDL_CHECK(target.is_floating_point(), op, "expected a floating point target with class probabilities, got ",
                 target.meta_str());
    return cross_entropy_probs(logits, target, o, class_dim);
  }
  check_same_device(op, logits, target);
  check_class_target(op, logits, target);
  if (logits.dim() == 1) {
    Tensor r = cross_entropy(logits.unsqueeze(0), target.reshape({1}), o);
    return o.reduction == Reduction::None ? r.reshape({}) : r;
  }
  const int64_t classes = logits.shape()[1];
  Tensor weight = checked_weight(op, o.weight, logits, classes);

  if (!weight.defined() && o.label_smoothing == 0.0) {
    Tensor loss = fused_cross_entropy(classes_last(logits), target.reshape({-1}), o.reduction, o.ignore_index);
    return o.reduction == Reduction::None ? loss.reshape(target.shape()) : loss;
  }
  // Checked before any kernel reads the targets, so that a bad one is named as a target.
  check_class_range(op, cuda::DeferredOp::CrossEntropy, target, classes, o.ignore_index);

  Tensor logp = log_softmax(logits, 1);
  Tensor nll = nll_core(logp, target, weight, o.reduction, o.ignore_index);
  if (o.label_smoothing == 0.0) return nll;
  // Label smoothing, as PyTorch 2.x: (1 - e) * nll + e / C * smooth, where smooth is the
  // (weighted) sum of -log p over classes, 0 at ignored targets. Its mean divides by the summed
  // target weights, or by the number of non-ignored targets when unweighted (PyTorch 1.x divided
  // by all elements, ignored ones included).
  const double eps = o.label_smoothing;
  Tensor s = logp;
  if (weight.defined()) {
    Shape ws(logits.dim(), 1);
    ws[1] = classes;
    s = mul(s, weight.reshape(ws));
  }
  TargetWeights t = target_weights(target, weight, o.ignore_index, logits.dtype());
  Tensor smooth = where(t.mask, neg(sum(s, {1})), zeros(target.shape(), TensorOptions(logits.dtype()).device(logits.device())));
  Tensor ret;
  switch (o.reduction) {
    case Reduction::None: ret = smooth; break;
    case Reduction::Sum: ret = sum(smooth); break;
    case Reduction::Mean: ret = div(sum(smooth), sum(t.w)); break;  // t.w is the 0/1 mask when unweighted
  }
  return add(mul(nll, 1.0 - eps), mul(ret, eps / static_cast<double>(classes)));
}

// ---- regression losses

Tensor mse_loss(const Tensor& input_arg, const Tensor& target_arg, Reduction reduction) {
  amp::AutocastInputs in(kMseLoss, {input_arg, target_arg});
  const Tensor &input = in[0], &target = in[1];
  check_loss_pair("mse_loss", input, target);
  warn_if_target_broadcasts("mse_loss", input, target);
  Tensor d = sub(input, target);
  return apply_reduction(mul(d, d), reduction);
}

Tensor l1_loss(const Tensor& input_arg, const Tensor& target_arg, Reduction reduction) {
  amp::AutocastInputs in(kL1Loss, {input_arg, target_arg});
  const Tensor &input = in[0], &target = in[1];
  check_loss_pair("l1_loss", input, target);
  warn_if_target_broadcasts("l1_loss", input, target);
  return apply_reduction(abs(sub(input, target)), reduction);
}

// ---- binary cross-entropy

namespace {
void check_same_shape(const char* op, const Tensor& input, const Tensor& target) {
  MINIDL_CHECK(input.shape() == target.shape(), op, "target size ", shape_str(target.shape()),
               " must be the same as input size ", shape_str(input.shape()));
}

// log(x) clamped to >= -100, as PyTorch's binary_cross_entropy (so p = 0 or 1 gives a finite loss).
Tensor clamped_log(const Tensor& x) { return clamp(log(x), -100.0, std::nullopt); }

// softplus(-x) = log(1 + e^-x), computed stably as max(-x, 0) + log(1 + e^-|x|), with the smooth
// gradient sigmoid(x) - 1 (the composite form would be wrong at the kink x = 0).
Tensor softplus_neg(const Tensor& x) {
  Tensor out;
  {
    NoGradGuard ng;
    Tensor xd = x.detach();
    out = add(relu(neg(xd)), log(add(exp(neg(abs(xd))), 1.0)));
  }
  autograd::record("SoftplusNegBackward", {x}, {out}, {x}, [](const TensorList& g, const TensorList& s) {
    return TensorList{mul(g[0], sub(sigmoid(s[0]), 1.0))};
  });
  return out;
}
}  // namespace

Tensor binary_cross_entropy(const Tensor& probs_arg, const Tensor& target_arg, Reduction reduction) {
  amp::AutocastInputs in(kBinaryCrossEntropy, {probs_arg, target_arg});
  const Tensor &probs = in[0], &target_in = in[1];
  const char* op = "binary_cross_entropy";
  check_loss_pair(op, probs, target_in);
  // PyTorch refuses integer and bool targets here ("Found dtype Long but expected Float").
  MINIDL_CHECK(target_in.is_floating_point(), op, "expected a floating point target, got ", target_in.meta_str());
  check_same_shape(op, probs, target_in);
  if (probs.numel() > 0) {
    NoGradGuard ng;
    const double lo = min(probs.detach()).item(), hi = max(probs.detach()).item();
    MINIDL_CHECK(lo >= 0.0 && hi <= 1.0, op, "all elements of input should be between 0 and 1, got values in [", lo,
                 ", ", hi, "]");
  }
  const Tensor p = probs;
  const Tensor y = cast(target_in, probs.dtype());
  Tensor loss;
  {
    NoGradGuard ng;
    Tensor pd = p.detach(), yd = y.detach();
    loss = neg(add(mul(yd, clamped_log(pd)), mul(rsub(yd, 1.0), clamped_log(rsub(pd, 1.0)))));
  }
  // d/dp = (p - y) / max(p (1 - p), eps), with PyTorch's guard eps = 1e-12 as a float constant (so
  // 9.9999999600419720e-13 in f64); d/dy = log(1 - p) - log(p), not clamped (+-inf at p = 0 or 1), as
  // PyTorch's binary_cross_entropy_target_backward.
  autograd::record("BinaryCrossEntropyBackward", {p, y}, {loss}, {p, y}, [](const TensorList& g, const TensorList& s) {
    const Tensor &pv = s[0], &yv = s[1];
    constexpr double kEps = static_cast<double>(1e-12f);
    Tensor gp = div(mul(g[0], sub(pv, yv)), clamp(mul(pv, rsub(pv, 1.0)), kEps, std::nullopt));
    Tensor gy = mul(g[0], sub(log(rsub(pv, 1.0)), log(pv)));
    return TensorList{gp, gy};
  });
  return apply_reduction(loss, reduction);
}

Tensor binary_cross_entropy_with_logits(const Tensor& logits_arg, const Tensor& target_arg, Reduction reduction,
                                        const Tensor& pos_weight_arg) {
  amp::AutocastInputs in(kBceWithLogits, {logits_arg, target_arg, pos_weight_arg});
  const Tensor &logits = in[0], &target_in = in[1], &pos_weight_in = in[2];
  const char* op = "binary_cross_entropy_with_logits";
  check_loss_pair(op, logits, target_in);
  // PyTorch refuses integer and bool targets here ("Found dtype Long but expected Float").
  MINIDL_CHECK(target_in.is_floating_point(), op, "expected a floating point target, got ", target_in.meta_str());
  check_same_shape(op, logits, target_in);
  const Tensor x = logits;
  const Tensor y = cast(target_in, logits.dtype());
  Tensor pw;
  if (pos_weight_in.defined()) {
    check_same_device(op, logits, pos_weight_in);
    MINIDL_CHECK(broadcast_shapes(pos_weight_in.shape(), logits.shape(), op) == logits.shape(), op, "pos_weight ",
                 shape_str(pos_weight_in.shape()), " does not broadcast to the input's shape ", shape_str(logits.shape()));
    pw = cast(pos_weight_in, logits.dtype());
  }
  // loss = (1 - y) x + l softplus(-x), with l = (pw - 1) y + 1 (l = 1 without pos_weight).
  Tensor loss;
  {
    NoGradGuard ng;
    Tensor xd = x.detach(), yd = y.detach();
    Tensor sp = softplus_neg(xd);
    if (pw.defined()) sp = mul(add(mul(sub(pw.detach(), 1.0), yd), 1.0), sp);
    loss = add(mul(rsub(yd, 1.0), xd), sp);
  }
  autograd::record("BinaryCrossEntropyWithLogitsBackward", {x, y, pw}, {loss}, {x, y, pw},
                   [](const TensorList& g, const TensorList& s) {
                     const Tensor &xv = s[0], &yv = s[1], &pv = s[2];
                     // dx = l sigmoid(x) - pw y;  dy = (pw - 1) softplus(-x) - x;  dpw = y softplus(-x)
                     if (!pv.defined())
                       return TensorList{mul(g[0], sub(sigmoid(xv), yv)), mul(g[0], neg(xv)), Tensor()};
                     Tensor l = add(mul(sub(pv, 1.0), yv), 1.0);
                     Tensor sp = softplus_neg(xv);
                     Tensor gx = mul(g[0], sub(mul(l, sigmoid(xv)), mul(pv, yv)));
                     Tensor gy = mul(g[0], sub(mul(sub(pv, 1.0), sp), xv));
                     Tensor gpw = sum_to(mul(mul(g[0], yv), sp), pv.shape());
                     return TensorList{gx, gy, gpw};
                   });
  return apply_reduction(loss, reduction);
}

}  // namespace minidl
