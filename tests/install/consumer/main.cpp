// A user program built against an installed minidl (find_package or pkg-config): one gradient
// step through the umbrella header as installed.
#include <minidl/minidl.h>

#include <cmath>
#include <cstdio>
#include <cstring>

int main(int argc, char** argv) {
  using namespace minidl;
  if (argc > 1 && std::strcmp(argv[1], version()) != 0) {
    std::printf("version %s, expected %s\n", version(), argv[1]);
    return 1;
  }
  Tensor w = ones({3}).requires_grad_(true);
  Tensor loss = sum(w * w);
  loss.backward();
  const double g = sum(w.grad()).item();  // d(sum w^2)/dw = 2w: 6 in all
  std::printf("minidl %s (native %d): loss %.1f, grad sum %.1f\n", version(), MINIDL_BUILT_NATIVE, loss.item(), g);
  return std::fabs(g - 6.0) < 1e-6 ? 0 : 1;
}
