#include "engine/onnx/model.h"

#include <fcntl.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <climits>
#include <filesystem>
#include <set>

#include "engine/core/error.h"
#include "engine/onnx/tensor_proto.h"

namespace kiln::onnx {

namespace fs = std::filesystem;

std::string ValueInfo::type_str() const {
  std::string s = elem_type ? onnx_type_name(elem_type) : "?";
  if (is_sequence) s = "seq(" + s;
  if (is_optional) s = "optional(" + s;
  if (!has_shape) return s + (is_sequence ? "[?])" : "[?]") + (is_optional ? ")" : "");
  s += "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += shape[i].known() ? std::to_string(shape[i].value) : (shape[i].param.empty() ? "?" : shape[i].param);
  }
  return s + (is_sequence ? "])" : "]") + (is_optional ? ")" : "");
}

const char* attribute_type_name(Attribute::Type t) {
  switch (t) {
    case Attribute::Type::Undefined: return "UNDEFINED";
    case Attribute::Type::Float: return "FLOAT";
    case Attribute::Type::Int: return "INT";
    case Attribute::Type::String: return "STRING";
    case Attribute::Type::Tensor: return "TENSOR";
    case Attribute::Type::Graph: return "GRAPH";
    case Attribute::Type::Floats: return "FLOATS";
    case Attribute::Type::Ints: return "INTS";
    case Attribute::Type::Strings: return "STRINGS";
    case Attribute::Type::Tensors: return "TENSORS";
    case Attribute::Type::Graphs: return "GRAPHS";
    case Attribute::Type::TypeProto: return "TYPE_PROTO";
  }
  return "?";
}

int64_t Model::opset() const {
  auto it = opsets.find("");
  if (it == opsets.end()) it = opsets.find("ai.onnx");
  KILN_CHECK(it != opsets.end(), ValueError, path.empty() ? "model" : path, ": imports no ai.onnx opset");
  return it->second;
}

int64_t Model::parameter_count() const {
  int64_t n = 0;
  for (const auto& [name, t] : graph.initializers) n += t.numel();
  return n;
}

namespace {

ValueInfo convert_value_info(const ::onnx::ValueInfoProto& v) {
  ValueInfo info;
  info.name = v.name();
  const ::onnx::TypeProto* type = &v.type();
  if (type->has_optional_type()) {
    info.is_optional = true;
    type = &type->optional_type().elem_type();
  }
  if (type->has_sequence_type()) {
    info.is_sequence = true;
    type = &type->sequence_type().elem_type();
  }
  if (type->has_tensor_type()) {
    const auto& tt = type->tensor_type();
    info.elem_type = tt.elem_type();
    if (tt.has_shape()) {
      info.has_shape = true;
      for (const auto& d : tt.shape().dim()) {
        Dim dim;
        if (d.has_dim_value()) dim.value = d.dim_value();
        else if (d.has_dim_param()) dim.param = d.dim_param();
        info.shape.push_back(dim);
      }
    }
  }
  return info;
}

std::shared_ptr<const Graph> convert_graph(const ::onnx::GraphProto& g, const std::string& base_dir);

Attribute convert_attribute(const ::onnx::AttributeProto& a, const std::string& node, const std::string& base_dir) {
  using P = ::onnx::AttributeProto;
  Attribute out;
  out.name = a.name();
  KILN_CHECK(a.ref_attr_name().empty(), ValueError, "node '", node, "': attribute '", a.name(),
             "' refers to a function attribute, which only functions may use");
  P::AttributeType type = a.type();
  if (type == P::UNDEFINED) {  // IR version < 2: infer from the field set
    if (a.has_f()) type = P::FLOAT;
    else if (a.has_i()) type = P::INT;
    else if (a.has_s()) type = P::STRING;
    else if (a.has_t()) type = P::TENSOR;
    else if (a.has_g()) type = P::GRAPH;
    else if (a.floats_size()) type = P::FLOATS;
    else if (a.ints_size()) type = P::INTS;
    else if (a.strings_size()) type = P::STRINGS;
  }
  switch (type) {
    case P::FLOAT: out.type = Attribute::Type::Float; out.f = a.f(); break;
    case P::INT: out.type = Attribute::Type::Int; out.i = a.i(); break;
    case P::STRING: out.type = Attribute::Type::String; out.s = a.s(); break;
    case P::TENSOR:
      out.type = Attribute::Type::Tensor;
      out.t = tensor_from_proto(a.t(), base_dir);
      break;
    case P::GRAPH:
      out.type = Attribute::Type::Graph;
      out.g = convert_graph(a.g(), base_dir);
      break;
    case P::FLOATS:
      out.type = Attribute::Type::Floats;
      out.floats.assign(a.floats().begin(), a.floats().end());
      break;
    case P::INTS:
      out.type = Attribute::Type::Ints;
      out.ints.assign(a.ints().begin(), a.ints().end());
      break;
    case P::STRINGS:
      out.type = Attribute::Type::Strings;
      out.strings.assign(a.strings().begin(), a.strings().end());
      break;
    case P::TENSORS:
      out.type = Attribute::Type::Tensors;
      for (const auto& t : a.tensors()) out.tensors.push_back(tensor_from_proto(t, base_dir));
      break;
    case P::GRAPHS:
      out.type = Attribute::Type::Graphs;
      for (const auto& g : a.graphs()) out.graphs.push_back(convert_graph(g, base_dir));
      break;
    case P::TYPE_PROTO:  // Optional's "type": Kiln's values carry their kind, the proto is not needed
      out.type = Attribute::Type::TypeProto;
      break;
    default:
      throw ValueError("node '" + node + "': attribute '" + a.name() + "' has unsupported type " +
                       P::AttributeType_Name(type));
  }
  return out;
}

std::shared_ptr<const Graph> convert_graph(const ::onnx::GraphProto& g, const std::string& base_dir) {
  auto out = std::make_shared<Graph>();
  out->name = g.name();
  for (const auto& t : g.initializer()) {
    KILN_CHECK(!t.name().empty(), ValueError, "graph '", g.name(), "': an initializer has no name");
    KILN_CHECK(!out->initializers.count(t.name()), ValueError, "graph '", g.name(), "': initializer '", t.name(),
               "' is defined twice");
    out->initializers[t.name()] = tensor_from_proto(t, base_dir);
  }
  KILN_CHECK(g.sparse_initializer_size() == 0, ValueError, "graph '", g.name(),
             "': sparse initializers are not supported");
  for (const auto& v : g.input())
    if (!out->initializers.count(v.name())) out->inputs.push_back(convert_value_info(v));
  for (const auto& v : g.output()) out->outputs.push_back(convert_value_info(v));
  std::set<std::string> names;
  int index = 0;
  for (const auto& n : g.node()) {
    Node node;
    node.op_type = n.op_type();
    node.domain = n.domain() == "ai.onnx" ? "" : n.domain();
    node.name = n.name().empty() ? n.op_type() + "_" + std::to_string(index) : n.name();
    ++index;
    KILN_CHECK(!node.op_type.empty(), ValueError, "node '", node.name, "' has no op_type");
    node.inputs.assign(n.input().begin(), n.input().end());
    node.outputs.assign(n.output().begin(), n.output().end());
    for (const auto& a : n.attribute()) {
      KILN_CHECK(!a.name().empty(), ValueError, "node '", node.name, "' (", node.op_type, "): an attribute has no name");
      KILN_CHECK(!node.attributes.count(a.name()), ValueError, "node '", node.name, "' (", node.op_type,
                 "): attribute '", a.name(), "' is given twice");
      node.attributes[a.name()] = convert_attribute(a, node.name, base_dir);
    }
    out->nodes.push_back(std::move(node));
  }
  return out;
}

Model convert_model(const ::onnx::ModelProto& m, const std::string& base_dir, const std::string& what) {
  Model model;
  model.path = what;
  model.ir_version = m.ir_version();
  model.producer_name = m.producer_name();
  model.producer_version = m.producer_version();
  for (const auto& o : m.opset_import()) model.opsets[o.domain() == "ai.onnx" ? "" : o.domain()] = o.version();
  KILN_CHECK(m.has_graph(), IoError, what, ": the model has no graph (not an ONNX model?)");
  KILN_CHECK(m.functions_size() == 0, ValueError, what, ": model-local functions are not supported (",
             m.functions(0).name(), ")");
  try {
    model.graph = *convert_graph(m.graph(), base_dir);
  } catch (const Error& e) {
    throw ValueError(what + ": " + e.what());
  }
  if (!model.opsets.count("") && model.ir_version > 0 && model.ir_version < 3) model.opsets[""] = 1;
  return model;
}

}  // namespace

