#include "framework/grad_mode.h"

namespace minidl {

namespace {
thread_local bool t_grad_enabled = true;
thread_local bool t_inference = false;
}  // namespace

bool GradMode::is_enabled() { return t_grad_enabled; }
void GradMode::set_enabled(bool enabled) { t_grad_enabled = enabled; }

InferenceMode::InferenceMode() : prev_grad_(t_grad_enabled), prev_inference_(t_inference) {
  t_grad_enabled = false;
  t_inference = true;
}
InferenceMode::~InferenceMode() {
  t_grad_enabled = prev_grad_;
  t_inference = prev_inference_;
}
bool InferenceMode::is_enabled() { return t_inference; }

}  // namespace minidl
