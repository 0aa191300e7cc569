// Softmax family and losses: values against plain f64 loops (PyTorch's formulas written out),
// hand-computed exact values, f16/bf16 within dtype-derived tolerances, first and second order
// gradient checks, and error messages.
#include <catch2/catch.hpp>

#include <cmath>
#include <optional>

#include "gradcheck.h"
#include "random_values.h"

using namespace minidl;
using minidl::testing::GradCase;
using minidl::testing::max_abs_diff;
using minidl::testing::random_values;
using minidl::testing::run_case;

namespace {

// log_softmax of x viewed as [outer, n, inner] along the middle dim.
std::vector<double> ref_log_softmax(const std::vector<double>& x, int64_t outer, int64_t n, int64_t inner) {
  std::vector<double> y(x.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t c) { return (o * n + c) * inner + i; };
      double m = -INFINITY;
      for (int64_t c = 0; c < n; ++c) m = std::max(m, x[at(c)]);
      double s = 0;
      for (int64_t c = 0; c < n; ++c) s += std::exp(x[at(c)] - m);
      for (int64_t c = 0; c < n; ++c) y[at(c)] = x[at(c)] - m - std::log(s);
    }
  return y;
}

Tensor f64(const std::vector<double>& v, const Shape& s) { return from_vector(v, s); }
Tensor i64(const std::vector<int64_t>& v, const Shape& s) { return from_vector(v, s); }

// PyTorch's cross_entropy with class indices, written out: logits [N, C, S] flattened, targets [N*S].
struct RefCE {
  std::vector<double> none;
  double sum = 0, mean = 0;
};
RefCE ref_cross_entropy(const std::vector<double>& x, const std::vector<int64_t>& t, int64_t N, int64_t C, int64_t S,
                        const std::vector<double>& weight, int64_t ignore, double eps) {
  std::vector<double> logp = ref_log_softmax(x, N, C, S);
  RefCE r;
  double nll_sum = 0, smooth_sum = 0, wsum = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t s = 0; s < S; ++s) {
      const int64_t k = n * S + s, tk = t[k];
      double nll = 0, smooth = 0;
      if (tk != ignore) {
        const double wt = weight.empty() ? 1.0 : weight[tk];
        nll = -wt * logp[(n * C + tk) * S + s];
        for (int64_t c = 0; c < C; ++c) smooth -= (weight.empty() ? 1.0 : weight[c]) * logp[(n * C + c) * S + s];
        wsum += wt;
      }
      nll_sum += nll;
      smooth_sum += smooth;
      r.none.push_back((1 - eps) * nll + eps / C * smooth);
    }
  r.sum = (1 - eps) * nll_sum + eps / C * smooth_sum;
  // Both means divide by the summed weights of non-ignored targets (their count when unweighted).
  r.mean = (1 - eps) * nll_sum / wsum + eps / C * smooth_sum / wsum;
  return r;
}

void check_close(const Tensor& got, const std::vector<double>& want, double tol) {
  std::vector<double> g = got.to_vector<double>();
  REQUIRE(g.size() == want.size());
  for (size_t i = 0; i < g.size(); ++i) CHECK(g[i] == Approx(want[i]).margin(tol).epsilon(tol));
}

CrossEntropyOptions ce_opts(Reduction r, int64_t ignore = -100, double eps = 0.0, Tensor weight = Tensor()) {
  CrossEntropyOptions o;
  o.reduction = r;
  o.ignore_index = ignore;
  o.label_smoothing = eps;
  o.weight = weight;
  return o;
}
}  // namespace

// ------------------------------------------------------------------------------------ softmax

TEST_CASE("softmax and log_softmax match f64 loops along every dim", "[softmax]") {
  const Shape shape{3, 4, 5};
  std::vector<double> v = random_values(60, -3, 3, 1);
  Tensor x = f64(v, shape);
  for (int64_t dim = 0; dim < 3; ++dim) {
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < dim; ++d) outer *= shape[d];
    for (int64_t d = dim + 1; d < 3; ++d) inner *= shape[d];
    std::vector<double> ref = ref_log_softmax(v, outer, shape[dim], inner);
    std::vector<double> ref_exp(ref.size());
    for (size_t i = 0; i < ref.size(); ++i) ref_exp[i] = std::exp(ref[i]);
    Tensor ls = log_softmax(x, dim), s = softmax(x, dim - 3);  // negative dims wrap
    CHECK(ls.shape() == shape);
    CHECK(ls.is_contiguous());
    CHECK(max_abs_diff(ls, f64(ref, shape)) < 1e-14);
    CHECK(max_abs_diff(s, f64(ref_exp, shape)) < 1e-15);
  }
}

