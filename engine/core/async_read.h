// AsyncRead: a tensor's values on their way to the host, read without waiting for the work
// enqueued after them (Backend::read_async). The Trainer starts one for a step's loss and
// logits and waits for it after it has enqueued the next step, so the device never idles while
// the host reads (on the CPU, and on backends without a stream, the values are copied at once).
#pragma once
#include <cstdint>

#include "engine/core/tensor.h"

namespace kiln {

class AsyncRead {
 public:
  AsyncRead() = default;
  // Starts copying `t` (any dtype, shape and device; made contiguous on its device first) as
  // it is once the work enqueued so far has run. DeviceError while the device records work.
  explicit AsyncRead(const Tensor& t);
  AsyncRead(AsyncRead&& other) noexcept;
  AsyncRead& operator=(AsyncRead&& other) noexcept;
  AsyncRead(const AsyncRead&) = delete;
  AsyncRead& operator=(const AsyncRead&) = delete;
  ~AsyncRead();  // waits for a copy nobody read (the backend's buffer is released)

  bool pending() const { return backend_ != nullptr; }
  // The values as a CPU tensor of the same shape and dtype; waits for the copy only. Once:
  // ValueError when nothing is pending (default-constructed, or read already).
  Tensor wait();

 private:
  void release() noexcept;
  Backend* backend_ = nullptr;
  int64_t ticket_ = 0;
  Shape shape_;
  DType dtype_ = DType::f32;
};

}  // namespace kiln
