// DataParallel's replication: see replicate.h.
#include "distributed/replicate.h"

#include <string>

#include "framework/cuda.h"
#include "framework/error.h"
#include "framework/generator.h"
#include "framework/grad_mode.h"
#include "ops/ops.h"

namespace minidl::dist::detail {

namespace {
constexpr const char* kOp = "DataParallel";

std::string device_list(const std::vector<Device>& devices) {
  std::string s;
  for (size_t i = 0; i < devices.size(); ++i) s += (i ? ", " : "") + devices[i].str();
  return s;
}
}  // namespace

void check_data_parallel_devices(const std::vector<Device>& devices) {
  MINIDL_CHECK(!devices.empty(), kOp, "needs at least one device");
  for (const Device& d : devices) {
    MINIDL_CHECK(d.type == devices[0].type, kOp, "devices must be all CPU or all CUDA, got ", device_list(devices));
    if (d.is_cuda())
      MINIDL_CHECK(cuda::is_available() && d.index >= 0 && d.index < cuda::device_count(), kOp, "device ", d.str(),
                   " does not exist (", cuda::is_available() ? cuda::device_count() : 0, " CUDA devices visible)");
  }
}

void check_module_on(const nn::Module& module, Device device) {
  auto check = [&](const TensorDict& tensors) {
    for (const auto& [name, t] : tensors)
      MINIDL_CHECK(t.device() == device, kOp, "module must have its parameters and buffers on device ", device.str(),
                   " (devices[0]) but found ", name, " on ", t.device().str());
  };
  check(module.named_parameters());
  check(module.named_buffers());
}

nn::ModulePtr make_replica_structure(const nn::Module& module) {
  Generator& gen = default_generator();
  const std::vector<uint64_t> state = gen.state();
  nn::ModulePtr replica;
  try {
    replica = module.clone_structure();
  } catch (const Error& e) {
    gen.set_state(state);
    MINIDL_FAIL(kOp, e.what());  // "DataParallel: Net cannot be replicated: ..."
  }
  gen.set_state(state);
  MINIDL_CHECK(replica != nullptr && replica.get() != &module, kOp, module.type_name(),
               "::clone_structure() must return a new module");
  return replica;
}

void refresh_replica(nn::Module& replica, const nn::Module& module, Device device) {
  // Parameters: on the original's device an alias (a view, so the replica reads the original's
  // storage), elsewhere a copy; both record their backward when grad mode is on.
  auto param_for = [device](const Tensor& p) { return p.device() == device ? p.view(p.shape()) : p.to(device); };
  // Buffers: always a copy of their own, detached, so a replica's in-place updates touch neither
  // the original nor another replica.
  auto buffer_for = [device](const Tensor& b) {
    NoGradGuard no_grad;
    return b.device() == device ? b.detach().clone() : b.detach().to(device);
  };
  try {
    replica.bind_replica(module, param_for, buffer_for);
  } catch (const Error& e) {
    MINIDL_FAIL(kOp, "a replica does not match the module (clone_structure() must build the same configuration, "
                "and the module must not change after DataParallel is built): ", e.what());
  }
}

}  // namespace minidl::dist::detail
