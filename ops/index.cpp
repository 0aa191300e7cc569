// Indexing: index_select (backward: index_add into zeros), gather (backward: scatter_add into
// zeros) and one_hot. The two scatter-style ops are differentiable too (their backward is the
// matching select/gather), so gradients of any order work. CPU indices are validated on the host
// with an error naming the offending value, so the CPU kernels skip bounds checks; the CUDA kernels
// check every index they read and report a bad one at the next synchronisation (ops/common.h's
// device_checks_indices), so that no op waits for the device. Public scatter_add (torch.scatter_add)
// is differentiable in self and src. Autocast policy: None, except scatter_add on CUDA (Promote,
// PyTorch's CUDA promote list).
#include <algorithm>

#include "ops/common.h"

namespace minidl {

using namespace ops_detail;
using autograd::TensorList;

namespace {
using P = amp::CastPolicy;
const amp::OpPolicy kScatterAdd{"scatter_add", P::None, P::Promote};
}  // namespace

std::vector<const amp::OpPolicy*> ops_detail::index_policies() { return {&kScatterAdd}; }

namespace {
// The index as contiguous i64 on the host, for validation (a copy only when it lives elsewhere).
Tensor host_index(const Tensor& index) { return index.to(Device::cpu()).contiguous(); }

// Throws naming the first value outside [0, size).
void check_bounds(const char* op, const Tensor& index, int64_t dim, int64_t size) {
  const Tensor h = host_index(index);
  const int64_t* p = h.data_ptr<int64_t>();
  const int64_t n = h.numel();
  for (int64_t i = 0; i < n; ++i)
    MINIDL_CHECK(p[i] >= 0 && p[i] < size, op, "index ", p[i], " is out of bounds for dimension ", dim,
                 " with size ", size);
}

// out = zeros(shape); out[.., index[i], ..] += src[.., i, ..] along dim. Differentiable in src.
Tensor index_add_into_zeros(const Shape& shape, int64_t dim, const Tensor& index, const Tensor& src) {
  Tensor out = zeros(shape, TensorOptions(src.dtype()).device(src.device()));
  K().index_add.get(src.device(), src.dtype())(out, dim, index, src.detach().contiguous());
  autograd::record("IndexAddBackward", {src}, {out}, {index}, [dim](const TensorList& g, const TensorList& s) {
    return TensorList{index_select(g[0], dim, s[0])};
  });
  return out;
}

// out = zeros(shape); out[.., index[p], ..] += src[p] along dim. Differentiable in src.
Tensor scatter_add_into_zeros(const Shape& shape, int64_t dim, const Tensor& index, const Tensor& src) {
  Tensor out = zeros(shape, TensorOptions(src.dtype()).device(src.device()));
  K().scatter_add.get(src.device(), src.dtype())(out, dim, index, src.detach());
  autograd::record("ScatterAddBackward", {src}, {out}, {index}, [dim](const TensorList& g, const TensorList& s) {
    return TensorList{gather(g[0], dim, s[0])};
  });
  return out;
}
}  // namespace

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index_in) {
  const char* name = "index_select";
  check_defined(x, name, "self");
  check_defined(index_in, name, "index");
  check_same_device(name, x, index_in);
  MINIDL_CHECK(index_in.dtype() == DType::I64 || index_in.dtype() == DType::I32, name,
               "expected an i64 or i32 index, got ", index_in.meta_str());
  MINIDL_CHECK(index_in.dim() <= 1, name, "index must be 0-D or 1-D, got ", index_in.meta_str());
  if (x.dim() == 0) {
    // A 0-dim self takes one index (0) and gives a 0-dim result, as PyTorch 2.x (1.13's CPU kernel
    // took any number of indices and returned one element).
    wrap_dim(dim, 1, name);
    MINIDL_CHECK(index_in.numel() == 1, name, "an index into a 0-dim tensor can have only 1 value, got ", index_in.numel(),
                 " values (", index_in.meta_str(), ")");
    return index_select(x.reshape({1}), 0, index_in.reshape({1})).reshape({});
  }
  dim = wrap_dim(dim, x.dim(), name);
  const Tensor index = cast(index_in, DType::I64).contiguous().reshape({-1});
  if (!device_checks_indices(x.device())) check_bounds(name, index, dim, x.shape()[dim]);
  Shape out_shape = x.shape();
  out_shape[dim] = index.numel();
  Tensor out = new_empty(out_shape, x.dtype(), x.device());
  K().index_select.get(x.device(), x.dtype())(out, x.detach().contiguous(), dim, index);
  if (x.is_floating_point())
    autograd::record("IndexSelectBackward", {x}, {out}, {index}, [dim, shape = x.shape()](const TensorList& g, const TensorList& s) {
      return TensorList{index_add_into_zeros(shape, dim, s[0], g[0])};
    });
  return out;
}

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) {
  const char* name = "gather";
  check_defined(x, name, "self");
  check_defined(index, name, "index");
  check_same_device(name, x, index);
  MINIDL_CHECK(index.dtype() == DType::I64, name, "expected an i64 index, got ", index.meta_str());
  MINIDL_CHECK(index.dim() == x.dim(), name, "index must have the same number of dimensions as input: got index ",
               index.meta_str(), " for input ", x.meta_str());
  if (x.dim() == 0) {
    wrap_dim(dim, 1, name);
    return gather(x.reshape({1}), 0, index.reshape({1})).reshape({});
  }
  dim = wrap_dim(dim, x.dim(), name);
  for (int64_t d = 0; d < x.dim(); ++d)
    MINIDL_CHECK(d == dim || index.shape()[d] <= x.shape()[d], name, "index ", shape_str(index.shape()),
                 " must not be larger than input ", shape_str(x.shape()), " apart from dimension ", dim,
                 " (mismatch at dimension ", d, ")");
  if (!device_checks_indices(x.device())) check_bounds(name, index, dim, x.shape()[dim]);
  Tensor out = new_empty(index.shape(), x.dtype(), x.device());
  K().gather.get(x.device(), x.dtype())(out, x.detach(), dim, index);
  if (x.is_floating_point())
    autograd::record("GatherBackward", {x}, {out}, {index}, [dim, shape = x.shape()](const TensorList& g, const TensorList& s) {
      return TensorList{scatter_add_into_zeros(shape, dim, s[0], g[0])};
    });
  return out;
}

