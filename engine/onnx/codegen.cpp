#include "engine/onnx/codegen.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>

#include "engine/core/error.h"
#include "engine/core/random.h"
#include "engine/io/safetensors.h"
#include "engine/onnx/codegen_ops.h"
#include "engine/onnx/run_export.h"
#include "engine/onnx/executor.h"

namespace kiln::onnx {

namespace fs = std::filesystem;
using detail::CodegenValues;

namespace {

using detail::cpp_comment_text;
using detail::cpp_string_literal;

// Whether <stem>.cpp would be one of the other generated files.
bool file_stem_taken(const std::string& stem) { return stem == "main" || stem == "predict"; }

// Names the generated files use at namespace scope besides the class.
bool reserved_name(const std::string& s) {
  static const std::set<std::string> names{"kiln", "std", "main", "take", "conv_params", "pool_params", "read", "usage"};
  return names.count(s) > 0;
}

std::string identifier(const std::string& raw, std::set<std::string>& taken) {
  std::string s;
  for (char c : raw) s += std::isalnum(static_cast<unsigned char>(c)) || c == '_' ? c : '_';
  size_t first = s.find_first_not_of('_');
  s = first == std::string::npos ? "value" : s.substr(first);
  if (std::isdigit(static_cast<unsigned char>(s[0]))) s = "v" + s;
  if (detail::is_cpp_keyword(s) || reserved_name(s)) s += "_";
  std::string name = s;
  for (int i = 1; taken.count(name); ++i) name = s + "_" + std::to_string(i);
  taken.insert(name);
  return name;
}

std::string class_name_of(const std::string& graph_name) {
  std::string s;
  bool up = true;
  for (char c : graph_name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) {
      up = true;
      continue;
    }
    s += up ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    up = false;
  }
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s = "Model" + s;
  return s;
}

std::string snake(const std::string& cls) {
  std::string s;
  for (size_t i = 0; i < cls.size(); ++i) {
    if (std::isupper(static_cast<unsigned char>(cls[i])) && i) s += '_';
    s += static_cast<char>(std::tolower(static_cast<unsigned char>(cls[i])));
  }
  return s;
}

// Example inputs: batch `batch` for symbolic dims, N(0, 1) floats, integer ids in [0, 2).
std::map<std::string, Tensor> example_feed(const Graph& g, int64_t batch, Generator& gen) {
  std::map<std::string, Tensor> feed;
  for (const ValueInfo& v : g.inputs) {
    KILN_CHECK(v.has_shape && !v.is_sequence, ValueError, "codegen: graph input '", v.name,
               "' needs a tensor type with a shape");
    Shape s;
    for (const Dim& d : v.shape) s.push_back(d.known() ? d.value : batch);
    DType dt = dtype_of_onnx(v.elem_type, "graph input '" + v.name + "'");
    feed[v.name] = is_floating(dt) ? normal(s, 0, 1, dt, {}, &gen) : uniform(s, 0, 2, DType::f32, {}, &gen).to(dt);
  }
  return feed;
}

void write(const fs::path& p, const std::string& text, std::vector<std::string>& written) {
  std::ofstream f(p);
  f << text;
  KILN_CHECK(f.good(), IoError, p.string(), ": cannot write");
  written.push_back(p.string());
}

}  // namespace