TEST_CASE("softmax is exact on equal inputs and safe for huge ones", "[softmax]") {
  CHECK(softmax(from_vector<float>({3, 3, 3, 3}), 0).to_vector<float>() == std::vector<float>{0.25f, 0.25f, 0.25f, 0.25f});
  CHECK(softmax(from_vector<float>({1000, 1000}), 0).to_vector<float>() == std::vector<float>{0.5f, 0.5f});
  // Without max-subtraction exp(1000) overflows to inf and this would be NaN.
  std::vector<float> big = log_softmax(from_vector<float>({1000, 0}), 0).to_vector<float>();
  CHECK(big[0] == 0.0f);
  CHECK(big[1] == -1000.0f);
  CHECK(softmax(scalar_tensor(5.0), 0).item() == 1.0);
  CHECK(log_softmax(scalar_tensor(5.0), -1).item() == 0.0);
  // A NaN anywhere in a row makes the whole row NaN, as PyTorch.
  std::vector<float> nan_row = softmax(from_vector<float>({1, NAN, 2}), 0).to_vector<float>();
  for (float f : nan_row) CHECK(std::isnan(f));
}

TEST_CASE("softmax in f16 and bf16 stays within a few ulps of f64", "[softmax]") {
  std::vector<double> v = random_values(7 * 300, -8, 8, 2);
  for (DType t : {DType::F16, DType::BF16, DType::F32}) {
    Tensor x = cast(f64(v, {7, 300}), t);
    std::vector<double> xr = x.to_vector<double>();  // the values actually stored
    std::vector<double> ref = ref_log_softmax(xr, 7, 300, 1);
    const double eps = traits(t).eps;
    Tensor ls = log_softmax(x, 1);
    CHECK(ls.dtype() == t);
    std::vector<double> got = ls.to_vector<double>();
    for (size_t i = 0; i < got.size(); ++i) REQUIRE(std::abs(got[i] - ref[i]) <= 2 * eps * std::max(1.0, std::abs(ref[i])));
    std::vector<double> sm = softmax(x, 1).to_vector<double>();
    // exp turns the rounding of its argument (eps * |log p|) into a relative error; tiny
    // probabilities land in the subnormal range, whose spacing is min_normal * eps.
    const double subnormal_step = traits(t).min_normal * eps;
    for (size_t i = 0; i < sm.size(); ++i) {
      const double p = std::exp(ref[i]);
      REQUIRE(std::abs(sm[i] - p) <= eps * (2 + std::abs(ref[i])) * p + subnormal_step);
    }
  }
}

TEST_CASE("softmax gradients, first and second order", "[softmax][gradcheck]") {
  std::vector<GradCase> cases = {
      {"softmax dim 1", {{3, 5}}, [](const std::vector<Tensor>& in) { return softmax(in[0], 1); }},
      {"softmax dim 0", {{3, 5}}, [](const std::vector<Tensor>& in) { return softmax(in[0], 0); }},
      {"log_softmax dim -1", {{4, 3}}, [](const std::vector<Tensor>& in) { return log_softmax(in[0], -1); }},
      {"log_softmax 3-D dim 1", {{2, 3, 4}}, [](const std::vector<Tensor>& in) { return log_softmax(in[0], 1); }},
      {"softmax 3-D dim 1", {{2, 3, 2}}, [](const std::vector<Tensor>& in) { return softmax(in[0], 1); }},
      {"softmax_backward", {{3, 4}, {3, 4}},
       [](const std::vector<Tensor>& in) { return softmax_backward(in[0], softmax(in[1], 1), 1, false); }},
      {"log_softmax_backward", {{3, 4}, {3, 4}},
       [](const std::vector<Tensor>& in) { return softmax_backward(in[0], log_softmax(in[1], 0), 0, true); }},
  };
  for (const GradCase& c : cases) {
    INFO(c.name);
    CHECK(run_case(c) == "");
  }
}

TEST_CASE("softmax errors name the op", "[softmax][errors]") {
  CHECK_THROWS_WITH(softmax(ones({2, 3}, DType::I64), 1), Catch::Contains("softmax") && Catch::Contains("floating"));
  CHECK_THROWS_WITH(log_softmax(ones({2, 3}), 2), Catch::Contains("log_softmax"));
  CHECK_THROWS_WITH(softmax_backward(ones({2, 3}), ones({3, 2}), 1, false),
                    Catch::Contains("softmax_backward") && Catch::Contains("same shape"));
}

