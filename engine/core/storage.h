// Storage: a block of device memory owned by a backend, shared by tensor views.
#pragma once
#include <cstddef>

#include "engine/core/backend.h"

namespace kiln {

class Storage {
 public:
  // Allocates nbytes on `backend` (throws DeviceError when it cannot).
  Storage(Backend* backend, size_t nbytes);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Backend* backend() const { return backend_; }

 private:
  Backend* backend_;
  void* data_;
  size_t nbytes_;
};

}  // namespace kiln
