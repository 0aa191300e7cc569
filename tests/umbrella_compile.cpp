// Compile test: the umbrella header alone is enough to write a program.
#include "minidl.h"

int umbrella_compiles() {
  minidl::Tensor t = minidl::ones({2, 2});
  return static_cast<int>(minidl::sum(t).item());
}