// ------------------------------------------------------------------------------ cross_entropy

TEST_CASE("cross_entropy with class indices matches PyTorch's formula for each reduction", "[loss]") {
  const int64_t N = 6, C = 5;
  std::vector<double> v = random_values(N * C, -4, 4, 3);
  std::vector<int64_t> t = {0, 4, 2, -100, 1, 4};
  Tensor x = f64(v, {N, C}), target = i64(t, {N});
  RefCE ref = ref_cross_entropy(v, t, N, C, 1, {}, -100, 0.0);
  check_close(cross_entropy(x, target, ce_opts(Reduction::None)), ref.none, 1e-13);
  CHECK(cross_entropy(x, target, ce_opts(Reduction::Sum)).item() == Approx(ref.sum).epsilon(1e-13));
  CHECK(cross_entropy(x, target).item() == Approx(ref.mean).epsilon(1e-13));
  // The f32 fused kernel against the same reference.
  CHECK(cross_entropy(cast(x, DType::F32), target).item() ==
        Approx(ref.mean).epsilon(8 * traits(DType::F32).eps));
}

TEST_CASE("cross_entropy hand-computed values", "[loss]") {
  // Equal logits over 4 classes: every row costs log 4.
  Tensor x = zeros({2, 4}).requires_grad_();
  Tensor loss = cross_entropy(x, i64({1, 3}, {2}));
  CHECK(loss.item() == Approx(std::log(4.0)).epsilon(traits(DType::F32).eps));
  loss.backward();
  // d/dx = (softmax - onehot) / N = (0.25 - [c == t]) / 2.
  std::vector<float> g = x.grad().to_vector<float>();
  std::vector<float> want = {0.125f, -0.375f, 0.125f, 0.125f, 0.125f, 0.125f, 0.125f, -0.375f};
  for (size_t i = 0; i < g.size(); ++i) CHECK(g[i] == Approx(want[i]).epsilon(2 * traits(DType::F32).eps));
  // Unbatched: input [C], 0-D target.
  Tensor u = cross_entropy(from_vector<double>({0, 0}), i64({1}, {}).reshape({}), ce_opts(Reduction::None));
  CHECK(u.dim() == 0);
  CHECK(u.item() == Approx(std::log(2.0)).epsilon(1e-15));
}

TEST_CASE("cross_entropy on 3-D and 4-D inputs takes classes along dim 1", "[loss]") {
  const int64_t N = 2, C = 3, H = 2, W = 3, S = H * W;
  std::vector<double> v = random_values(N * C * S, -3, 3, 4);
  std::vector<int64_t> t = {0, 1, 2, 2, 1, 0, 1, 1, -1, 0, 2, 2};
  // -1 is an invalid class unless it is the ignore_index.
  CHECK_THROWS_WITH(cross_entropy(f64(v, {N, C, H, W}), i64(t, {N, H, W})), Catch::Contains("target -1 is out of bounds"));
  for (int64_t ignore : {-1L, 1L}) {  // 1: an ignore_index that is also a valid class
    if (ignore == 1) t[8] = 0;
    Tensor target4 = i64(t, {N, H, W});
    RefCE ref = ref_cross_entropy(v, t, N, C, S, {}, ignore, 0.0);
    Tensor none = cross_entropy(f64(v, {N, C, H, W}), target4, ce_opts(Reduction::None, ignore));
    CHECK(none.shape() == Shape{N, H, W});
    check_close(none, ref.none, 1e-13);
    CHECK(cross_entropy(f64(v, {N, C, H, W}), target4, ce_opts(Reduction::Mean, ignore)).item() ==
          Approx(ref.mean).epsilon(1e-13));
    CHECK(cross_entropy(f64(v, {N, C, S}), target4.reshape({N, S}), ce_opts(Reduction::Sum, ignore)).item() ==
          Approx(ref.sum).epsilon(1e-13));
  }
}

