#include "framework/device.h"

#include "framework/cuda.h"
#include "framework/error.h"

namespace minidl {

std::string Device::str() const { return is_cpu() ? "cpu" : "cuda:" + std::to_string(index); }

Device Device::parse(const std::string& s) {
  if (s == "cpu") return cpu();
  if (s == "cuda") return cuda(0);
  // At most 9 digits: the index always fits an int (std::stoi would throw std::out_of_range).
  if (s.rfind("cuda:", 0) == 0 && s.size() > 5 && s.size() <= 14 && s.find_first_not_of("0123456789", 5) == std::string::npos)
    return cuda(std::stoi(s.substr(5)));
  MINIDL_FAIL("Device::parse", "unknown device '", s, "' (expected cpu, cuda or cuda:N)");
}

}  // namespace minidl

namespace minidl::cuda {

void check_device(Device device, const char* op) {
  if (device.is_cpu()) return;
  MINIDL_CHECK(is_compiled(), op, "device ", device.str(),
               " is not available: this build has no CUDA backend (configure with -DMINIDL_CUDA=ON on a machine "
               "with nvcc, cuBLAS and cuDNN)");
  MINIDL_CHECK(is_available(), op, "device ", device.str(), " is not available: no CUDA GPU was found (or the driver failed to initialise)");
  MINIDL_CHECK(device.index >= 0 && device.index < device_count(), op, "device ", device.str(),
               " is not available: this machine has ", device_count(), " CUDA device(s)");
}

}  // namespace minidl::cuda
