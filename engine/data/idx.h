// The IDX file format of MNIST and Fashion-MNIST (http://yann.lecun.com/exdb/mnist/):
// a 4-byte magic (0, 0, type code, number of dimensions), the dimensions as
// big-endian u32, then the data in row-major order, big-endian.
#pragma once
#include <string>

#include "engine/core/tensor.h"

namespace kiln::data {

// Reads an IDX file, gzip-compressed or plain (detected from the content).
// Type codes: 0x08 u8 -> u8, 0x09 i8 -> i8, 0x0B i16 -> i32 (Kiln has no i16),
// 0x0C i32 -> i32, 0x0D f32 -> f32, 0x0E f64 -> f64; the shape comes from the header
// (1 to 4 dimensions). Throws IoError naming the path when the file is missing,
// is not IDX ("not an IDX file (magic 0x...)"), is truncated (expected vs actual
// bytes), has data after the end, or is a corrupt gzip stream.
Tensor read_idx(const std::string& path);

// Images and labels of an MNIST-like data set.
struct MnistData {
  Tensor images;  // u8 [N, H, W] (28 x 28 for MNIST), kept as bytes to save memory
  Tensor labels;  // i64 [N], values in [0, 10)
};

// Reads DIR/{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz] (the .gz name first).
// IoError when DIR does not exist ("Fashion-MNIST not found in DIR: install the
// Debian package dataset-fashion-mnist ..."), a file is missing or malformed, the
// images are not 3-d u8 of 28x28, the label count differs from the image count (names both
// files and counts), or a label is >= 10.
MnistData load_mnist_like(const std::string& dir, bool train);

}  // namespace kiln::data
