// Serialization: the safetensors file format (reader and writer), atomic file writes, and the
// Checkpoint container that stores everything a training run needs to resume in one file.
//
// safetensors layout (https://github.com/huggingface/safetensors):
//   bytes 0..7   N, the header length, u64 little-endian
//   bytes 8..8+N a JSON object {name: {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]},
//                "__metadata__": {str: str}}, padded with spaces so the data starts 8-byte aligned
//   the rest     the tensors' raw little-endian bytes; offsets are relative to the start of this
//                buffer, tensors are contiguous (row-major), packed without holes.
// Like the reference writer we lay tensors out by decreasing dtype alignment, then by name (so every
// tensor is aligned to its element size), list "__metadata__" first and write compact JSON: for the
// same tensors and metadata our files are byte-identical to the reference implementation's.
#pragma once
#include <functional>
#include <map>
#include <string>

#include "framework/json.h"
#include "ops/tensor.h"
#include "serialize/tensor_dict.h"

namespace minidl {

// Writes a file so that a reader sees either the old contents or the complete new ones, never a
// partial file: the data goes to a temporary file in the same directory, is fsync'ed, then renamed
// over `path`. `write` is handed a function that appends bytes; on any failure (including an
// exception thrown by `write`) the temporary file is removed and the error is rethrown.
using ByteSink = std::function<void(const void* data, size_t nbytes)>;
void write_file_atomically(const std::string& path, const std::function<void(const ByteSink&)>& write);

// The safetensors dtype name of a dtype ("F32", "BF16", "BOOL", ...), and back (throws naming the
// unsupported name, e.g. "F8_E4M3").
const char* safetensors_dtype_name(DType t);
DType dtype_from_safetensors_name(const std::string& name);

namespace safetensors {

using Metadata = std::map<std::string, std::string>;

// Writes tensors (any device, dtype and strides; copied to contiguous CPU bytes) and optional
// string metadata to `path` atomically. Undefined tensors or empty names are errors.
void save_file(const TensorDict& tensors, const std::string& path, const Metadata& metadata = {});
// The exact bytes save_file writes.
std::string serialize(const TensorDict& tensors, const Metadata& metadata = {});

struct File {
  TensorDict tensors;  // in data-offset order
  Metadata metadata;
};
// Reads and validates a whole file: header length vs file size, JSON, dtype names, shapes, offsets
// (each tensor's byte count, no overlap, no holes, buffer fully covered). Errors name the file and
// the problem. Tensors are loaded on `device`.
File load_file(const std::string& path, Device device = Device::cpu());
// Same checks on bytes in memory; `what` names the source in errors.
File deserialize(const std::string& bytes, const std::string& what = "<memory>", Device device = Device::cpu());

}  // namespace safetensors

// Named tensors plus JSON metadata: the state of an optimizer, a scheduler, a scaler or anything
// else with both tensor and scalar parts.
struct StateDict {
  TensorDict tensors;
  Json meta = Json::object();
};

// One file holding everything a run needs to resume: model weights, optimizer state, scheduler
// state, RNG state, epoch/step, data position... Tensors are namespaced by a prefix
// ("model.fc1.weight", "optim.state.0.exp_avg"); metadata is a JSON object whose top-level keys
// are stored as separate safetensors metadata entries, each value as JSON text. Example:
//
//   Checkpoint ck;
//   ck.put("model", model->state_dict());
//   ck.put("optim", opt.state_dict());
//   ck.put("sched", sched.state_dict());
//   ck.meta["epoch"] = epoch;
//   ck.save("run/last.safetensors");
//   ...
//   Checkpoint ck = Checkpoint::load("run/last.safetensors");
//   model->load_state_dict(ck.tensors_under("model"));
//   opt.load_state_dict(ck.state_dict("optim"));
//   sched.load_state_dict(ck.meta.at("sched"));
struct Checkpoint {
  TensorDict tensors;
  Json meta = Json::object();

  // Adds tensors as "<prefix>.<name>".
  void put(const std::string& prefix, const TensorDict& dict);
  // Adds sd.tensors under the prefix and sd.meta as meta[prefix].
  void put(const std::string& prefix, const StateDict& sd);
  // meta[key] = value.
  void put(const std::string& key, const Json& value);

  // The tensors named "<prefix>.*", with the prefix removed (order kept).
  TensorDict tensors_under(const std::string& prefix) const;
  // tensors_under(prefix) plus meta[prefix] (an empty object when absent).
  StateDict state_dict(const std::string& prefix) const;

  // Unsigned 64-bit values (RNG seeds and offsets, which JSON integers cannot hold above 2^63):
  // stored bit for bit as an I64 tensor named `name`.
  void put_u64(const std::string& name, const std::vector<uint64_t>& values);
  std::vector<uint64_t> get_u64(const std::string& name) const;

  void save(const std::string& path) const;
  static Checkpoint load(const std::string& path, Device device = Device::cpu());
};

}  // namespace minidl
