// Added to every backend plugin by kiln_add_backend_plugin(): the fingerprint of the
// Backend interface this plugin was compiled against (see engine/core/registry.h).
#include "kiln_backend_abi.h"

extern "C" __attribute__((visibility("default"))) const char kiln_backend_abi[] = KILN_BACKEND_ABI;
