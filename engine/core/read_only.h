// Allocations declared read-only: an inference session says its constant weights are not
// written again while they live, so that a backend may keep derived copies of them (the CPU
// backend keeps convolution weights packed in oneDNN's blocked layout: backends/cpu/
// cpu_packed.h) instead of deriving them on every call. The mark goes when the allocation's
// Storage is destroyed (Storage::~Storage calls release_read_only), and the hooks then drop
// every copy derived from it, so memory later allocated at the same address is never taken
// for the old weights. Writing a marked tensor in place is a bug of the caller. Thread-safe.
#pragma once
#include <functional>

namespace kiln {

class Tensor;

// Marks the allocation behind t (which must start it: offset 0; ValueError otherwise, naming
// the offset) as read-only until its storage is destroyed.
void mark_read_only(const Tensor& t);
// Whether `data` is the start of a marked allocation.
bool is_read_only(const void* data);
// Drops the mark of `data`, if any, and runs the hooks on it (Storage::~Storage).
void release_read_only(const void* data);
// Registers `hook`, run with the address of each marked allocation released from now on.
void on_read_only_release(std::function<void(const void*)> hook);

}  // namespace kiln
