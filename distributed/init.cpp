// The default process group and launcher detection.
#include "distributed/init.h"

#include <cstdlib>
#include <mutex>

#include "framework/error.h"
#ifdef MINIDL_WITH_MPI
#include "distributed/mpi/mpi_process_group.h"
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

ProcessGroupPtr init_process_group(InitOptions options) {
  std::lock_guard<std::mutex> lk(init_mutex());
  MINIDL_CHECK(!default_slot(), "init_process_group", "the default process group is already initialized");
  MINIDL_CHECK(options.backend_ == "mpi", "init_process_group", "unknown backend '", options.backend_,
               "' (available: mpi)");
  MINIDL_CHECK(is_mpi_available(), "init_process_group",
               "minidl was built without MPI (configure with -DMINIDL_MPI=ON after installing libopenmpi-dev "
               "and openmpi-bin)");
  MINIDL_CHECK(!options.require_launcher_ || launch_info().has_value(), "init_process_group",
               "this process was not started by mpirun (no OMPI_COMM_WORLD_RANK/SIZE in the environment); "
               "launch it as `mpirun -np N <program>`");
#ifdef MINIDL_WITH_MPI
  default_slot() = make_mpi_world_group();
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

void destroy_process_group() {
  std::lock_guard<std::mutex> lk(init_mutex());
  default_slot().reset();
}

void abort_all(int code) {
#ifdef MINIDL_WITH_MPI
  abort_mpi_world(code);
#endif
  std::exit(code);
}

}  // namespace minidl::dist
