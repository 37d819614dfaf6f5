// NCCL loaded at run time, for nccl.cu.
//
// Note [NCCL at run time]: the CUDA plugin is compiled against nccl.h but does not link libnccl,
// so that a machine with CUDA and without NCCL keeps its GPU: only collectives need NCCL, and
// most users train on one GPU. The first use of collectives dlopens libnccl.so.2 (else libnccl.so,
// the development link) with the usual search (LD_LIBRARY_PATH, the plugin's RUNPATH, ld.so's
// cache) and takes every function nccl.cu calls from it. A library of another major version than
// nccl.h's, or one without a function we call (older than our nccl.h), is refused: ncclConfig_t
// and the enums are the header's. Loading never throws; NcclCollectives turns a failure into its
// library() text and a DeviceError naming the device (unique_id(), connect()).
#pragma once

#include <nccl.h>

#include <string>

namespace kiln::cuda {

// Every NCCL function nccl.cu calls; each becomes a member of NcclLibrary with the same name.
#define KILN_NCCL_FUNCTIONS(X)                                                                       \
  X(ncclGetVersion) X(ncclGetUniqueId) X(ncclCommInitRankConfig) X(ncclCommGetAsyncError)            \
  X(ncclCommAbort) X(ncclCommFinalize) X(ncclCommDestroy) X(ncclAllReduce) X(ncclBroadcast)          \
  X(ncclAllGather) X(ncclGetErrorString) X(ncclGetLastError)

// The loaded library: call its functions as lib.ncclAllReduce(...), only when loaded().
struct NcclLibrary {
#define KILN_NCCL_MEMBER(name) decltype(&::name) name = nullptr;
  KILN_NCCL_FUNCTIONS(KILN_NCCL_MEMBER)
#undef KILN_NCCL_MEMBER
  std::string file;     // the name dlopen took: "libnccl.so.2" or "libnccl.so"; empty if neither
  int version = 0;      // its ncclGetVersion code; 0 when it did not load
  std::string failure;  // why it cannot be used (dlerror's text, or both versions); empty when it can

  bool loaded() const { return failure.empty(); }
  // "NCCL is not installed or cannot be loaded: <failure>; data-parallel training on CUDA needs
  // libnccl.so.2 (...)": the text of the DeviceError that NcclCollectives throws, less the device.
  std::string error() const;
};

// Loads NCCL on the first call (thread-safe; the library then stays loaded until exit) and returns
// the same object on every call. Never throws.
const NcclLibrary& nccl_library();

// "2.28.9" of an NCCL_VERSION_CODE: X * 10000 + Y * 100 + Z since 2.9, X * 1000 + Y * 100 + Z before.
std::string nccl_version_name(int code);

}  // namespace kiln::cuda
