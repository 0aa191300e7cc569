#include "framework/tensor_impl.h"

namespace minidl {

std::shared_ptr<TensorImpl> alias_of(const TensorImpl& base, Shape sizes, Shape strides, int64_t offset) {
  auto i = std::make_shared<TensorImpl>();
  i->storage = base.storage;
  i->sizes = std::move(sizes);
  i->strides = std::move(strides);
  i->offset = offset;
  i->dtype = base.dtype;
  return i;
}

}  // namespace minidl
