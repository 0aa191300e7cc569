// cuBLAS opened with dlopen on first use (see cublas_library.h for why).
#include "ops/cuda/cublas_library.h"

#include <dlfcn.h>

#include <atomic>
#include <mutex>
#include <string>

namespace minidl::kernels::cuda {

// Each function type above is the header's own: the cast picks the overload declared with exactly
// that type and fails to compile when cuBLAS's declaration changes.
#define MINIDL_CUBLAS_SAME_TYPE(name, type) static_assert(sizeof(static_cast<type>(&::name)) == sizeof(void*));
MINIDL_CUBLAS_FUNCTIONS(MINIDL_CUBLAS_SAME_TYPE)
#undef MINIDL_CUBLAS_SAME_TYPE

namespace {
#define MINIDL_STR2(x) #x
#define MINIDL_STR(x) MINIDL_STR2(x)
// The soname of the cuBLAS the headers belong to, e.g. libcublas.so.13.
constexpr const char* kSoname = "libcublas.so." MINIDL_STR(CUBLAS_VER_MAJOR);
#undef MINIDL_STR
#undef MINIDL_STR2

#ifdef MINIDL_CUBLAS_BUILD_PATH
constexpr const char* kBuildPath = MINIDL_CUBLAS_BUILD_PATH;  // the file CMake linked against before
#else
constexpr const char* kBuildPath = nullptr;
#endif

std::string loader_message() {
  const char* e = dlerror();
  return e ? e : "unknown error";
}

CublasLibrary open_library() {
  std::string tried;
  void* handle = nullptr;
  CublasLibrary lib;
  for (const char* name : {kSoname, kBuildPath}) {
    if (!name) continue;
    handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (handle) {
      lib.path = name;
      break;
    }
    tried += detail::concat(tried.empty() ? "" : "; ", name, ": ", loader_message());
  }
  MINIDL_CHECK(handle, "cuda", "cannot load cuBLAS, which CUDA matrix products need (", tried,
               "); install the CUDA toolkit's cuBLAS or add its folder to LD_LIBRARY_PATH");
  // Kept open for the life of the process (never dlclose'd: handles created from it may outlive any
  // owner we could give it).
  std::string missing;
#define MINIDL_CUBLAS_RESOLVE(name, type)                                          \
  lib.name = reinterpret_cast<decltype(lib.name)>(dlsym(handle, #name));      \
  if (!lib.name) missing += detail::concat(missing.empty() ? "" : ", ", #name);
  MINIDL_CUBLAS_FUNCTIONS(MINIDL_CUBLAS_RESOLVE)
#undef MINIDL_CUBLAS_RESOLVE
  if (!missing.empty()) {
    dlclose(handle);
    MINIDL_FAIL("cuda", lib.path, " lacks ", missing, " (a cuBLAS older than the headers minidl was built with, ",
                 CUBLAS_VER_MAJOR, ".", CUBLAS_VER_MINOR, "?)");
  }
  return lib;
}
}  // namespace

const CublasLibrary& cublas() {
  static std::mutex mutex;
  static CublasLibrary library;
  static std::atomic<bool> ready{false};
  if (ready.load(std::memory_order_acquire)) return library;
  std::lock_guard<std::mutex> lock(mutex);
  if (!ready.load(std::memory_order_relaxed)) {
    library = open_library();
    ready.store(true, std::memory_order_release);
  }
  return library;
}

bool cublas_loaded() {
  void* h = dlopen(kSoname, RTLD_NOW | RTLD_NOLOAD);
  if (!h && kBuildPath) h = dlopen(kBuildPath, RTLD_NOW | RTLD_NOLOAD);
  if (h) dlclose(h);  // RTLD_NOLOAD still counts a reference
  return h != nullptr;
}

}  // namespace minidl::kernels::cuda
