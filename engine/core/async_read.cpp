#include "engine/core/async_read.h"

#include <utility>

#include "engine/core/backend.h"
#include "engine/core/error.h"
#include "engine/core/storage.h"

namespace kiln {

AsyncRead::AsyncRead(const Tensor& t) : shape_(t.shape()), dtype_(t.dtype()) {
  const Tensor c = t.contiguous();
  const size_t element = dtype_size(dtype_);
  const size_t nbytes = static_cast<size_t>(c.numel()) * element;
  ticket_ = c.backend()->read_async(c.impl()->storage->data(), static_cast<size_t>(c.offset()) * element, nbytes);
  backend_ = c.backend();
}

AsyncRead::AsyncRead(AsyncRead&& other) noexcept
    : backend_(std::exchange(other.backend_, nullptr)), ticket_(other.ticket_), shape_(std::move(other.shape_)),
      dtype_(other.dtype_) {}

AsyncRead& AsyncRead::operator=(AsyncRead&& other) noexcept {
  if (this != &other) {
    release();
    backend_ = std::exchange(other.backend_, nullptr);
    ticket_ = other.ticket_;
    shape_ = std::move(other.shape_);
    dtype_ = other.dtype_;
  }
  return *this;
}

AsyncRead::~AsyncRead() { release(); }

void AsyncRead::release() noexcept {
  if (!backend_) return;
  try {
    const Tensor discard = Tensor::empty(shape_, dtype_);
    backend_->read_wait(ticket_, discard.impl()->storage->data());
  } catch (...) {  // a device error here is reported by the next wait on that device
  }
  backend_ = nullptr;
}

Tensor AsyncRead::wait() {
  KILN_CHECK(backend_, ValueError, "AsyncRead::wait: nothing is pending (read already, or never started)");
  Tensor out = Tensor::empty(shape_, dtype_);
  Backend* backend = std::exchange(backend_, nullptr);
  backend->read_wait(ticket_, out.impl()->storage->data());
  return out;
}

}  // namespace kiln