Model parse_model(const std::string& bytes, const std::string& base_dir, const std::string& what) {
  ::onnx::ModelProto m;
  KILN_CHECK(bytes.size() < static_cast<size_t>(INT_MAX), IoError, what, ": ", bytes.size(),
             " bytes exceed protobuf's 2 GB message limit; store the weights as external data");
  google::protobuf::io::CodedInputStream coded(reinterpret_cast<const uint8_t*>(bytes.data()),
                                               static_cast<int>(bytes.size()));
  coded.SetTotalBytesLimit(INT_MAX);
  KILN_CHECK(m.ParseFromCodedStream(&coded) && coded.ConsumedEntireMessage(), IoError, what,
             ": not a valid ONNX model (truncated or corrupt protobuf)");
  return convert_model(m, base_dir, what);
}

Model load_model(const std::string& path) {
  std::error_code ec;
  KILN_CHECK(!fs::is_directory(path, ec), IoError, path, " is a directory, not an ONNX model file");
  KILN_CHECK(fs::is_regular_file(path, ec), IoError, "cannot open ", path, ": no such file");
  auto size = fs::file_size(path, ec);
  KILN_CHECK(!ec, IoError, "cannot read ", path, ": ", ec.message());
  KILN_CHECK(size < static_cast<uintmax_t>(INT_MAX), IoError, path, ": ", size,
             " bytes exceed protobuf's 2 GB message limit; such models keep their weights as external data");
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  KILN_CHECK(fd >= 0, IoError, "cannot open ", path);
  ::onnx::ModelProto m;
  bool ok;
  {
    google::protobuf::io::FileInputStream file(fd);
    google::protobuf::io::CodedInputStream coded(&file);
    coded.SetTotalBytesLimit(INT_MAX);  // the default (64 MB in older protobuf) refuses big models
    ok = m.ParseFromCodedStream(&coded) && coded.ConsumedEntireMessage();
  }
  ::close(fd);
  KILN_CHECK(ok, IoError, path, ": not a valid ONNX model (truncated or corrupt protobuf)");
  std::string base = fs::absolute(path).parent_path().string();
  return convert_model(m, base, path);
}

}  // namespace kiln::onnx
