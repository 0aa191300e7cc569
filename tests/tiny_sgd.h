// The smallest optimizer a GradScaler works with: parameters() and step() (plain SGD, lr 1),
// counting the steps it took.
#pragma once
#include <vector>

#include "minidl.h"

struct TinySGD {
  std::vector<minidl::Tensor> params;
  int steps = 0;
  std::vector<minidl::Tensor> parameters() const { return params; }
  void step() {
    ++steps;
    minidl::NoGradGuard ng;
    for (minidl::Tensor& p : params)
      if (p.grad().defined()) p.add_(p.grad(), -1.0);
  }
};
