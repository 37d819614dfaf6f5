// onnx::TensorProto <-> kiln::Tensor. ONNX element types map to Kiln dtypes as
// FLOAT f32, DOUBLE f64, FLOAT16 f16, BFLOAT16 bf16, INT64 i64, INT32 i32, INT8 i8, UINT8 u8,
// BOOL bool; STRING tensors read into StringTensor; INT16, UINT16, UINT32, UINT64 and complex types have no Kiln dtype and
// throw DTypeError naming the tensor. Values come from raw_data (little-endian) or the typed
// fields (float_data, int32_data, int64_data, double_data) as onnx.proto specifies.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/shape.h"
#include "engine/core/tensor.h"

namespace onnx {
class TensorProto;
}

namespace kiln::onnx {

// A tensor of ONNX element type STRING (Kiln's dtypes are numeric, so strings live on the
// host in their own type): UTF-8 byte strings in row-major order, data.size() == numel(shape).
struct StringTensor {
  Shape shape;
  std::vector<std::string> data;
};

// ONNX element type (onnx::TensorProto::DataType) of a dtype, and back.
int32_t onnx_type_of(DType dtype);
DType dtype_of_onnx(int32_t onnx_type, const std::string& what);  // DTypeError when none
const char* onnx_type_name(int32_t onnx_type);                    // "FLOAT", "UINT16" ...

// A TensorProto of data_type STRING (its string_data); ValueError when the count differs
// from the dims' product or the type is not STRING.
StringTensor strings_from_proto(const ::onnx::TensorProto& proto);
void strings_to_proto(const StringTensor& strings, ::onnx::TensorProto& proto);
// A serialized STRING TensorProto file; IoError when unreadable or not STRING.
StringTensor load_strings_file(const std::string& path);

// base_dir: the model's folder, where external data files must lie ("" refuses external data).
Tensor tensor_from_proto(const ::onnx::TensorProto& proto, const std::string& base_dir);
void tensor_to_proto(const Tensor& tensor, ::onnx::TensorProto& proto);  // raw_data, on any device

// A serialized TensorProto file (test_data_set_*/input_0.pb); IoError when unreadable.
Tensor load_tensor_file(const std::string& path);
// A serialized onnx::SequenceProto of tensors (test data of sequence inputs and outputs).
std::vector<Tensor> load_sequence_file(const std::string& path);
void save_tensor_file(const Tensor& tensor, const std::string& path, const std::string& name = "");

}  // namespace kiln::onnx
