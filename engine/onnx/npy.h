// NumPy .npy files (format versions 1.0, 2.0 and 3.0; numpy/lib/format.py) <-> kiln::Tensor,
// for `kiln run` and scripts. dtypes: '<f4' f32, '<f8' f64, '<f2' f16, '<i8' i64, '<i4' i32,
// '|i1' i8, '|u1' u8, '|b1' bool; unicode strings '<U<n>' (load_npy_strings, for STRING inputs). Fortran-ordered arrays are read (transposed into C order);
// big-endian and other dtypes throw DTypeError naming the file and the descr.
#pragma once
#include <string>

#include "engine/core/tensor.h"

namespace kiln::onnx {

struct StringTensor;  // tensor_proto.h

// IoError for a missing, truncated or malformed file (naming the path and what is wrong).
Tensor load_npy(const std::string& path);
// A C-ordered array of numpy dtype '<U<n>' (UTF-32LE code points, NUL-padded to n) as UTF-8
// strings. load_npy's IoErrors; DTypeError naming the file for another dtype or Fortran order.
StringTensor load_npy_strings(const std::string& path);
// Whether the file holds such strings (IoError as load_npy for a file that is not .npy).
bool npy_holds_strings(const std::string& path);
// Writes a C-ordered version 1.0 file (any device; copies to the host). IoError when unwritable.
void save_npy(const Tensor& tensor, const std::string& path);

}  // namespace kiln::onnx
