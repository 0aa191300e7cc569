// A small demo of the core: fits y = 3x - 1 with plain gradient descent through autograd.
// Run: build/apps/minidl-demo. Expect the loss to fall below 1e-4 and w ~ 3, b ~ -1.
#include <cstdio>

#include "minidl.h"

using namespace minidl;

int main() {
  Tensor x = arange(-1, 1, 0.01, DType::F32).reshape({-1, 1});
  Tensor y = sub(mul(x, 3.0), 1.0);
  Tensor w = zeros({1, 1}).requires_grad_();
  Tensor b = zeros({1}).requires_grad_();
  for (int step = 0; step <= 200; ++step) {
    Tensor loss = mean(pow(sub(linear(x, w, b), y), 2.0));
    loss.backward();
    {
      NoGradGuard ng;
      w.add_(w.grad(), -0.5);
      b.add_(b.grad(), -0.5);
    }
    w.set_grad(Tensor());
    b.set_grad(Tensor());
    if (step % 50 == 0) std::printf("step %3d  loss %.6f  w %.4f  b %.4f\n", step, loss.item(), w.item(), b.item());
  }
  return 0;
}
