// Connectionist temporal classification loss (torch.nn.functional.ctc_loss): the negative log
// likelihood of each target over every alignment of it to the input frames (blanks between and
// around the labels, repeats merged), by PyTorch's log-space forward recursion over the extended
// target l' = (blank, y1, blank, y2, ..., blank). Written in whole-batch ops, one step per frame
// [N, 2S+1], under no-grad; the backward is its own node computing the backward variables and, as
// PyTorch's (which assumes log-softmax inputs), grad = exp(lp) - exp(log(alpha beta) + nll - lp)
// per class, so a log_probs leaf gets the same gradient as in PyTorch and a log_softmax before it
// the exact one. Lengths and target values are read on the host (PyTorch's CPU checks; a wait on
// CUDA). Autocast policy: FP32 on CPU (PyTorch's CPU list), None on CUDA (not on its list).
#include <limits>

#include "ops/common.h"
#include "ops/loss_common.h"
#include "ops/sequence_ops.h"

namespace minidl {

using namespace ops_detail;
using autograd::TensorList;

namespace {
using P = amp::CastPolicy;
const amp::OpPolicy kCtcLoss{"ctc_loss", P::FP32, P::None};
const char* kOp = "ctc_loss";
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

Tensor neg_inf_like(const Tensor& x) { return full({}, kNegInf, TensorOptions(x.dtype()).device(x.device())); }

// log(exp(a) + exp(b) + exp(c)) as PyTorch's recursion: the largest taken out, a largest of -inf read as 0.
Tensor log_add3(const Tensor& a, const Tensor& b, const Tensor& c) {
  Tensor m = maximum(maximum(a, b), c);
  m = where(eq(m, kNegInf), zeros({}, TensorOptions(m.dtype()).device(m.device())), m);
  return add(log(add(add(exp(sub(a, m)), exp(sub(b, m))), exp(sub(c, m)))), m);
}

// x [N, L] moved k states along dim 1, -inf where nothing moved in: toward higher states (right)
// for the forward recursion, toward lower ones for the backward.
Tensor shifted(const Tensor& x, int64_t k, bool right) {
  const int64_t n = x.size(0), len = x.size(1), kept = std::max<int64_t>(len - k, 0);
  Tensor fill = full({n, std::min(k, len)}, kNegInf, TensorOptions(x.dtype()).device(x.device()));
  return right ? cat({fill, x.narrow(1, 0, kept)}, 1) : cat({x.narrow(1, len - kept, kept), fill}, 1);
}

std::vector<int64_t> host_lengths(const Tensor& lengths, int64_t batch, const char* name) {
  MINIDL_CHECK(lengths.defined() && (lengths.dtype() == DType::I64 || lengths.dtype() == DType::I32), kOp, name,
               " must be an i64 or i32 tensor, got ", lengths.defined() ? lengths.meta_str() : std::string("none"));
  MINIDL_CHECK(lengths.numel() == batch && lengths.dim() <= 1, kOp, name, " must be of size batch_size (", batch, "), got ",
               lengths.meta_str());
  std::vector<int64_t> v = cast(lengths, DType::I64).to(Device::cpu()).reshape({-1}).to_vector<int64_t>();
  for (int64_t x : v) MINIDL_CHECK(x >= 0, kOp, name, " must be non-negative, got ", x);
  return v;
}

// The loss node: per-sample nll from log_probs [T, N, C], padded targets [N, S].
struct CtcProblem {
  Tensor lp;        // [T, N, C]
  Tensor ext;       // [N, 2S+1] i64: the extended targets (padding clamped into the label range)
  Tensor skip;      // [N, 2S+1] bool: state s may be entered from s - 2
  Tensor il, tl;    // [N, 1] i64
  int64_t T, N, L;
};

// alpha [T, N, L] of PyTorch's recursion (states past 2 tl and frames past il hold values nothing reads).
Tensor forward_variables(const CtcProblem& p, const Tensor& lpe) {
  const TensorOptions idx = TensorOptions(DType::I64).device(p.lp.device());
  const Tensor state = arange(0.0, static_cast<double>(p.L), 1.0, idx).unsqueeze(0);
  const Tensor start = logical_or(eq(state, 0.0), logical_and(eq(state, 1.0), gt(p.tl, 0.0)));
  std::vector<Tensor> alphas{where(start, lpe.select(0, 0), neg_inf_like(lpe))};
  for (int64_t t = 1; t < p.T; ++t) {
    const Tensor& a = alphas.back();
    const Tensor skip = where(p.skip, shifted(a, 2, true), neg_inf_like(a));
    alphas.push_back(add(log_add3(a, shifted(a, 1, true), skip), lpe.select(0, t)));
  }
  return stack(alphas, 0);
}

// beta [T, N, L]: -inf past each sample's last frame and above its last state.
Tensor backward_variables(const CtcProblem& p, const Tensor& lpe) {
  const TensorOptions idx = TensorOptions(DType::I64).device(p.lp.device());
  const Tensor state = arange(0.0, static_cast<double>(p.L), 1.0, idx).unsqueeze(0);
  const Tensor two_tl = mul(p.tl, 2.0);
  const Tensor last_states = logical_or(eq(state, two_tl), logical_and(eq(state, sub(two_tl, 1.0)), gt(p.tl, 0.0)));
  const Tensor skip_from = cat({p.skip.narrow(1, 2, std::max<int64_t>(p.L - 2, 0)),
                                zeros({p.N, std::min<int64_t>(2, p.L)}, TensorOptions(DType::Bool).device(p.lp.device()))}, 1);
  const Tensor last_frame = sub(p.il, 1.0);
  std::vector<Tensor> betas(static_cast<size_t>(p.T));
  Tensor next;
  for (int64_t t = p.T - 1; t >= 0; --t) {
    const Tensor lp_t = lpe.select(0, t);
    const Tensor init = where(last_states, lp_t, neg_inf_like(lp_t));
    Tensor b = init;
    if (next.defined()) {
      const Tensor skip = where(skip_from, shifted(next, 2, false), neg_inf_like(next));
      const Tensor inner = add(log_add3(next, shifted(next, 1, false), skip), lp_t);
      b = where(eq(last_frame, static_cast<double>(t)), init, where(gt(last_frame, static_cast<double>(t)), inner, neg_inf_like(inner)));
    } else {
      b = where(eq(last_frame, static_cast<double>(t)), init, neg_inf_like(init));
    }
    betas[static_cast<size_t>(t)] = next = b;
  }
  return stack(betas, 0);
}

// PyTorch's gradient of the per-sample nll with respect to log_probs, times g [N].
Tensor ctc_gradient(const CtcProblem& p, const Tensor& lpe, const Tensor& alpha, const Tensor& nll, const Tensor& g,
                    bool zero_infinity) {
  const Tensor beta = backward_variables(p, lpe);
  const Tensor ab = add(alpha, beta);  // [T, N, L]
  Tensor m = amax(ab, {2}, true);
  m = where(eq(m, kNegInf), zeros({}, TensorOptions(m.dtype()).device(m.device())), m);
  const int64_t C = p.lp.size(2);
  const Tensor per_class = scatter_add(zeros({p.T, p.N, C}, TensorOptions(p.lp.dtype()).device(p.lp.device())), 2,
                                       p.ext.unsqueeze(0).expand({p.T, p.N, p.L}), exp(sub(ab, m)));
  const Tensor lcab = add(log(per_class), m);  // log of the summed alpha beta per class
  Tensor grad = mul(sub(exp(p.lp), exp(sub(add(lcab, nll.reshape({1, p.N, 1})), p.lp))), g.reshape({1, p.N, 1}));
  const TensorOptions idx = TensorOptions(DType::I64).device(p.lp.device());
  const Tensor frame = arange(0.0, static_cast<double>(p.T), 1.0, idx).reshape({p.T, 1, 1});
  Tensor active = lt(frame, p.il.reshape({1, p.N, 1}));
  if (zero_infinity) active = logical_and(active, logical_not(isinf(nll)).reshape({1, p.N, 1}));
  return where(active, grad, zeros({}, TensorOptions(grad.dtype()).device(grad.device())));
}

Tensor ctc_loss_impl(const Tensor& log_probs_arg, const Tensor& targets_arg, const Tensor& input_lengths,
                     const Tensor& target_lengths, int64_t blank, Reduction reduction, bool zero_infinity) {
  amp::AutocastInputs in(kCtcLoss, {log_probs_arg});
  const Tensor& log_probs = in[0];
  check_defined(log_probs, kOp, "log_probs");
  check_defined(targets_arg, kOp, "targets");
  MINIDL_CHECK(log_probs.dtype() == DType::F32 || log_probs.dtype() == DType::F64, kOp,
               "expected f32 or f64 log_probs (as PyTorch), got ", log_probs.meta_str());
  MINIDL_CHECK(log_probs.dim() == 3 || log_probs.dim() == 2, kOp, "log_probs must be [T, N, C] or unbatched [T, C], got ",
               log_probs.meta_str());
  check_same_device(kOp, log_probs, targets_arg);
  MINIDL_CHECK(targets_arg.dtype() == DType::I64 || targets_arg.dtype() == DType::I32, kOp,
               "expected i64 or i32 targets, got ", targets_arg.meta_str());
  const bool batched = log_probs.dim() == 3;
  CtcProblem p;
  p.lp = batched ? log_probs : log_probs.unsqueeze(1);
  p.T = p.lp.size(0);
  p.N = p.lp.size(1);
  const int64_t C = p.lp.size(2);
  MINIDL_CHECK(blank >= 0 && blank < C, kOp, "blank must be in label range [0, ", C, "), got ", blank);
  const std::vector<int64_t> il = host_lengths(input_lengths, p.N, "input_lengths");
  const std::vector<int64_t> tl = host_lengths(target_lengths, p.N, "target_lengths");
  int64_t max_tl = 0, total_tl = 0;
  for (size_t n = 0; n < il.size(); ++n) {
    MINIDL_CHECK(il[n] <= p.T, kOp, "Expected input_lengths to have value at most ", p.T, ", but got value ", il[n]);
    max_tl = std::max(max_tl, tl[n]);
    total_tl += tl[n];
  }
  // Targets as [N, S] i64 padded rows: 2-D as given, 1-D (the targets one after another) gathered.
  const TensorOptions idx = TensorOptions(DType::I64).device(p.lp.device());
  Tensor targets = cast(batched ? targets_arg : targets_arg.reshape({1, -1}), DType::I64);
  const bool concatenated = batched && targets.dim() == 1;
  if (concatenated) {
    MINIDL_CHECK(targets.numel() == total_tl, kOp, "Expected tensor to have size ", total_tl,
                 " at dimension 0 (the sum of target_lengths), but got size ", targets.numel(), " for argument #2 'targets'");
    const Tensor lengths = from_vector<int64_t>(tl, {p.N}).to(p.lp.device());
    const Tensor starts = sub(cumsum(lengths, 0), lengths).unsqueeze(1);
    Tensor pos = add(starts, arange(0.0, static_cast<double>(max_tl), 1.0, idx).unsqueeze(0));
    pos = clamp(pos, 0.0, static_cast<double>(std::max<int64_t>(total_tl - 1, 0)));
    targets = total_tl > 0 ? index_select(targets, 0, pos.reshape({-1})).reshape({p.N, max_tl})
                           : zeros({p.N, max_tl}, idx);
  } else {
    MINIDL_CHECK(targets.dim() == 2 && targets.size(0) == p.N, kOp, "targets must be [N, S] (N = ", p.N,
                 ") or the concatenated 1-D targets, got ", targets_arg.meta_str());
    MINIDL_CHECK(targets.size(1) >= max_tl, kOp, "Expected tensor to have size at least ", max_tl,
                 " at dimension 1, but got size ", targets.size(1), " for argument #2 'targets'");
    targets = targets.narrow(1, 0, max_tl);
  }
  // The labels within each length must be classes (PyTorch reads whatever is there).
  if (max_tl > 0) {
    const Tensor within = lt(arange(0.0, static_cast<double>(max_tl), 1.0, idx).unsqueeze(0),
                             from_vector<int64_t>(tl, {p.N, 1}).to(p.lp.device()));
    const Tensor labels = where(within, targets, zeros({}, idx));
    MINIDL_CHECK(min(labels).item<int64_t>() >= 0 && max(labels).item<int64_t>() < C, kOp,
                 "target labels must be in [0, ", C, ")");
    targets = labels;
  }
  // Extended targets: blank, y1, blank, y2, ..., blank; state s may skip from s - 2 onto a label
  // that differs from the one before it.
  p.L = 2 * max_tl + 1;
  const Tensor blanks = full({p.N, max_tl}, static_cast<double>(blank), idx);
  p.ext = cat({stack({blanks, targets}, 2).reshape({p.N, 2 * max_tl}), full({p.N, 1}, static_cast<double>(blank), idx)}, 1);
  p.skip = p.L > 2 ? cat({zeros({p.N, 2}, TensorOptions(DType::Bool).device(p.lp.device())),
                          logical_and(ne(p.ext.narrow(1, 2, p.L - 2), static_cast<double>(blank)),
                                      ne(p.ext.narrow(1, 2, p.L - 2), p.ext.narrow(1, 0, p.L - 2)))},
                         1)
                   : zeros({p.N, p.L}, TensorOptions(DType::Bool).device(p.lp.device()));
  p.il = from_vector<int64_t>(il, {p.N, 1}).to(p.lp.device());
  p.tl = from_vector<int64_t>(tl, {p.N, 1}).to(p.lp.device());

  Tensor nll, lpe, alpha;
  {
    NoGradGuard no_grad;
    const Tensor lp = p.lp.detach();
    lpe = gather(lp, 2, p.ext.unsqueeze(0).expand({p.T, p.N, p.L}));  // [T, N, L]
    Tensor ll;
    if (p.T > 0) {
      alpha = forward_variables(p, lpe);
      const Tensor at_end = gather(alpha, 0, clamp(sub(p.il, 1.0), 0.0, std::nullopt).unsqueeze(0).expand({1, p.N, p.L})).squeeze(0);
      const Tensor l1 = gather(at_end, 1, mul(p.tl, 2.0));
      const Tensor l2 = where(gt(p.tl, 0.0), gather(at_end, 1, clamp(sub(mul(p.tl, 2.0), 1.0), 0.0, std::nullopt)), neg_inf_like(l1));
      ll = log_add3(l1, l2, neg_inf_like(l1)).squeeze(1);
    } else {
      ll = zeros({p.N}, TensorOptions(p.lp.dtype()).device(p.lp.device()));
    }
    // No frames: likelihood 1 for an empty target, 0 for any other (PyTorch 1.13 reads outside its buffers).
    const Tensor no_frames = eq(p.il.squeeze(1), 0.0);
    const Tensor empty_ll = where(eq(p.tl.squeeze(1), 0.0), zeros({}, TensorOptions(ll.dtype()).device(ll.device())), neg_inf_like(ll));
    nll = neg(where(no_frames, empty_ll, ll));
  }
  Tensor loss = zero_infinity ? where(isinf(nll), zeros({}, TensorOptions(nll.dtype()).device(nll.device())), nll) : nll;
  // The backward keeps detached handles only: `loss` may be `nll` itself, and a handle to the
  // node's own output inside the node would keep the graph alive forever.
  CtcProblem saved = p;
  saved.lp = p.lp.detach();
  autograd::record("CtcLossBackward", {p.lp}, {loss}, {},
                   [saved, lpe, alpha, nll = nll.detach(), zero_infinity](const TensorList& g, const TensorList&) {
                     if (saved.T == 0) return TensorList{zeros_like(saved.lp)};
                     return TensorList{ctc_gradient(saved, lpe, alpha, nll, g[0], zero_infinity)};
                   });
  if (reduction == Reduction::Mean)
    return mean(div(loss, clamp(cast(p.tl.squeeze(1), loss.dtype()), 1.0, std::nullopt)));
  if (!batched && reduction == Reduction::None) return loss.squeeze(0);
  return apply_reduction(loss, reduction);
}
}  // namespace

std::vector<const amp::OpPolicy*> ops_detail::ctc_loss_policies() { return {&kCtcLoss}; }

Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths, const Tensor& target_lengths,
                int64_t blank, Reduction reduction, bool zero_infinity) {
  return ctc_loss_impl(log_probs, targets, input_lengths, target_lengths, blank, reduction, zero_infinity);
}

Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const std::vector<int64_t>& input_lengths,
                const std::vector<int64_t>& target_lengths, int64_t blank, Reduction reduction, bool zero_infinity) {
  auto as_tensor = [](const std::vector<int64_t>& v) {
    return from_vector<int64_t>(v, {static_cast<int64_t>(v.size())});
  };
  const Device device = log_probs.defined() ? log_probs.device() : Device::cpu();
  return ctc_loss_impl(log_probs, targets, as_tensor(input_lengths).to(device), as_tensor(target_lengths).to(device),
                       blank, reduction, zero_infinity);
}

}  // namespace minidl
