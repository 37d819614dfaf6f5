// Internal to the CPU backend: packed copies of read-only weights (engine/core/read_only.h).
// An inference session's convolution weights are constants, and oneDNN's kernels read them in
// a blocked layout (OIhw16i16o ...): without this every run reorders every weight again (for a
// ResNet-18, 45 MB of reorders per image). cpu_conv.cpp asks packed_weights() for the reordered
// copy of a read-only weight: made once per (allocation, layouts), dropped when the allocation
// is released (a hook of on_read_only_release), so memory allocated later at the same address
// never gets an old copy. Thread-safe.
#pragma once
#include <oneapi/dnnl/dnnl.hpp>

#include <cstddef>
#include <functional>

namespace kiln::cpu {

// The copy of read-only `data` (laid out as `user`) in layout `inner`, made by `make` (which
// returns a filled memory of desc `inner`) the first time, the same memory afterwards. When
// `data` is not read-only (kiln::is_read_only), make()'s memory is returned and not kept.
dnnl::memory packed_weights(const void* data, const dnnl::memory::desc& user, const dnnl::memory::desc& inner,
                            const std::function<dnnl::memory()>& make);
size_t packed_count();  // packed copies held now (the tests)

}  // namespace kiln::cpu
