// The whole training step (MLP forward, cross-entropy, backward, SGD with momentum and weight decay,
// zero_grad) against an independent implementation in plain f64 loops, step by step. The op-level
// tests check each piece; this one checks that they compose into exactly PyTorch's training loop
// (the loss is a batch mean, gradients do not accumulate across steps, the momentum buffer starts
// as the first gradient, weight decay is added before momentum), so that the train program's
// accuracy differs from PyTorch's recipe only by its random streams.
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "minidl.h"
#include "nn/models.h"

using namespace minidl;

namespace {
using Vec = std::vector<double>;

// A linear layer in plain loops: y[n][o] = b[o] + sum_i W[o][i] x[n][i].
struct RefLinear {
  int64_t in, out;
  Vec w, b, gw, gb, mw, mb;  // parameters, gradients, momentum buffers
};

Vec linear_forward(const RefLinear& l, const Vec& x, int64_t n) {
  Vec y(n * l.out);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t o = 0; o < l.out; ++o) {
      double s = l.b[o];
      for (int64_t i = 0; i < l.in; ++i) s += l.w[o * l.in + i] * x[r * l.in + i];
      y[r * l.out + o] = s;
    }
  return y;
}

// Accumulates the layer's gradients from dy and returns dx.
Vec linear_backward(RefLinear& l, const Vec& x, const Vec& dy, int64_t n) {
  Vec dx(n * l.in, 0.0);
  l.gw.assign(l.w.size(), 0.0);
  l.gb.assign(l.b.size(), 0.0);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t o = 0; o < l.out; ++o) {
      const double g = dy[r * l.out + o];
      l.gb[o] += g;
      for (int64_t i = 0; i < l.in; ++i) {
        l.gw[o * l.in + i] += g * x[r * l.in + i];
        dx[r * l.in + i] += g * l.w[o * l.in + i];
      }
    }
  return dx;
}

// torch.optim.SGD: g += wd * p; buf = g on the first step, else momentum * buf + g; p -= lr * buf.
void sgd_update(Vec& p, const Vec& g, Vec& buf, bool first, double lr, double momentum, double wd) {
  if (first) buf.assign(p.size(), 0.0);
  for (size_t i = 0; i < p.size(); ++i) {
    const double gi = g[i] + wd * p[i];
    buf[i] = first ? gi : momentum * buf[i] + gi;
    p[i] -= lr * buf[i];
  }
}

Vec to_vec(const Tensor& t) {
  Tensor c = t.contiguous();
  return Vec(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

// One step of the reference: returns the batch-mean cross-entropy loss.
double reference_step(std::vector<RefLinear>& layers, const Vec& x, const std::vector<int64_t>& y, int64_t n, bool first,
                      double lr, double momentum, double wd) {
  std::vector<Vec> inputs{x};  // input of each layer (after ReLU for the hidden ones)
  for (size_t k = 0; k < layers.size(); ++k) {
    Vec h = linear_forward(layers[k], inputs.back(), n);
    if (k + 1 < layers.size())
      for (double& v : h) v = std::max(v, 0.0);
    inputs.push_back(std::move(h));
  }
  const Vec& logits = inputs.back();
  const int64_t c = layers.back().out;
  Vec dlogits(n * c);
  double loss = 0;
  for (int64_t r = 0; r < n; ++r) {
    double m = -INFINITY;
    for (int64_t j = 0; j < c; ++j) m = std::max(m, logits[r * c + j]);
    double z = 0;
    for (int64_t j = 0; j < c; ++j) z += std::exp(logits[r * c + j] - m);
    loss += (m + std::log(z) - logits[r * c + y[r]]) / n;
    for (int64_t j = 0; j < c; ++j) dlogits[r * c + j] = (std::exp(logits[r * c + j] - m) / z - (j == y[r])) / n;
  }
  Vec d = dlogits;
  for (size_t k = layers.size(); k-- > 0;) {
    d = linear_backward(layers[k], inputs[k], d, n);
    if (k > 0)  // ReLU's gradient: through where its output is positive
      for (size_t i = 0; i < d.size(); ++i)
        if (inputs[k][i] <= 0) d[i] = 0;
  }
  for (RefLinear& l : layers) {
    sgd_update(l.w, l.gw, l.mw, first, lr, momentum, wd);
    sgd_update(l.b, l.gb, l.mb, first, lr, momentum, wd);
  }
  return loss;
}
}  // namespace

TEST_CASE("MLP training with SGD momentum matches a plain-loop f64 reference step by step", "[training][reference]") {
  const double lr = 0.05, momentum = 0.9, wd = 1e-3;
  const int64_t batch = 16, in = 12, classes = 5, steps = 12;
  manual_seed(3);
  auto model = std::make_shared<nn::models::MLP>(in, std::vector<int64_t>{10, 8}, classes);
  model->to(DType::F64);
  optim::SGD opt(model->parameters(), optim::SGDOptions(lr).momentum(momentum).weight_decay(wd));

  // The reference starts from the same initial weights.
  std::vector<RefLinear> ref;
  const TensorDict params = model->named_parameters();
  std::vector<Tensor> ordered;
  for (const auto& [name, t] : params) ordered.push_back(t);
  REQUIRE(ordered.size() == 6);  // (weight, bias) for each of the three layers, in registration order
  for (size_t k = 0; k < 3; ++k) {
    const Tensor& w = ordered[2 * k];
    ref.push_back({w.shape()[1], w.shape()[0], to_vec(w), to_vec(ordered[2 * k + 1]), {}, {}, {}, {}});
  }

  Generator data_gen(11);
  for (int64_t s = 0; s < steps; ++s) {
    INFO("step " << s);
    Tensor x = randn({batch, in}, TensorOptions().dtype(DType::F64), &data_gen);
    Tensor y = randint(0, classes, {batch}, DType::I64, &data_gen);
    std::vector<int64_t> labels(y.data_ptr<int64_t>(), y.data_ptr<int64_t>() + batch);

    opt.zero_grad();
    Tensor loss = cross_entropy(model->forward(x), y);
    loss.backward();
    opt.step();
    const double ref_loss = reference_step(ref, to_vec(x), labels, batch, s == 0, lr, momentum, wd);

    CHECK(loss.item() == Approx(ref_loss).epsilon(1e-12));
    for (size_t k = 0; k < 3; ++k) {
      const Vec w = to_vec(ordered[2 * k]), b = to_vec(ordered[2 * k + 1]);
      double max_err = 0;
      for (size_t i = 0; i < w.size(); ++i) max_err = std::max(max_err, std::abs(w[i] - ref[k].w[i]));
      for (size_t i = 0; i < b.size(); ++i) max_err = std::max(max_err, std::abs(b[i] - ref[k].b[i]));
      INFO("layer " << k);
      CHECK(max_err < 1e-12);
    }
  }
}
