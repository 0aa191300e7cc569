// Saving and loading a module's weights as a safetensors file (its state dict: parameters and
// persistent buffers, under their dotted names). The file is readable by the reference safetensors
// implementation and carries {"format": "pt"} metadata, as PyTorch's safetensors files do.
#pragma once
#include <memory>
#include <string>

#include "serialize/serialize.h"
#include "nn/module.h"

namespace minidl::nn {

// Writes module.state_dict() atomically.
void save(const Module& module, const std::string& path);
// Reads the file and load_state_dict()s it (converting dtype/device to the module's).
LoadResult load(Module& module, const std::string& path, bool strict = true);

template <class M>
  requires std::is_base_of_v<Module, M>
void save(const std::shared_ptr<M>& module, const std::string& path) {
  save(static_cast<const Module&>(*module), path);
}
template <class M>
  requires std::is_base_of_v<Module, M>
LoadResult load(const std::shared_ptr<M>& module, const std::string& path, bool strict = true) {
  return load(static_cast<Module&>(*module), path, strict);
}

}  // namespace minidl::nn