TEST_CASE("cross_entropy with class weights, label smoothing and ignore_index", "[loss]") {
  const int64_t N = 5, C = 4, S = 3;
  std::vector<double> v = random_values(N * C * S, -3, 3, 5);
  std::vector<int64_t> t = {0, 1, 2, 3, 3, -100, 2, 1, 0, 0, 0, 3, -100, 2, 2};
  std::vector<double> w = {0.5, 2.0, 1.0, 0.25};
  Tensor x = f64(v, {N, C, S}), target = i64(t, {N, S}), weight = f64(w, {C});
  for (double eps : {0.0, 0.1, 1.0})
    for (bool weighted : {false, true}) {
      INFO("label_smoothing " << eps << " weighted " << weighted);
      RefCE ref = ref_cross_entropy(v, t, N, C, S, weighted ? w : std::vector<double>{}, -100, eps);
      Tensor wt = weighted ? weight : Tensor();
      check_close(cross_entropy(x, target, ce_opts(Reduction::None, -100, eps, wt)), ref.none, 1e-13);
      CHECK(cross_entropy(x, target, ce_opts(Reduction::Sum, -100, eps, wt)).item() == Approx(ref.sum).epsilon(1e-13));
      CHECK(cross_entropy(x, target, ce_opts(Reduction::Mean, -100, eps, wt)).item() == Approx(ref.mean).epsilon(1e-13));
    }
}

TEST_CASE("cross_entropy with class-probability targets", "[loss]") {
  const int64_t N = 3, C = 4, S = 2;
  std::vector<double> v = random_values(N * C * S, -3, 3, 6), p = random_values(N * C * S, 0, 1, 7);
  std::vector<double> w = {1.0, 0.5, 2.0, 1.5};
  std::vector<double> logp = ref_log_softmax(v, N, C, S);
  for (double eps : {0.0, 0.2})
    for (bool weighted : {false, true}) {
      std::vector<double> none(N * S, 0.0);
      double total = 0;
      for (int64_t n = 0; n < N; ++n)
        for (int64_t c = 0; c < C; ++c)
          for (int64_t s = 0; s < S; ++s) {
            const int64_t k = (n * C + c) * S + s;
            const double tk = p[k] * (1 - eps) + eps / C;
            const double term = -(weighted ? w[c] : 1.0) * logp[k] * tk;
            none[n * S + s] += term;
            total += term;
          }
      Tensor wt = weighted ? f64(w, {C}) : Tensor();
      Tensor x = f64(v, {N, C, S}), target = f64(p, {N, C, S});
      check_close(cross_entropy(x, target, ce_opts(Reduction::None, -100, eps, wt)), none, 1e-13);
      CHECK(cross_entropy(x, target, ce_opts(Reduction::Sum, -100, eps, wt)).item() == Approx(total).epsilon(1e-13));
      CHECK(cross_entropy(x, target, ce_opts(Reduction::Mean, -100, eps, wt)).item() ==
            Approx(total / (N * S)).epsilon(1e-13));
    }
}

TEST_CASE("cross_entropy in f16 and bf16 within dtype tolerance", "[loss]") {
  const int64_t N = 64, C = 10;
  std::vector<double> v = random_values(N * C, -6, 6, 8);
  std::vector<int64_t> t(N);
  for (int64_t n = 0; n < N; ++n) t[n] = (n * 7) % C;
  for (DType dt : {DType::F16, DType::BF16}) {
    Tensor x = cast(f64(v, {N, C}), dt);
    RefCE ref = ref_cross_entropy(x.to_vector<double>(), t, N, C, 1, {}, -100, 0.0);
    Tensor loss = cross_entropy(x, i64(t, {N}));
    CHECK(loss.dtype() == dt);
    // Computed in f32; only the final rounding to the storage type is lost.
    CHECK(std::abs(loss.item() - ref.mean) <= traits(dt).eps * std::abs(ref.mean));
    Tensor none = cross_entropy(x, i64(t, {N}), ce_opts(Reduction::None));
    std::vector<double> got = none.to_vector<double>();
    for (int64_t n = 0; n < N; ++n) CHECK(std::abs(got[n] - ref.none[n]) <= traits(dt).eps * std::max(1.0, ref.none[n]));
  }
}

