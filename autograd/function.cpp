#include "autograd/function.h"

#include "framework/grad_mode.h"
#include "framework/error.h"

#include <mutex>

namespace minidl::autograd {

namespace {
// Node names must outlive the node; custom names are interned here.
const char* intern(const std::string& name) {
  static std::mutex m;
  static std::vector<std::unique_ptr<std::string>> names;
  std::lock_guard<std::mutex> lock(m);
  for (auto& n : names)
    if (*n == name) return n->c_str();
  names.push_back(std::make_unique<std::string>(name));
  return names.back()->c_str();
}
}  // namespace

TensorList apply_function(const std::string& name, const TensorList& inputs, const CustomForward& forward,
                          CustomBackward backward) {
  auto ctx = std::make_shared<FunctionCtx>();
  TensorList outputs;
  {
    NoGradGuard ng;
    outputs = forward(*ctx, inputs);
  }
  // Outputs that alias an input would make the node its own ancestor: detach them into new handles.
  for (Tensor& o : outputs) o = o.detach();
  std::vector<Saved> saved(ctx->to_save.begin(), ctx->to_save.end());
  ctx->to_save.clear();
  const size_t n_inputs = inputs.size();
  record(intern(name), inputs, outputs, std::move(saved),
         [ctx, backward = std::move(backward), n_inputs, name](const TensorList& grads, const TensorList& values) {
           ctx->saved = values;
           TensorList result = backward(*ctx, grads);
           ctx->saved.clear();
           MINIDL_CHECK(result.size() == n_inputs, name, "backward returned ", result.size(), " gradients, expected ",
                        n_inputs, " (one per input)");
           return result;
         });
  return outputs;
}

}  // namespace minidl::autograd