std::vector<std::string> generate_cpp(const Model& model, const std::string& dir, const CodegenOptions& options) {
  const Graph& g = model.graph;
  KILN_CHECK(options.class_name.empty() ||
                 (detail::is_cpp_identifier(options.class_name) && !reserved_name(options.class_name)),
             ValueError, "codegen: class name ", cpp_string_literal(options.class_name),
             " is not a C++ identifier (letters, digits and '_', not starting with a digit) or is a keyword or a "
             "name the generated code uses (kiln, std, main, take, conv_params, pool_params, read, usage)");
  KILN_CHECK(!file_stem_taken(snake(options.class_name)), ValueError, "codegen: class name ",
             cpp_string_literal(options.class_name), " would write its code into ", snake(options.class_name),
             ".cpp, a file the generated project has (main.cpp, predict.cpp): choose another");
  std::string bad;
  for (const Node& n : g.nodes)
    if (!n.domain.empty() && n.domain != "ai.onnx") bad += "\n  " + n.op_type + " (node '" + n.name + "', domain " + n.domain + ")";
    else if (!detail::codegen_supports(n.op_type)) bad += "\n  " + n.op_type + " (node '" + n.name + "')";
  const bool preprocessing = std::any_of(g.nodes.begin(), g.nodes.end(), [](const Node& n) {
    return n.name.rfind(kPreprocessPrefix, 0) == 0;
  });
  KILN_CHECK(bad.empty(), ValueError, "codegen: ops it does not translate:", bad,
             preprocessing ? "\nThe model holds a run's preprocessing (kiln export --run); codegen translates the "
                             "network alone: export it with --no-preprocessing, or generate from the run (kiln codegen --run DIR) for a "
                             "program that applies the preprocessing"
                           : "");
  const CodegenPredict& predict = options.predict;
  const bool predicts = predict.image || predict.table;
  KILN_CHECK(!(predict.image && predict.table) && (!predict.table || predict.table_config), ValueError,
             "codegen: a predict program reads images or a table, not both (and a table needs its CSV options)");
  KILN_CHECK(!predicts || (g.inputs.size() == 1 && !g.outputs.empty()), ValueError, "codegen: the predict program "
             "of a run needs a model with one input (the preprocessed batch) and the logits as its first output; "
             "this one has ", g.inputs.size(), " inputs and ", g.outputs.size(), " outputs");
  // Types of every value: run with symbolic dims 1 and 2; dims that differ are the batch N.
  Session session(model);
  CodegenValues v;
  Generator gen(0);
  std::map<std::string, Tensor> examples;
  std::vector<Tensor> example_out;
  for (int64_t batch : {1, 2}) {
    std::map<std::string, Tensor> feed = example_feed(g, batch, gen);
    auto record = [&](const std::string& name, const Tensor& t) {
      graph::TensorType tt{t.dtype(), graph::SymShape(t.shape().begin(), t.shape().end())};
      auto it = v.type.find(name);
      if (batch == 1 || it == v.type.end()) {
        v.type[name] = tt;
        return;
      }
      for (size_t i = 0; i < tt.shape.size() && i < it->second.shape.size(); ++i)
        if (it->second.shape[i] != tt.shape[i]) it->second.shape[i] = graph::kBatch;
    };
    for (const auto& [name, t] : feed) record(name, t);
    for (const auto& [name, t] : g.initializers) record(name, t);
    std::vector<Tensor> out = session.run(feed, [&](const Node& n, const std::vector<Tensor>&, const std::vector<Tensor>& o) {
      for (size_t i = 0; i < n.outputs.size() && i < o.size(); ++i)
        if (!n.outputs[i].empty() && o[i].defined()) record(n.outputs[i], o[i]);
    });
    examples = feed, example_out = out;
  }
  std::string cls = options.class_name.empty() ? class_name_of(g.name.empty() ? "Model" : g.name) : options.class_name;
  if (file_stem_taken(snake(cls))) cls += "Model";  // a graph named "main" or "predict"
  const std::string stem = snake(cls);
  std::set<std::string> taken{cls, "forward", "weights", "take", "conv_params", "pool_params"};
  io::NamedTensors weights;
  std::string members, loads, params, body;
  // Initializers and Constant nodes' values become members loaded from the weights file.
  std::map<std::string, Tensor> constants = g.initializers;
  for (const Node& n : g.nodes)
    if (n.op_type == "Constant") {
      auto it = n.attributes.find("value");
      KILN_CHECK(it != n.attributes.end() && it->second.type == Attribute::Type::Tensor, ValueError, "codegen: node '",
                 n.name, "' (Constant): only the 'value' tensor form is translated");
      constants[n.outputs.at(0)] = it->second.t;
    }
  v.constants = constants;
  for (const auto& [name, t] : constants) {
    std::string id = identifier(name, taken);
    v.ident[name] = id;
    weights.emplace_back(id, t);
    members += "  kiln::Tensor " + id + ";  // " + v.type.at(name).str() + "  (initializer \"" + cpp_comment_text(name) + "\")\n";
    loads += "  " + id + " = take(w, " + cpp_string_literal(id) + ", " + std::to_string(t.dim()) + ");\n";
  }
  std::string sig, doc;
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    std::string id = identifier(g.inputs[i].name, taken);
    v.ident[g.inputs[i].name] = id;
    sig += (i ? ", " : "") + std::string("const kiln::Tensor& ") + id;
    doc += (i ? ", " : "") + id + ": " + cpp_comment_text(v.type.at(g.inputs[i].name).str());
  }
  for (const Node& n : g.nodes) {
    if (n.op_type == "Constant") continue;  // a member
    std::string expr = detail::codegen_expression(n, model.opset(), v);
    std::string id = identifier(n.name.empty() ? n.op_type : n.name, taken);
    v.ident[n.outputs.at(0)] = id;
    body += "  // " + cpp_comment_text(n.name + ": " + n.op_type + " -> " + v.type.at(n.outputs[0]).str()) + "\n";
    body += "  kiln::Tensor " + id + " = " + expr + ";\n";
  }
  std::string outs, out_doc;
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    outs += (i ? ", " : "") + v.ident.at(g.outputs[i].name);
    out_doc += (i ? ", " : "") + cpp_comment_text(g.outputs[i].name + ": " + v.type.at(g.outputs[i].name).str());
  }
  if (predicts) {  // checked before anything is written
    const int64_t logits = predict.regression ? 1 : static_cast<int64_t>(predict.classes.size());
    const graph::TensorType& out = v.type.at(g.outputs[0].name);
    KILN_CHECK(out.shape.size() == 2 && out.shape[1] == logits, ValueError, "codegen: the model's first output '",
               g.outputs[0].name, "' is ", out.str(), ", not the run's ", logits, " logits [N, ", logits, "]");
  }
  fs::create_directories(dir);
  std::vector<std::string> written;
  const fs::path d(dir);
  write(d / (stem + ".h"),
        "// Generated by `kiln codegen` from the ONNX graph \"" + cpp_comment_text(g.name) + "\" (opset " + std::to_string(model.opset()) +
            "). N is the batch dimension.\n#pragma once\n#include <string>\n#include <vector>\n\n"
            "#include \"engine/core/tensor.h\"\n\n"
            "class " + cls + " {\n public:\n"
            "  // Reads the weights (safetensors, keys = member names); kiln::IoError / ValueError when\n"
            "  // the file is unreadable or a tensor is missing or has another rank.\n"
            "  explicit " + cls + "(const std::string& weights_path);\n"
            "  // " + doc + "\n  // -> {" + out_doc + "}\n"
            "  std::vector<kiln::Tensor> forward(" + sig + ") const;\n\n" + members + "};\n",
        written);
  write(d / (stem + ".cpp"),
        "// Generated by `kiln codegen`: one statement per ONNX node, named after the node.\n#include \"" + stem +
            ".h\"\n\n#include <cmath>\n#include <map>\n\n#include \"engine/core/error.h\"\n#include \"engine/core/ops.h\"\n"
            "#include \"engine/io/safetensors.h\"\n#include \"engine/nn/functional.h\"\n\nnamespace {\n\n"
            "kiln::Tensor take(const std::map<std::string, kiln::Tensor>& w, const std::string& name, int64_t rank) {\n"
            "  auto it = w.find(name);\n"
            "  KILN_CHECK(it != w.end(), ValueError, \"weights: tensor '\", name, \"' is missing\");\n"
            "  KILN_CHECK(it->second.dim() == rank, ValueError, \"weights: tensor '\", name, \"' has rank \", it->second.dim());\n"
            "  return it->second;\n}\n\n"
            "[[maybe_unused]] kiln::Conv2dParams conv_params(std::array<int64_t, 2> stride, std::array<int64_t, 2> padding,\n"
            "                                                std::array<int64_t, 2> dilation, int64_t groups) {\n"
            "  kiln::Conv2dParams p;\n  for (int i = 0; i < 2; ++i)\n"
            "    p.stride[i] = stride[i], p.padding[i] = padding[i], p.dilation[i] = dilation[i];\n"
            "  p.groups = groups;\n  return p;\n}\n\n"
            "[[maybe_unused]] kiln::ConvTranspose2dParams conv_transpose_params(\n"
            "    std::array<int64_t, 2> stride, std::array<int64_t, 2> padding, std::array<int64_t, 2> dilation,\n"
            "    int64_t groups, std::array<int64_t, 2> output_padding) {\n"
            "  kiln::ConvTranspose2dParams p;\n"
            "  static_cast<kiln::Conv2dParams&>(p) = conv_params(stride, padding, dilation, groups);\n"
            "  for (int i = 0; i < 2; ++i) p.output_padding[i] = output_padding[i];\n  return p;\n}\n\n"
            "[[maybe_unused]] kiln::Pool2dParams pool_params(std::array<int64_t, 2> kernel, std::array<int64_t, 2> stride,\n"
            "                                                std::array<int64_t, 2> padding, std::array<int64_t, 2> dilation,\n"
            "                                                bool ceil_mode, bool count_include_pad) {\n"
            "  kiln::Pool2dParams p;\n  for (int i = 0; i < 2; ++i)\n"
            "    p.kernel[i] = kernel[i], p.stride[i] = stride[i], p.padding[i] = padding[i], p.dilation[i] = dilation[i];\n"
            "  p.ceil_mode = ceil_mode;\n  p.count_include_pad = count_include_pad;\n  return p;\n}\n\n"
            "}  // namespace\n\n" +
            cls + "::" + cls + "(const std::string& weights_path) {\n"
            "  std::map<std::string, kiln::Tensor> w;\n"
            "  for (auto& [name, t] : kiln::io::load_safetensors(weights_path).tensors) w[name] = t;\n" + loads + "}\n\n"
            "std::vector<kiln::Tensor> " + cls + "::forward(" + sig + ") const {\n" + body + "  return {" + outs + "};\n}\n",
        written);
  std::string feed_args;
  for (size_t i = 0; i < g.inputs.size(); ++i) feed_args += (i ? ", " : "") + std::string("in.at(") + cpp_string_literal(g.inputs[i].name) + ")";
  std::string in_names;
  for (size_t i = 0; i < g.inputs.size(); ++i) in_names += (i ? ", " : "") + cpp_string_literal(g.inputs[i].name);
  std::string out_names;
  for (size_t i = 0; i < g.outputs.size(); ++i) out_names += (i ? ", " : "") + cpp_string_literal(g.outputs[i].name);
  // The body of main's try block, indented once more than main's own statements.
  std::string run_main;
  {
    const std::string text =
      "  const bool check = argc == 1;\n"
      "  " + cls + " model(check ? dir + " + cpp_string_literal("/" + stem + "_weights.safetensors") + " : argv[1]);\n"
      "  const std::string inputs_path = check ? dir + \"/example_inputs.safetensors\" : std::string(argv[2]);\n"
      "  auto in = read(inputs_path);\n"
      "  for (const std::string& input_name : std::vector<std::string>{" + in_names + "})\n"
      "    if (!in.count(input_name)) throw std::runtime_error(inputs_path + \" has no tensor named '\" + input_name + \"' (an input of the model)\");\n"
      "  std::vector<kiln::Tensor> out = model.forward(" + feed_args + ");\n"
      "  const std::vector<std::string> names{" + out_names + "};\n"
      "  if (!check) {\n    kiln::io::NamedTensors o;\n"
      "    for (size_t i = 0; i < out.size(); ++i) o.emplace_back(names[i], out[i]);\n"
      "    kiln::io::save_safetensors(argv[3], o);\n    return 0;\n  }\n"
      "  auto want = read(dir + \"/example_outputs.safetensors\");\n  int bad = 0;\n"
      "  for (size_t i = 0; i < out.size(); ++i) {\n"
      "    std::vector<double> a = out[i].to_vector<double>(), b = want.at(names[i]).to_vector<double>();\n"
      "    double err = 0;\n    bool ok = a.size() == b.size();\n"
      "    for (size_t j = 0; ok && j < a.size(); ++j) {\n"
      "      err = std::fmax(err, std::fabs(a[j] - b[j]));\n"
      "      ok = std::fabs(a[j] - b[j]) <= 1e-5 + 1e-4 * std::fabs(b[j]);\n    }\n"
      "    std::printf(\"output %s: %zu values, max abs error %g: %s\\n\", names[i].c_str(), a.size(), err, ok ? \"ok\" : \"MISMATCH\");\n"
      "    bad += !ok;\n  }\n  return bad ? 1 : 0;\n";
    for (size_t i = 0; i < text.size();) {
      const size_t end = std::min(text.find('\n', i), text.size() - 1);
      run_main += "  " + text.substr(i, end + 1 - i);
      i = end + 1;
    }
  }
  write(d / "main.cpp",
        "// Generated by `kiln codegen`: runs " + cls + " on example_inputs.safetensors and compares with\n"
            "// example_outputs.safetensors (Kiln's ONNX executor; rtol 1e-4, atol 1e-5): exit 1 on a mismatch.\n"
            "// `main WEIGHTS INPUTS OUTPUTS` runs it on other inputs (safetensors by graph input name); other\n"
            "// arguments print the usage (exit 2), unreadable files an error naming them (exit 1).\n"
            "#include <cmath>\n#include <cstdio>\n#include <map>\n#include <stdexcept>\n#include <string>\n#include <vector>\n\n#include \"" + stem + ".h\"\n"
            "#include \"engine/io/safetensors.h\"\n\n"
            "static std::map<std::string, kiln::Tensor> read(const std::string& path) {\n"
            "  std::map<std::string, kiln::Tensor> m;\n"
            "  for (auto& [name, t] : kiln::io::load_safetensors(path).tensors) m[name] = t;\n  return m;\n}\n\n"
            "int main(int argc, char** argv) {\n  const std::string dir = KILN_GENERATED_DIR;\n"
            "  const char* usage =\n"
            "      \"usage: %s                          run on the examples, compare with their outputs (exit 1 on a mismatch)\\n\"\n"
            "      \"       %s WEIGHTS INPUTS OUTPUTS   run on INPUTS (safetensors, a tensor per graph input name), write OUTPUTS\\n\";\n"
            "  if (argc == 2 && (std::string(argv[1]) == \"--help\" || std::string(argv[1]) == \"-h\")) {\n"
            "    std::printf(usage, argv[0], argv[0]);\n    return 0;\n  }\n"
            "  if (argc != 1 && argc != 4) {\n"
            "    std::fprintf(stderr, \"%s: expected no arguments or WEIGHTS INPUTS OUTPUTS, got %d argument(s)\\n\", argv[0], argc - 1);\n"
            "    std::fprintf(stderr, usage, argv[0], argv[0]);\n    return 2;\n  }\n"
            "  try {\n" + run_main +
            "  } catch (const std::exception& e) {  // a missing or malformed file, inputs of the wrong shape\n"
            "    std::fprintf(stderr, \"%s: error: %s\\n\", argv[0], e.what());\n    return 1;\n  }\n}\n",
        written);
  write(d / "CMakeLists.txt",
        "# Generated by `kiln codegen`: builds " + cls + " against the installed engine.\n"
            "cmake_minimum_required(VERSION 3.25)\nproject(" + stem + " LANGUAGES CXX)\nset(CMAKE_CXX_STANDARD 20)\n"
            "find_package(Kiln REQUIRED)\nadd_library(" + stem + " STATIC " + stem + ".cpp)\n"
            "target_link_libraries(" + stem + " PUBLIC Kiln::engine)\n"
            "add_executable(" + stem + "_main main.cpp)\n"
            "target_compile_definitions(" + stem + "_main PRIVATE KILN_GENERATED_DIR=\"${CMAKE_CURRENT_SOURCE_DIR}\")\n"
            "target_link_libraries(" + stem + "_main PRIVATE " + stem + ")\n" +
            (predicts ? "add_executable(" + stem + "_predict predict.cpp)\n"
                        "target_compile_definitions(" + stem + "_predict PRIVATE KILN_GENERATED_DIR=\"${CMAKE_CURRENT_SOURCE_DIR}\")\n"
                        "target_link_libraries(" + stem + "_predict PRIVATE " + stem + ")\n"
                      : std::string()),
        written);
  if (predicts) {
    write(d / (predict.image ? "images.json" : "table.json"),
          predict.image ? data::run_images_json(*predict.image) : data::run_table_json(*predict.table_config, *predict.table),
          written);
    write(d / "predict.cpp", detail::predict_program(cls, stem, predict.image, predict.classes, predict.regression),
          written);
  }
  io::save_safetensors((d / (stem + "_weights.safetensors")).string(), weights);
  written.push_back((d / (stem + "_weights.safetensors")).string());
  io::NamedTensors ex_in(examples.begin(), examples.end()), ex_out;
  for (size_t i = 0; i < g.outputs.size(); ++i) ex_out.emplace_back(g.outputs[i].name, example_out.at(i));
  io::save_safetensors((d / "example_inputs.safetensors").string(), ex_in);
  io::save_safetensors((d / "example_outputs.safetensors").string(), ex_out);
  written.push_back((d / "example_inputs.safetensors").string());
  written.push_back((d / "example_outputs.safetensors").string());
  return written;
}

}  // namespace kiln::onnx