TEST_CASE("log_softmax and cross_entropy keep a row's small differences next to large logits, as PyTorch", "[softmax][loss]") {
  // Rounding max + log(sum) first lost the log-sum's low bits: at 3e6 every f32 log-probability
  // moved by up to 0.125 (1.5 against PyTorch's 1.401879 for the loss) and a gradient row no longer
  // summed to 0. (x - max) - log(sum) keeps x - max exact. Reference: the same f32 values in f64.
  const double eps = traits(DType::F32).eps;
  for (double base : {0.0, 3e4, 3e6, 1e7}) {
    INFO("logits near " << base);
    const std::vector<float> xv{static_cast<float>(base + 0.25), static_cast<float>(base),
                                static_cast<float>(base - 0.25), static_cast<float>(base + 0.125),
                                static_cast<float>(base + 0.25), static_cast<float>(base),
                                static_cast<float>(base), static_cast<float>(base - 4)};
    const Tensor x = from_vector(xv, {2, 4});
    const Tensor x64 = x.to(DType::F64);
    const Tensor got = log_softmax(x, 1), want = log_softmax(x64, 1);
    CHECK(max_abs_diff(got.to(DType::F64), want) <= 4 * eps * 2);
    const Tensor target = i64({1, 3}, {2});
    const Tensor xg = x.detach().requires_grad_(), xg64 = x64.detach().requires_grad_();
    const Tensor loss = cross_entropy(xg, target), loss64 = cross_entropy(xg64, target);
    CHECK(std::abs(loss.item() - loss64.item()) <= 4 * eps * std::abs(loss64.item()));
    loss.backward();
    loss64.backward();
    CHECK(max_abs_diff(xg.grad().to(DType::F64), xg64.grad()) <= 4 * eps);
    const std::vector<float> g = xg.grad().to_vector<float>();
    CHECK(std::abs(g[0] + g[1] + g[2] + g[3]) <= 4 * eps);
  }
  // PyTorch 1.13: F.cross_entropy([[1e7, 1e7, 0]], [2]) has the gradient [[0.5, 0.5, -1]].
  const Tensor big = from_vector<float>({1e7f, 1e7f, 0.0f}, {1, 3}).requires_grad_();
  cross_entropy(big, i64({2}, {1})).backward();
  CHECK(big.grad().to_vector<float>() == std::vector<float>{0.5f, 0.5f, -1.0f});
}

TEST_CASE("the fused cross_entropy gradient equals the composite one", "[loss]") {
  const int64_t N = 40, C = 7;
  std::vector<double> v = random_values(N * C, -5, 5, 9);
  std::vector<int64_t> t(N);
  for (int64_t n = 0; n < N; ++n) t[n] = n % 5 == 0 ? -100 : (n * 3) % C;
  for (Reduction r : {Reduction::Mean, Reduction::Sum, Reduction::None}) {
    Tensor a = from_vector(std::vector<float>(v.begin(), v.end()), {N, C}).requires_grad_();
    Tensor b = from_vector(std::vector<float>(v.begin(), v.end()), {N, C}).requires_grad_();
    const std::vector<double> gv = random_values(N, 0.5, 2, 10);
    Tensor gout = r == Reduction::None ? from_vector(std::vector<float>(gv.begin(), gv.end()), {N}) : Tensor();
    Tensor la = cross_entropy(a, i64(t, {N}), ce_opts(r));
    if (r != Reduction::None) CHECK(la.grad_fn()->name() == "CrossEntropyBackward");
    Tensor lb = nll_loss(log_softmax(b, 1), i64(t, {N}), ce_opts(r));
    CHECK(std::abs(la.sum().item() - lb.sum().item()) <= 4 * traits(DType::F32).eps * std::abs(lb.sum().item()));
    la.backward(gout);
    lb.backward(gout);
    CHECK(max_abs_diff(a.grad(), b.grad()) <= 4 * traits(DType::F32).eps);
  }
}

TEST_CASE("cross_entropy with every target ignored: NaN mean, zero gradient", "[loss]") {
  Tensor x = from_vector<float>({1, 2, 3, 4}, {2, 2}).requires_grad_();
  Tensor loss = cross_entropy(x, i64({-100, -100}, {2}));
  CHECK(std::isnan(loss.item()));
  loss.backward();
  CHECK(x.grad().to_vector<float>() == std::vector<float>{0, 0, 0, 0});
  CHECK(cross_entropy(x.detach(), i64({-100, -100}, {2}), ce_opts(Reduction::Sum)).item() == 0.0);
}

TEST_CASE("nll_loss: weighted mean divides by the weights of non-ignored targets", "[loss]") {
  // log-probabilities chosen so every term is exact in binary.
  Tensor lp = from_vector<double>({-1, -2, -4, -0.5, -8, -0.25, -3, -1}, {4, 2});
  Tensor t = i64({0, 1, 1, -100}, {4});
  CrossEntropyOptions o = ce_opts(Reduction::Mean, -100, 0.0, from_vector<double>({2, 0.5}));
  // Terms: 2*1, 0.5*0.5, 0.5*0.25 over weights 2 + 0.5 + 0.5.
  CHECK(nll_loss(lp, t, o).item() == (2.0 + 0.25 + 0.125) / 3.0);
  o.reduction = Reduction::Sum;
  CHECK(nll_loss(lp, t, o).item() == 2.375);
  o.reduction = Reduction::None;
  CHECK(nll_loss(lp, t, o).to_vector<double>() == std::vector<double>{2, 0.25, 0.125, 0});
  CHECK(nll_loss(lp, t).item() == (1.0 + 0.5 + 0.25) / 3.0);
}