Tensor scatter_add(const Tensor& x_arg, int64_t dim, const Tensor& index, const Tensor& src_arg) {
  const char* name = "scatter_add";
  amp::AutocastInputs in(kScatterAdd, {x_arg, src_arg});
  const Tensor& x = in[0];
  const Tensor& src = in[1];
  check_defined(x, name, "self");
  check_defined(index, name, "index");
  check_defined(src, name, "src");
  check_same_device(name, x, index);
  check_same_device(name, x, src);
  MINIDL_CHECK(index.dtype() == DType::I64, name, "expected an i64 index, got ", index.meta_str());
  MINIDL_CHECK(x.dtype() == src.dtype(), name, "expected self and src of one dtype, got ", x.meta_str(), " and ",
               src.meta_str());
  MINIDL_CHECK(index.dim() == x.dim() && src.dim() == x.dim(), name,
               "index and src must have as many dimensions as self: got self ", x.meta_str(), ", index ",
               index.meta_str(), ", src ", src.meta_str());
  if (x.dim() == 0) {
    wrap_dim(dim, 0, name);
    return scatter_add(x.reshape({1}), 0, index.reshape({1}), src.reshape({1})).reshape({});
  }
  dim = wrap_dim(dim, x.dim(), name);
  for (int64_t d = 0; d < x.dim(); ++d)
    MINIDL_CHECK(index.shape()[d] <= src.shape()[d] && (d == dim || index.shape()[d] <= x.shape()[d]), name,
                 "index ", shape_str(index.shape()), " must be no larger than src ", shape_str(src.shape()),
                 " and, apart from dimension ", dim, ", than self ", shape_str(x.shape()), " (mismatch at dimension ",
                 d, ")");
  if (!device_checks_indices(x.device())) check_bounds(name, index, dim, x.shape()[dim]);
  // src's part that the index addresses (all of it when the shapes agree).
  Tensor part = src.detach();
  for (int64_t d = 0; d < src.dim(); ++d)
    if (index.shape()[d] != src.shape()[d]) part = part.narrow(d, 0, index.shape()[d]);
  Tensor out = x.detach().clone(MemoryFormat::Contiguous);
  K().scatter_add.get(x.device(), x.dtype(), name)(out, dim, index, part);
  if (x.is_floating_point())
    autograd::record("ScatterAddBackward", {x, src}, {out}, {index},
                     [dim, src_shape = src.shape()](const TensorList& g, const TensorList& s) {
                       // src's gradient: the output's gradient at the places each src element went,
                       // zero for the elements the index does not reach.
                       Tensor gs = gather(g[0], dim, s[0]);
                       if (gs.shape() != src_shape) {
                         std::vector<int64_t> pads;
                         for (int64_t d = static_cast<int64_t>(src_shape.size()) - 1; d >= 0; --d)
                           pads.insert(pads.end(), {0, src_shape[d] - gs.shape()[d]});
                         gs = pad(gs, pads);
                       }
                       return TensorList{g[0], gs};
                     });
  return out;
}

