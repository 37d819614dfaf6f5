// Storage: a block of device memory owned by a backend, shared by tensor views.
#pragma once
#include <cstddef>
#include <memory>

#include "engine/core/backend.h"

namespace kiln {

class Storage {
 public:
  // Allocates nbytes on `backend` (throws DeviceError when it cannot).
  Storage(Backend* backend, size_t nbytes);
  // Wraps memory that keep_alive owns (host memory of the CPU backend); not freed here.
  Storage(Backend* backend, void* data, size_t nbytes, std::shared_ptr<void> keep_alive);
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
  std::shared_ptr<void> keep_alive_;  // set for wrapped memory
};

}  // namespace kiln