TEST_CASE("loss gradients, first and second order", "[loss][gradcheck]") {
  const Tensor t6 = i64({0, 2, -100, 1, 2, 0}, {6});
  const Tensor t23 = i64({0, 2, 1, 1, -100, 2}, {2, 3});
  const Tensor w3 = from_vector<double>({0.5, 2.0, 1.25});
  auto ce = [](Tensor t, CrossEntropyOptions o) {
    return [t, o](const std::vector<Tensor>& in) { return cross_entropy(in[0], t, o); };
  };
  std::vector<GradCase> cases = {
      {"cross_entropy fused mean", {{6, 3}}, ce(t6, ce_opts(Reduction::Mean))},
      {"cross_entropy fused sum", {{6, 3}}, ce(t6, ce_opts(Reduction::Sum))},
      {"cross_entropy fused none", {{6, 3}}, ce(t6, ce_opts(Reduction::None))},
      {"cross_entropy fused 3-D", {{2, 3, 3}}, ce(t23, ce_opts(Reduction::Mean))},
      {"cross_entropy weighted", {{6, 3}}, ce(t6, ce_opts(Reduction::Mean, -100, 0.0, w3))},
      {"cross_entropy smoothing", {{2, 3, 3}}, ce(t23, ce_opts(Reduction::Mean, -100, 0.3))},
      {"cross_entropy smoothing weighted none", {{6, 3}}, ce(t6, ce_opts(Reduction::None, -100, 0.2, w3))},
      {"cross_entropy probabilities", {{4, 3}, {4, 3}},
       [](const std::vector<Tensor>& in) { return cross_entropy(in[0], softmax(in[1], 1), ce_opts(Reduction::Mean, -100, 0.1)); }},
      {"cross_entropy weight is differentiable", {{6, 3}, {3}},
       [t6](const std::vector<Tensor>& in) { return cross_entropy(in[0], t6, ce_opts(Reduction::Mean, -100, 0.0, exp(in[1]))); }},
      {"nll_loss weighted", {{6, 3}},
       [t6, w3](const std::vector<Tensor>& in) { return nll_loss(log_softmax(in[0], 1), t6, ce_opts(Reduction::Mean, -100, 0.0, w3)); }},
      {"mse_loss", {{3, 4}, {3, 4}}, [](const std::vector<Tensor>& in) { return mse_loss(in[0], in[1]); }},
      {"mse_loss broadcast none", {{3, 4}, {4}}, [](const std::vector<Tensor>& in) { return mse_loss(in[0], in[1], Reduction::None); }},
      {"l1_loss", {{3, 4}, {3, 4}}, [](const std::vector<Tensor>& in) { return l1_loss(in[0], in[1], Reduction::Sum); }},
      {"binary_cross_entropy", {{3, 4}, {3, 4}},
       [](const std::vector<Tensor>& in) { return binary_cross_entropy(sigmoid(in[0]), sigmoid(in[1])); }},
      {"bce_with_logits", {{3, 4}, {3, 4}},
       [](const std::vector<Tensor>& in) { return binary_cross_entropy_with_logits(in[0], sigmoid(in[1]), Reduction::Sum); }},
      {"bce_with_logits pos_weight", {{3, 4}, {3, 4}, {4}},
       [](const std::vector<Tensor>& in) {
         return binary_cross_entropy_with_logits(in[0], sigmoid(in[1]), Reduction::None, exp(in[2]));
       }},
  };
  // mse_loss warns at every call whose target broadcasts (as PyTorch): the gradient check calls it
  // dozens of times, so its warnings are held back here (tests/test_losses_more.cpp checks them).
  const WarningHandler previous = set_warning_handler([](const std::string&) {});
  for (const GradCase& c : cases) {
    INFO(c.name);
    CHECK(run_case(c) == "");
  }
  set_warning_handler(previous);
}

// ------------------------------------------------------------------------- regression and BCE

TEST_CASE("mse_loss and l1_loss exact values", "[loss]") {
  Tensor a = from_vector<float>({1, 2, 3}), b = from_vector<float>({1, 1, 1});
  CHECK(mse_loss(a, b, Reduction::None).to_vector<float>() == std::vector<float>{0, 1, 4});
  CHECK(mse_loss(a, b, Reduction::Sum).item() == 5.0);
  CHECK(mse_loss(a, b).item() == Approx(5.0 / 3.0).epsilon(traits(DType::F32).eps));
  CHECK(l1_loss(a, from_vector<float>({2, 2, 5}), Reduction::None).to_vector<float>() == std::vector<float>{1, 0, 2});
  CHECK(l1_loss(a, from_vector<float>({2, 2, 5})).item() == 1.0);
}

