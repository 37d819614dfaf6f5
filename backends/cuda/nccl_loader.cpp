// Note [NCCL at run time] (nccl_loader.h).
#include "backends/cuda/nccl_loader.h"

#include <dlfcn.h>

#include "engine/core/error.h"

namespace kiln::cuda {
namespace {

int version_major(int code) { return code >= 10000 ? code / 10000 : code / 1000; }

NcclLibrary load() {
  NcclLibrary lib;
  void* h = nullptr;
  std::string first_error;  // libnccl.so.2's: the fallback's says less (it is a development link)
  for (const char* file : {"libnccl.so.2", "libnccl.so"}) {
    h = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    if (h) {
      lib.file = file;
      break;
    }
    // dlerror() names the file ("libnccl.so.2: cannot open shared object file: ..."), except when
    // an LD_AUDIT library refused the search.
    const char* text = dlerror();
    const std::string e = text ? text : "cannot be loaded";
    if (first_error.empty()) first_error = e.find(file) == std::string::npos ? detail::str_cat(file, ": ", e) : e;
  }
  if (!h) {
    lib.failure = first_error;
    return lib;
  }
  const std::string header = detail::str_cat("NCCL ", nccl_version_name(NCCL_VERSION_CODE));
  auto refuse = [&](std::string why) {
    lib = NcclLibrary{};
    lib.failure = std::move(why);
    dlclose(h);
    return lib;
  };
  lib.ncclGetVersion = reinterpret_cast<decltype(lib.ncclGetVersion)>(dlsym(h, "ncclGetVersion"));
  if (!lib.ncclGetVersion || lib.ncclGetVersion(&lib.version) != ncclSuccess)
    return refuse(detail::str_cat(lib.file, " is not an NCCL library (no working ncclGetVersion)"));
  const std::string have = detail::str_cat(lib.file, " is NCCL ", nccl_version_name(lib.version));
  if (version_major(lib.version) != NCCL_MAJOR)
    return refuse(detail::str_cat(have, ", Kiln was built against ", header, " (nccl.h): another major version"));
#define KILN_NCCL_SYMBOL(name)                                                                     \
  lib.name = reinterpret_cast<decltype(lib.name)>(dlsym(h, #name));                                \
  if (!lib.name)                                                                                   \
    return refuse(detail::str_cat(have, ", which lacks " #name ": older than Kiln's ", header));
  KILN_NCCL_FUNCTIONS(KILN_NCCL_SYMBOL)
#undef KILN_NCCL_SYMBOL
  return lib;
}

}  // namespace

std::string NcclLibrary::error() const {
  return detail::str_cat("NCCL is not installed or cannot be loaded: ", failure,
                         "; data-parallel training on CUDA needs libnccl.so.2 (NVIDIA's libnccl2 package, or the "
                         "CUDA toolkit's lib64)");
}

const NcclLibrary& nccl_library() {
  static const NcclLibrary lib = load();
  return lib;
}

std::string nccl_version_name(int code) {
  const int rest = code >= 10000 ? code % 10000 : code % 1000;
  return detail::str_cat(version_major(code), ".", rest / 100, ".", rest % 100);
}

}  // namespace kiln::cuda
