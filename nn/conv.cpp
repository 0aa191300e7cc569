#include "nn/conv.h"

#include <cmath>
#include <typeinfo>

#include "framework/grad_mode.h"
#include "framework/error.h"
#include "nn/init.h"
#include "ops/ops.h"

namespace minidl::nn {

namespace {
void check_channels(const char* layer, int64_t in, int64_t out, int64_t groups) {
  MINIDL_CHECK(in > 0 && out > 0 && groups > 0 && in % groups == 0 && out % groups == 0, layer, "channels ", in, " -> ", out,
               " must be positive and divisible by groups ", groups);
}

// "<name>(in -> out, KxK[, stride s][, <padding>][, output_padding p][, dilation d][, groups g][, bias])"
std::string describe_conv(const char* name, int64_t in, int64_t out, Size2 k, Size2 stride, const std::string& padding,
                          Size2 output_padding, Size2 dilation, int64_t groups, bool bias) {
  auto option = [](const char* label, int64_t v, int64_t dflt) {
    return v != dflt ? detail::concat(", ", label, " ", v) : std::string();
  };
  return detail::concat(name, "(", in, " -> ", out, ", ", k[0], "x", k[1], option("stride", stride[0], 1), padding,
                        option("output_padding", output_padding[0], 0), option("dilation", dilation[0], 1),
                        option("groups", groups, 1), bias ? ", bias)" : ")");
}
}  // namespace

void reset_conv_parameters(const Tensor& weight, const Tensor& bias, Generator* gen) {
  init::kaiming_uniform_(weight, std::sqrt(5.0), init::FanMode::FanIn, init::Nonlinearity::LeakyReLU, gen);
  if (bias.defined()) {
    const double fan_in = static_cast<double>(weight.numel() / weight.size(0));  // size(1) times the kernel's size
    init::uniform_(bias, -1.0 / std::sqrt(fan_in), 1.0 / std::sqrt(fan_in), gen);
  }
}

Conv2d::Conv2d(const Conv2dOptions& o, Generator* gen) : options(o) {
  check_channels("Conv2d", o.in_channels, o.out_channels, o.groups_);
  MINIDL_CHECK(!o.same_ || (o.stride_[0] == 1 && o.stride_[1] == 1), "Conv2d",
               "padding='same' is not supported for strided convolutions (got stride [", o.stride_[0], ", ",
               o.stride_[1], "])");
  weight = register_parameter("weight", empty({o.out_channels, o.in_channels / o.groups_, o.kernel_size[0], o.kernel_size[1]}));
  if (o.bias_) bias = register_parameter("bias", empty({o.out_channels}));
  reset_parameters(gen);
}

void Conv2d::reset_parameters(Generator* gen) { reset_conv_parameters(weight, bias, gen); }

Tensor Conv2d::forward(const Tensor& x) {
  auto scope = forward_scope();
  if (options.same_)
    return conv2d(x, weight, bias, options.stride_, ConvPadding::Same, options.dilation_, options.groups_);
  return conv2d(x, weight, bias, options.stride_, options.padding_, options.dilation_, options.groups_);
}

std::string Conv2d::describe() const {
  const auto& o = options;
  return describe_conv("Conv2d", o.in_channels, o.out_channels, o.kernel_size, o.stride_,
                       o.same_ ? ", same" : (o.padding_[0] ? ", pad " + std::to_string(o.padding_[0]) : ""), {0, 0},
                       o.dilation_, o.groups_, o.bias_);
}

ConvTranspose2d::ConvTranspose2d(const ConvTranspose2dOptions& o, Generator* gen) : options(o) {
  check_channels("ConvTranspose2d", o.in_channels, o.out_channels, o.groups_);
  weight = register_parameter("weight", empty({o.in_channels, o.out_channels / o.groups_, o.kernel_size[0], o.kernel_size[1]}));
  if (o.bias_) bias = register_parameter("bias", empty({o.out_channels}));
  reset_parameters(gen);
}

void ConvTranspose2d::reset_parameters(Generator* gen) { reset_conv_parameters(weight, bias, gen); }

Tensor ConvTranspose2d::forward(const Tensor& x) {
  auto scope = forward_scope();
  const auto& o = options;
  return conv_transpose2d(x, weight, bias, o.stride_, o.padding_, o.output_padding_, o.groups_, o.dilation_);
}

Tensor ConvTranspose2d::forward(const Tensor& x, const std::vector<int64_t>& output_size) {
  const auto& o = options;
  // PyTorch's _output_padding: the size without output padding is the smallest, stride - 1 more the largest.
  const int64_t spatial_from = x.dim() == 4 ? 2 : 1;
  std::vector<int64_t> wanted = output_size;
  if (static_cast<int64_t>(wanted.size()) == spatial_from + 2) wanted.erase(wanted.begin(), wanted.begin() + spatial_from);
  MINIDL_CHECK(wanted.size() == 2, "ConvTranspose2d", "for ", x.dim(), "D input, output_size must have 2 or ",
               spatial_from + 2, " elements (got ", output_size.size(), ")");
  MINIDL_CHECK(x.dim() == 3 || x.dim() == 4, "ConvTranspose2d", "expected a 3D or 4D input, got ", x.dim(), "D");
  Size2 smallest{}, largest{}, output_padding{};
  for (int d = 0; d < 2; ++d) {
    smallest[d] = (x.size(spatial_from + d) - 1) * o.stride_[d] - 2 * o.padding_[d] + o.dilation_[d] * (o.kernel_size[d] - 1) + 1;
    largest[d] = smallest[d] + o.stride_[d] - 1;
    output_padding[d] = wanted[d] - smallest[d];
  }
  for (int d = 0; d < 2; ++d)
    MINIDL_CHECK(wanted[d] >= smallest[d] && wanted[d] <= largest[d], "ConvTranspose2d", "requested an output size of [",
                 wanted[0], ", ", wanted[1], "], but valid sizes range from [", smallest[0], ", ", smallest[1], "] to [",
                 largest[0], ", ", largest[1], "] (for an input of [", x.size(spatial_from), ", ", x.size(spatial_from + 1),
                 "])");
  auto scope = forward_scope();
  return conv_transpose2d(x, weight, bias, o.stride_, o.padding_, output_padding, o.groups_, o.dilation_);
}

std::string ConvTranspose2d::describe() const {
  const auto& o = options;
  return describe_conv("ConvTranspose2d", o.in_channels, o.out_channels, o.kernel_size, o.stride_,
                       o.padding_[0] ? ", pad " + std::to_string(o.padding_[0]) : "", o.output_padding_, o.dilation_,
                       o.groups_, o.bias_);
}

std::string SquarePool2d::describe() const {
  return detail::concat(type_name(), "(", k_, "x", k_, ", stride ", s_, p_ ? detail::concat(", padding ", p_) : "", describe_options(), ")");
}

Tensor MaxPool2d::forward(const Tensor& x) {
  auto scope = forward_scope();
  return max_pool2d(x, kernel(), stride(), padding(), {dilation_, dilation_}, ceil_mode_);
}
std::string MaxPool2d::describe_options() const {
  return detail::concat(dilation_ != 1 ? detail::concat(", dilation ", dilation_) : "", ceil_mode_ ? ", ceil_mode" : "");
}

Tensor AvgPool2d::forward(const Tensor& x) {
  auto scope = forward_scope();
  return avg_pool2d(x, kernel(), stride(), padding(), ceil_mode_, count_include_pad_, divisor_override_);
}
std::string AvgPool2d::describe_options() const {
  return detail::concat(ceil_mode_ ? ", ceil_mode" : "", count_include_pad_ ? "" : ", count_include_pad false",
                        divisor_override_ ? detail::concat(", divisor_override ", *divisor_override_) : "");
}

Tensor AdaptiveAvgPool2d::forward(const Tensor& x) {
  auto scope = forward_scope();
  return adaptive_avg_pool2d(x, out_);
}
std::string AdaptiveAvgPool2d::describe() const { return detail::concat("AdaptiveAvgPool2d(", out_[0], "x", out_[1], ")"); }

Tensor AdaptiveMaxPool2d::forward(const Tensor& x) {
  auto scope = forward_scope();
  return adaptive_max_pool2d(x, out_);
}
std::string AdaptiveMaxPool2d::describe() const { return detail::concat("AdaptiveMaxPool2d(", out_[0], "x", out_[1], ")"); }

BatchNorm::BatchNorm(int64_t features, int expected_dims, double eps, std::optional<double> momentum, bool affine,
                     bool track_running_stats)
    : features_(features),
      expected_dims_(expected_dims),
      eps_(eps),
      momentum_(momentum),
      track_running_stats_(track_running_stats) {
  MINIDL_CHECK(features > 0, type_name(), "num_features must be positive, got ", features);
  if (affine) {
    weight = register_parameter("weight", ones({features}));
    bias = register_parameter("bias", zeros({features}));
  }
  // Without tracking: empty slots, as PyTorch's register_buffer(name, None).
  running_mean = register_buffer("running_mean", track_running_stats ? zeros({features}) : Tensor());
  running_var = register_buffer("running_var", track_running_stats ? ones({features}) : Tensor());
  num_batches_tracked = register_buffer("num_batches_tracked", track_running_stats ? zeros({}, DType::I64) : Tensor());
  zero_buffer_when_missing("num_batches_tracked");
}

ModulePtr BatchNorm::clone_structure() const {
  const bool affine = weight.defined(), track = track_running_stats_;
  if (typeid(*this) == typeid(BatchNorm1d)) return std::make_shared<BatchNorm1d>(features_, eps_, momentum_, affine, track);
  if (typeid(*this) == typeid(BatchNorm2d)) return std::make_shared<BatchNorm2d>(features_, eps_, momentum_, affine, track);
  return std::make_shared<BatchNorm>(features_, expected_dims_, eps_, momentum_, affine, track);
}

void BatchNorm::set_momentum(std::optional<double> momentum) { momentum_ = momentum; }

Tensor BatchNorm::forward(const Tensor& x) { return normalize(x, false); }
// A BatchNorm with hooks is called on its own, so they see its output (and its gradient) unfused.
Tensor BatchNorm::forward_relu(const Tensor& x) { return has_hooks() ? relu(call(*this, x)) : normalize(x, true); }
Tensor BatchNorm::forward_add_relu(const Tensor& x, const Tensor& residual) {
  return has_hooks() ? relu(call(*this, x) + residual) : normalize(x, true, residual);
}

Tensor BatchNorm::normalize(const Tensor& x, bool relu, const Tensor& residual) {
  auto scope = forward_scope();
  const bool ok = expected_dims_ == 2 ? (x.dim() == 2 || x.dim() == 3) : x.dim() == 4;
  MINIDL_CHECK(ok, type_name(), "expected ", expected_dims_ == 2 ? "2D or 3D" : "4D", " input, got ", x.meta_str());
  double factor = momentum_.value_or(0.0);
  if (is_training() && track_running_stats_) {
    NoGradGuard ng;
    // The one is made where the counter lives: add_ takes operands of one device (a CPU scalar
    // would be refused once the module has moved to a GPU).
    num_batches_tracked.add_(ones({}, TensorOptions(DType::I64).device(num_batches_tracked.device())));
    // momentum None: cumulative moving average, as PyTorch.
    if (!momentum_) factor = 1.0 / static_cast<double>(num_batches_tracked.item_int());
  }
  // As PyTorch: batch statistics in training and whenever there are no running statistics (their
  // slots are then empty, so nothing is updated).
  const bool batch_stats = is_training() || !track_running_stats_;
  if (all_sum_ && is_training())
    return batch_norm_synced(x, running_mean, running_var, weight, bias, factor, eps_, all_sum_, relu, residual);
  if (residual.defined())
    return batch_norm_add_relu(x, residual, running_mean, running_var, weight, bias, batch_stats, factor, eps_);
  return (relu ? batch_norm_relu : batch_norm)(x, running_mean, running_var, weight, bias, batch_stats, factor, eps_);
}

std::string BatchNorm::describe() const {
  const std::string momentum = momentum_ ? detail::concat(*momentum_) : "None";
  return detail::concat(type_name(), "(", features_, ", eps ", eps_, ", momentum ", momentum, weight.defined() ? ", affine" : "",
                        track_running_stats_ ? "" : ", track_running_stats false", ")");
}

Dropout2d::Dropout2d(double p) : p_(p) {
  MINIDL_CHECK(p >= 0 && p <= 1, "Dropout2d", "dropout probability has to be between 0 and 1, but got ", p);
}
Tensor Dropout2d::forward(const Tensor& x) {
  auto scope = forward_scope();
  return dropout2d(x, p_, is_training());
}
std::string Dropout2d::describe() const { return detail::concat("Dropout2d(p=", p_, ")"); }

}  // namespace minidl::nn