TEST_CASE("binary_cross_entropy values, the -100 log clamp and finite gradients at 0 and 1", "[loss]") {
  Tensor p = from_vector<double>({0.5, 0.0, 0.0, 1.0, 0.25}).requires_grad_();
  Tensor y = from_vector<double>({1.0, 0.0, 1.0, 0.0, 0.5});
  Tensor none = binary_cross_entropy(p, y, Reduction::None);
  std::vector<double> v = none.to_vector<double>();
  CHECK(v[0] == Approx(std::log(2.0)).epsilon(1e-15));
  CHECK(v[1] == 0.0);
  CHECK(v[2] == 100.0);  // -log(0) clamped
  CHECK(v[3] == 100.0);
  CHECK(v[4] == Approx(-0.5 * std::log(0.25) - 0.5 * std::log(0.75)).epsilon(1e-15));
  binary_cross_entropy(p, y, Reduction::Sum).backward();
  std::vector<double> g = p.grad().to_vector<double>();
  CHECK(g[0] == -2.0);   // (p - y) / (p (1 - p)) = -0.5 / 0.25
  CHECK(g[1] == 0.0);
  CHECK(g[2] == -1.0 / static_cast<double>(1e-12f));  // PyTorch's guard, the float 1e-12
  CHECK(g[3] == 1.0 / static_cast<double>(1e-12f));
  CHECK(binary_cross_entropy(p.detach(), y).item() == Approx((v[0] + 200 + v[4]) / 5).epsilon(1e-15));
}

TEST_CASE("binary_cross_entropy_with_logits is stable, exact at 0, and weights positives", "[loss]") {
  Tensor x = from_vector<double>({0.0, 100.0, -100.0, 2.0}).requires_grad_();
  Tensor y = from_vector<double>({1.0, 1.0, 1.0, 0.25});
  std::vector<double> v = binary_cross_entropy_with_logits(x, y, Reduction::None).to_vector<double>();
  CHECK(v[0] == Approx(std::log(2.0)).epsilon(1e-15));
  CHECK(v[1] < 1e-40);
  CHECK(v[2] == 100.0);
  const double ref3 = -(0.25 * std::log(1 / (1 + std::exp(-2.0))) + 0.75 * std::log(1 - 1 / (1 + std::exp(-2.0))));
  CHECK(v[3] == Approx(ref3).epsilon(1e-14));
  binary_cross_entropy_with_logits(x, y, Reduction::Sum).backward();
  CHECK(x.grad().to_vector<double>()[0] == -0.5);  // sigmoid(0) - 1, exact (the kink-free form)
  // pos_weight multiplies the positive term: y log sigmoid(x) weighted by pw.
  Tensor pw = from_vector<double>({3.0});
  std::vector<double> w = binary_cross_entropy_with_logits(x.detach(), y, Reduction::None, pw).to_vector<double>();
  CHECK(w[0] == Approx(3 * std::log(2.0)).epsilon(1e-15));
  const double s2 = 1 / (1 + std::exp(-2.0));
  CHECK(w[3] == Approx(-(3 * 0.25 * std::log(s2) + 0.75 * std::log(1 - s2))).epsilon(1e-14));
  CHECK(binary_cross_entropy_with_logits(x.detach(), y).item() == Approx((v[0] + v[1] + v[2] + v[3]) / 4).epsilon(1e-15));
}

// ------------------------------------------------------------------------------------- errors

