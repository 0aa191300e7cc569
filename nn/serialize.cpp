// nn::save / nn::load.
#include "nn/serialize.h"

namespace minidl::nn {

void save(const Module& module, const std::string& path) {
  safetensors::save_file(module.state_dict(), path, {{"format", "pt"}});
}

LoadResult load(Module& module, const std::string& path, bool strict) {
  safetensors::File f = safetensors::load_file(path);
  return module.load_state_dict(f.tensors, strict);
}

}  // namespace minidl::nn
