// safetensors read/write (https://github.com/huggingface/safetensors, the format
// Hugging Face models ship in): an 8-byte little-endian header length N, N bytes
// of JSON {"name": {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]},
// "__metadata__": {str: str}} padded with spaces, then the byte buffer; offsets
// are relative to the buffer, which the tensors cover without gaps or overlap.
#pragma once
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/tensor.h"

namespace kiln::io {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// Writes `tensors` (any device, any strides: each is copied to a contiguous host
// buffer on the way) and string metadata. Kiln dtypes map to F32 F16 BF16 F64 I64
// I32 I16 I8 U64 U32 U16 U8 BOOL. Tensors are laid out as the Python library does (largest
// element size first, then by name), so every tensor is aligned in the file.
// The file is written to a temporary name beside `path` and renamed over it, so
// an existing file is never left half-written. ValueError for a duplicate, empty or
// "__metadata__" name or an undefined tensor; IoError when the file cannot be written.
void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata = {});

struct SafetensorsFile {
  NamedTensors tensors;  // CPU tensors, in file order (by data offset)
  std::map<std::string, std::string> metadata;
};

// Reads a whole safetensors file. IoError naming the file when it is missing, too
// small, its header length exceeds the file or 100 MB, the header is not a JSON
// object of well-formed entries, a dtype is unknown, numel * itemsize differs from
// end - begin, offsets run past the buffer, overlap or leave gaps, or a name repeats.
// DTypeError naming the tensor for a valid safetensors dtype that Kiln lacks (F8_*,
// F6_*, F4, C64).
SafetensorsFile load_safetensors(const std::string& path);

}  // namespace kiln::io