TEST_CASE("loss errors name the op and what was wrong", "[loss][errors]") {
  Tensor x = zeros({3, 4});
  CHECK_THROWS_WITH(cross_entropy(x, from_vector<int32_t>({0, 1, 2})), Catch::Contains("cross_entropy") && Catch::Contains("i64"));
  CHECK_THROWS_WITH(cross_entropy(x, i64({0, 7, 1}, {3})),
                    Catch::Contains("cross_entropy") && Catch::Contains("target 7 is out of bounds for 4 classes"));
  CHECK_THROWS_WITH(cross_entropy(x, i64({0, -3, 1}, {3})), Catch::Contains("target -3 is out of bounds"));
  CHECK_THROWS_WITH(cross_entropy(x, i64({0, 1}, {2})),
                    Catch::Contains("cross_entropy") && Catch::Contains("expected target of shape [3]"));
  CHECK_THROWS_WITH(cross_entropy(x, i64({0, 1, 2}, {3}), ce_opts(Reduction::Mean, -100, 0, ones({3}))),
                    Catch::Contains("cross_entropy") && Catch::Contains("weight"));
  CHECK_THROWS_WITH(cross_entropy(x, i64({0, 1, 2}, {3}), ce_opts(Reduction::Mean, -100, 1.5)),
                    Catch::Contains("label_smoothing must be between 0.0 and 1.0"));
  CHECK_THROWS_WITH(cross_entropy(x, zeros({3, 4}), ce_opts(Reduction::Mean, 2)),
                    Catch::Contains("ignore_index is not supported"));
  CHECK_THROWS_WITH(cross_entropy(x, zeros({3, 4}, DType::I64)), Catch::Contains("floating point target"));
  CHECK_THROWS_WITH(cross_entropy(zeros({3, 4}, DType::I64), i64({0, 1, 2}, {3})), Catch::Contains("cross_entropy"));
  CHECK_THROWS_WITH(nll_loss(x, i64({0, 1, 2}, {3}), ce_opts(Reduction::Mean, -100, 0.1)),
                    Catch::Contains("nll_loss") && Catch::Contains("label_smoothing"));
  CHECK_THROWS_WITH(nll_loss(x, i64({0, 1, 9}, {3})), Catch::Contains("nll_loss") && Catch::Contains("target 9"));
  CHECK_THROWS_WITH(binary_cross_entropy(from_vector<float>({0.5f, 1.5f}), from_vector<float>({1, 0})),
                    Catch::Contains("binary_cross_entropy") && Catch::Contains("between 0 and 1"));
  CHECK_THROWS_WITH(binary_cross_entropy(from_vector<float>({0.5f, NAN}), from_vector<float>({1, 0})),
                    Catch::Contains("between 0 and 1"));
  CHECK_THROWS_WITH(binary_cross_entropy_with_logits(zeros({2, 3}), zeros({3})),
                    Catch::Contains("binary_cross_entropy_with_logits") && Catch::Contains("target size [3]"));
  CHECK_THROWS_WITH(mse_loss(zeros({2, 3}), zeros({4})), Catch::Contains("mse_loss") || Catch::Contains("sub"));
}

TEST_CASE("softmax and log_softmax take PyTorch's dtype argument", "[softmax][dtype]") {
  const std::vector<double> v = random_values(12, -3.0, 3.0, 21);
  Tensor x = from_vector(v, {3, 4}).to(DType::F32).requires_grad_();
  for (bool log : {false, true}) {
    INFO("log_softmax: " << log);
    auto f = [&](const Tensor& t, std::optional<DType> d) { return log ? log_softmax(t, 1, d) : softmax(t, 1, d); };
    Tensor y = f(x, DType::F64);
    CHECK(y.dtype() == DType::F64);
    // The input is cast first, then the op runs in dtype: the f64 op on the f32 values exactly.
    CHECK(max_abs_diff(y, f(x.detach().to(DType::F64), std::nullopt)) == 0.0);
    // The gradient comes back in the input's dtype.
    x.set_grad(Tensor());
    mul(y, from_vector(random_values(12, 0.5, 1.5, 3), {3, 4})).sum().backward();
    CHECK(x.grad().dtype() == DType::F32);
    CHECK(f(x, DType::BF16).dtype() == DType::BF16);
  }
  CHECK_THROWS_WITH(softmax(ones({2}), 0, DType::I64), Catch::Contains("softmax") && Catch::Contains("floating point"));
}

TEST_CASE("with an explicit dtype softmax is not autocast (FP32SetOptDtype keeps a given dtype)", "[softmax][dtype][amp]") {
  // CPU lists softmax under no policy; give it CUDA's FP32SetOptDtype to see the interaction here.
  amp::set_policy("softmax", DeviceType::CPU, amp::CastPolicy::FP32SetOptDtype);
  amp::set_policy("log_softmax", DeviceType::CPU, amp::CastPolicy::FP32SetOptDtype);
  Tensor x = from_vector<float>({1.0f, 2.0f, 3.0f}).to(DType::BF16);
  {
    amp::autocast scope(DeviceType::CPU);
    CHECK(softmax(x, 0).dtype() == DType::F32);                 // no dtype: f32
    CHECK(log_softmax(x, 0).dtype() == DType::F32);
    CHECK(softmax(x, 0, DType::BF16).dtype() == DType::BF16);   // a given dtype wins
    CHECK(log_softmax(x, 0, DType::F64).dtype() == DType::F64);
  }
  amp::reset_policy("softmax");
  amp::reset_policy("log_softmax");
}