Tensor one_hot(const Tensor& index, int64_t num_classes) {
  const char* name = "one_hot";
  check_defined(index, name, "index");
  MINIDL_CHECK(index.dtype() == DType::I64, name, "is only applicable to an i64 index tensor, got ", index.meta_str());
  MINIDL_CHECK(num_classes >= -1, name, "num_classes must be -1 (infer) or non-negative, got ", num_classes);
  if (device_checks_indices(index.device()) && num_classes >= 0) {
    // Built where the index lives, without waiting for it: each value compared with every class;
    // values are checked there and a bad one reported at the next synchronisation.
    MINIDL_CHECK(index.numel() > 0 || num_classes > 0, name,
                 "cannot infer the number of classes from an empty tensor; pass num_classes > 0");
    check_index_range_on_device(index, {cuda::DeferredOp::OneHot, num_classes});
    const Tensor classes = arange(0, static_cast<double>(num_classes), 1, TensorOptions(DType::I64).device(index.device()));
    return cast(eq(index.unsqueeze(-1), classes), DType::I64);
  }
  // Here on the host. With num_classes -1 the output's shape depends on the largest value, so a GPU
  // index is read back (a wait for the device, as PyTorch's one_hot without num_classes): the
  // caller asked for a shape only the values can give.
  const Tensor h = host_index(index);
  const int64_t* p = h.data_ptr<int64_t>();
  const int64_t n = h.numel();
  // An empty index needs a positive num_classes (PyTorch refuses 0 too: "Can not infer total number of classes").
  if (n == 0)
    MINIDL_CHECK(num_classes > 0, name, "cannot infer the number of classes from an empty tensor; pass num_classes > 0");
  if (num_classes == -1) num_classes = *std::max_element(p, p + n) + 1;
  for (int64_t i = 0; i < n; ++i) {
    MINIDL_CHECK(p[i] >= 0, name, "class values must be non-negative, got ", p[i]);
    MINIDL_CHECK(p[i] < num_classes, name, "class values must be smaller than num_classes (", num_classes, "), got ", p[i]);
  }
  Shape shape = index.shape();
  shape.push_back(num_classes);
  Tensor out = zeros(shape, DType::I64);
  int64_t* o = out.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) o[i * num_classes + p[i]] = 1;
  return out.to(index.device());
}

}  // namespace minidl
