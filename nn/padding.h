// Padding layers as torch.nn's: ZeroPad2d, ConstantPad1d/2d, ReflectionPad1d/2d and
// ReplicationPad1d/2d, each a module over pad (ops/nn_ops.h). One size pads every side; otherwise
// the sizes are (left, right) for 1d and (left, right, top, bottom) for 2d, as PyTorch's tuples.
#pragma once
#include <string>
#include <vector>

#include "nn/module.h"
#include "ops/nn_ops.h"

namespace minidl::nn {

// What every padding layer is: a mode, 2 * dims sizes and a fill value (constant mode only).
class PadLayer : public Layer {
 public:
  Tensor forward(const Tensor& input) override;
  std::string type_name() const override { return type_name_; }  // "ReflectionPad2d", "ConstantPad1d", ...
  std::string describe() const override;         // "ReflectionPad2d((2, 1, 0, 1))", as PyTorch's repr
  const std::vector<int64_t>& padding() const { return padding_; }
  double value() const { return value_; }

 protected:
  // type_name empty: named after the mode and dims.
  PadLayer(PadMode mode, int dims, std::vector<int64_t> padding, double value, std::string type_name = "");

 private:
  std::string type_name_;
  PadMode mode_;
  std::vector<int64_t> padding_;
  double value_;
};

// ReflectionPad1d/2d and ReplicationPad1d/2d.
template <PadMode Mode, int Dims>
class ModePad : public PadLayer {
 public:
  explicit ModePad(int64_t padding) : ModePad(std::vector<int64_t>{padding}) {}
  explicit ModePad(std::vector<int64_t> padding) : PadLayer(Mode, Dims, std::move(padding), 0.0) {}
  ModulePtr clone_structure() const override { return std::make_shared<ModePad>(padding()); }
};
using ReflectionPad1d = ModePad<PadMode::Reflect, 1>;
using ReflectionPad2d = ModePad<PadMode::Reflect, 2>;
using ReplicationPad1d = ModePad<PadMode::Replicate, 1>;
using ReplicationPad2d = ModePad<PadMode::Replicate, 2>;

// ConstantPad1d/2d(padding, value).
template <int Dims>
class ConstantPad : public PadLayer {
 public:
  ConstantPad(int64_t padding, double value) : ConstantPad(std::vector<int64_t>{padding}, value) {}
  ConstantPad(std::vector<int64_t> padding, double value) : PadLayer(PadMode::Constant, Dims, std::move(padding), value) {}
  ModulePtr clone_structure() const override { return std::make_shared<ConstantPad>(padding(), value()); }
};
using ConstantPad1d = ConstantPad<1>;
using ConstantPad2d = ConstantPad<2>;

// ZeroPad2d(padding): ConstantPad2d with value 0, under its own name.
class ZeroPad2d : public PadLayer {
 public:
  explicit ZeroPad2d(int64_t padding) : ZeroPad2d(std::vector<int64_t>{padding}) {}
  explicit ZeroPad2d(std::vector<int64_t> padding) : PadLayer(PadMode::Constant, 2, std::move(padding), 0.0, "ZeroPad2d") {}
  std::string describe() const override;
  ModulePtr clone_structure() const override { return std::make_shared<ZeroPad2d>(padding()); }
};

}  // namespace minidl::nn
