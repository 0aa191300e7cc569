// The default process group and launcher detection.
#include "distributed/init.h"

#include <cstdlib>
#include <mutex>

#include "framework/cuda.h"
#include "framework/error.h"
#ifdef MINIDL_WITH_MPI
#include "distributed/mpi/mpi_process_group.h"
#endif
#ifdef MINIDL_WITH_NCCL
#include "distributed/nccl/nccl_process_group.h"
#include "distributed/self_process_group.h"
#endif

namespace minidl::dist {

namespace {
std::optional<int> env_int(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  char* end = nullptr;
  long x = std::strtol(v, &end, 10);
  if (*end != '\0') return std::nullopt;
  return static_cast<int>(x);
}

std::mutex& init_mutex() {
  static std::mutex mu;
  return mu;
}
ProcessGroupPtr& default_slot() {
  static ProcessGroupPtr group;
  return group;
}
int& default_device() {
  static int device = -1;
  return device;
}

// The GPU of an NCCL rank: the one asked for, else one per local rank.
int nccl_device(const InitOptions& options) {
  const int count = cuda::device_count();
  MINIDL_CHECK(count > 0, "init_process_group",
               "the nccl backend needs a CUDA GPU per rank, and this machine has none (no device, or no working "
               "driver); use the mpi backend with CPU tensors");
  if (options.device_ >= 0) {
    MINIDL_CHECK(options.device_ < count, "init_process_group", "device cuda:", options.device_,
                 " is not available: this machine has ", count, " CUDA device(s)");
    return options.device_;
  }
  const auto launch = launch_info();
  return (launch ? launch->local_rank : 0) % count;
}
}  // namespace

std::optional<LaunchInfo> launch_info() {
  auto rank = env_int("OMPI_COMM_WORLD_RANK"), size = env_int("OMPI_COMM_WORLD_SIZE");
  auto local = env_int("OMPI_COMM_WORLD_LOCAL_RANK");
  if (!rank || !size) {
    rank = env_int("PMI_RANK");
    size = env_int("PMI_SIZE");
    local = std::nullopt;
  }
  if (!rank || !size) return std::nullopt;
  return LaunchInfo{*rank, *size, local.value_or(0)};
}

bool is_mpi_available() {
#ifdef MINIDL_WITH_MPI
  return true;
#else
  return false;
#endif
}

bool is_nccl_available() {
#ifdef MINIDL_WITH_NCCL
  return true;
#else
  return false;
#endif
}

ProcessGroupPtr init_process_group(InitOptions options) {
  std::lock_guard<std::mutex> lk(init_mutex());
  MINIDL_CHECK(!default_slot(), "init_process_group", "the default process group is already initialized");
  const std::string& backend = options.backend_;
  MINIDL_CHECK(backend == "mpi" || backend == "nccl", "init_process_group", "unknown backend '", backend,
               "' (known: mpi, nccl)");
  MINIDL_CHECK(is_mpi_available(), "init_process_group",
               "minidl was built without MPI (configure with -DMINIDL_MPI=ON after installing libopenmpi-dev "
               "and openmpi-bin)");
  MINIDL_CHECK(backend != "nccl" || is_nccl_available(), "init_process_group",
               "minidl was built without NCCL (it needs the CUDA and MPI backends and the toolkit's nccl.h and "
               "libnccl; configure with -DMINIDL_NCCL=ON to see what is missing)");
  MINIDL_CHECK(!options.require_launcher_ || launch_info().has_value(), "init_process_group",
               "this process was not started by mpirun (no OMPI_COMM_WORLD_RANK/SIZE in the environment); "
               "launch it as `mpirun -np N <program>`");
  const int device = backend == "nccl" ? nccl_device(options) : -1;
  (void)device;  // unused in a build without MPI
#ifdef MINIDL_WITH_MPI
  ProcessGroupPtr world;
#ifdef MINIDL_WITH_NCCL
  if (backend == "nccl") {
    // Without a launcher (allowed by require_launcher(false)) this process is a world of one, and
    // NCCL needs no MPI to start it.
    world = make_nccl_group(launch_info() ? *make_mpi_world_group() : *make_self_group(), device);
    // The communicator must go before the CUDA runtime tears itself down at exit; this handler,
    // registered after CUDA started, runs before CUDA's own.
    static std::once_flag registered;
    std::call_once(registered, [] { std::atexit(destroy_process_group); });
  }
#endif
  if (!world) world = make_mpi_world_group();
  default_slot() = world;
  default_device() = device;
#endif
  return default_slot();
}

bool is_initialized() {
  std::lock_guard<std::mutex> lk(init_mutex());
  return default_slot() != nullptr;
}

ProcessGroupPtr default_group() {
  std::lock_guard<std::mutex> lk(init_mutex());
  MINIDL_CHECK(default_slot() != nullptr, "default_group",
               "the default process group is not initialized; call dist::init_process_group() first");
  return default_slot();
}

int default_group_device() {
  std::lock_guard<std::mutex> lk(init_mutex());
  MINIDL_CHECK(default_slot() != nullptr, "default_group_device",
               "the default process group is not initialized; call dist::init_process_group() first");
  return default_device();
}

void destroy_process_group() {
  std::lock_guard<std::mutex> lk(init_mutex());
  default_slot().reset();
  default_device() = -1;
}

void abort_all(int code) {
#ifdef MINIDL_WITH_MPI
  abort_mpi_world(code);
#endif
  std::exit(code);
}

}  // namespace minidl::dist
