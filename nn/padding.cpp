#include "nn/padding.h"

#include "framework/error.h"

namespace minidl::nn {

namespace {
// "(1, 0, 2, 1)", as Python prints the tuple.
std::string tuple_str(const std::vector<int64_t>& values) {
  std::string out = "(";
  for (size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + std::to_string(values[i]);
  return out + ")";
}
}  // namespace

PadLayer::PadLayer(PadMode mode, int dims, std::vector<int64_t> padding, double value, std::string type_name)
    : type_name_(std::move(type_name)), mode_(mode), padding_(std::move(padding)), value_(value) {
  if (type_name_.empty()) {
    const char* kind = mode == PadMode::Reflect ? "ReflectionPad" : mode == PadMode::Replicate ? "ReplicationPad" : "ConstantPad";
    type_name_ = detail::concat(kind, dims, "d");
  }
  // One size stands for every side (PyTorch's _pair / _quadruple of an int).
  if (padding_.size() == 1) padding_.assign(2 * dims, padding_[0]);
  MINIDL_CHECK(padding_.size() == static_cast<size_t>(2 * dims), type_name_, "padding must be one size or ", 2 * dims,
               " sizes, got ", padding_.size());
}

Tensor PadLayer::forward(const Tensor& input) {
  auto scope = forward_scope();
  return pad(input, padding_, mode_, value_);
}

std::string PadLayer::describe() const {
  if (mode_ == PadMode::Constant) return detail::concat(type_name(), "(padding=", tuple_str(padding_), ", value=", value_, ")");
  return detail::concat(type_name(), "(", tuple_str(padding_), ")");
}

std::string ZeroPad2d::describe() const { return detail::concat(type_name(), "(", tuple_str(padding()), ")"); }

}  // namespace minidl::nn
