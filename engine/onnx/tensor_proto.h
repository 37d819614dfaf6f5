// onnx::TensorProto <-> kiln::Tensor. ONNX element types map to Kiln dtypes as
// FLOAT f32, DOUBLE f64, FLOAT16 f16, BFLOAT16 bf16, INT64 i64, INT32 i32, INT8 i8, UINT8 u8,
// BOOL bool; INT16, UINT16, UINT32, UINT64, STRING and complex types have no Kiln dtype and
// throw DTypeError naming the tensor. Values come from raw_data (little-endian) or the typed
// fields (float_data, int32_data, int64_data, double_data) as onnx.proto specifies.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/tensor.h"

namespace onnx {
class TensorProto;
}

namespace kiln::onnx {

// ONNX element type (onnx::TensorProto::DataType) of a dtype, and back.
int32_t onnx_type_of(DType dtype);
DType dtype_of_onnx(int32_t onnx_type, const std::string& what);  // DTypeError when none
const char* onnx_type_name(int32_t onnx_type);                    // "FLOAT", "UINT16" ...

// base_dir: the model's folder, where external data files must lie ("" refuses external data).
Tensor tensor_from_proto(const ::onnx::TensorProto& proto, const std::string& base_dir);
void tensor_to_proto(const Tensor& tensor, ::onnx::TensorProto& proto);  // raw_data, on any device

// A serialized TensorProto file (test_data_set_*/input_0.pb); IoError when unreadable.
Tensor load_tensor_file(const std::string& path);
// A serialized onnx::SequenceProto of tensors (test data of sequence inputs and outputs).
std::vector<Tensor> load_sequence_file(const std::string& path);
void save_tensor_file(const Tensor& tensor, const std::string& path, const std::string& name = "");

}  // namespace kiln::onnx
