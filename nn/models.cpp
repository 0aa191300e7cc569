#include "nn/models.h"

#include <sstream>

#include "framework/error.h"
#include "ops/ops.h"

namespace minidl::nn::models {

MLP::MLP(int64_t in_features, std::vector<int64_t> hidden, int64_t classes) {
  int64_t width = in_features;
  hidden.push_back(classes);
  for (size_t i = 0; i < hidden.size(); ++i) {
    layers_.push_back(register_module("fc" + std::to_string(i + 1), std::make_shared<Linear>(width, hidden[i])));
    width = hidden[i];
  }
}

Tensor MLP::forward(const Tensor& x) {
  auto scope = forward_scope();
  Tensor h = x.dim() == 2 ? x : x.flatten(1);          // [N, 784]
  for (size_t i = 0; i + 1 < layers_.size(); ++i)
    h = relu(layers_[i]->forward(h));                    // [N, hidden_i]
  return layers_.back()->forward(h);                     // [N, classes]
}

std::string MLP::describe() const {
  std::ostringstream os;
  os << "MLP(";
  for (size_t i = 0; i < layers_.size(); ++i) os << (i ? "-" : "") << layers_[i]->weight.size(1);
  os << "-" << layers_.back()->weight.size(0) << ", relu)";
  return os.str();
}

std::vector<std::string> model_names() { return {"mlp"}; }

std::shared_ptr<Layer> make_model(const std::string& name) {
  if (name == "mlp") return std::make_shared<MLP>(784, std::vector<int64_t>{256, 256}, 10);
  std::string known;
  for (const auto& n : model_names()) known += (known.empty() ? "" : ", ") + n;
  MINIDL_FAIL("make_model", "unknown model '", name, "' (known: ", known, ")");
}

}  // namespace minidl::nn::models
