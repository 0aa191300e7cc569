// Must not compile: GradScaler::step takes an optimizer, not a model. The build test
// (compile_fail/expect_one_error.cmake) checks that the compiler gives one error, with our message.
#include "amp/grad_scaler.h"
#include "nn/linear.h"

void misuse(minidl::amp::GradScaler& scaler, minidl::nn::Linear& model) { scaler.step(model); }
