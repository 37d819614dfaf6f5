// engine/onnx codegen: the generated C++ names its statements after the ONNX nodes with shapes
// in comments, the weights file holds the initializers, the example outputs are the executor's,
// and what it cannot translate is reported before anything is written. (Building and running the
// generated project against the installed engine is the ctest onnx.codegen.cnn.)
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "engine/data/predict_input.h"
#include "engine/graph/graph_module.h"
#include "engine/graph/json.h"
#include "engine/io/safetensors.h"
#include "engine/onnx/codegen.h"
#include "engine/onnx/codegen_ops.h"
#include "engine/onnx/executor.h"
#include "engine/onnx/export.h"
#include "engine/onnx/suite.h"

namespace fs = std::filesystem;
using namespace kiln;

namespace {

kiln::onnx::Model cnn_model() {
  std::ifstream f(fs::path(KILN_SOURCE_DIR) / "projects" / "templates" / "fashion_mnist_cnn.json");
  std::stringstream ss;
  ss << f.rdbuf();
  graph::Graph g = graph::from_json(ss.str());
  graph::GraphModule gm(g);
  return kiln::onnx::parse_model(kiln::onnx::export_model(g, gm.state_dict()), "");
}

std::string read(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("kiln_codegen_" + std::to_string(::getpid()));
  ~TempDir() { fs::remove_all(path); }
};

}  // namespace

TEST(OnnxCodegen, WritesNamedStatementsWeightsAndExamples) {
  TempDir tmp;
  kiln::onnx::Model m = cnn_model();
  kiln::onnx::CodegenOptions o;
  o.class_name = "SmallCnn";
  std::vector<std::string> files = kiln::onnx::generate_cpp(m, tmp.path.string(), o);
  EXPECT_EQ(files.size(), 7u);
  std::string h = read(tmp.path / "small_cnn.h"), cpp = read(tmp.path / "small_cnn.cpp");
  EXPECT_NE(h.find("class SmallCnn {"), std::string::npos);
  EXPECT_NE(h.find("std::vector<kiln::Tensor> forward(const kiln::Tensor& image) const;"), std::string::npos) << h;
  EXPECT_NE(h.find("kiln::Tensor conv1_weight;  // f32[32, 1, 3, 3]  (initializer \"conv1.weight\")"), std::string::npos) << h;
  EXPECT_NE(cpp.find("// conv1: Conv -> f32[N, 32, 28, 28]\n  kiln::Tensor conv1 = kiln::conv2d(image, conv1_weight, conv1_bias"),
            std::string::npos) << cpp;
  EXPECT_NE(cpp.find("kiln::Tensor flatten = pool2.reshape({-1, 3136});"), std::string::npos) << cpp;
  EXPECT_NE(read(tmp.path / "CMakeLists.txt").find("find_package(Kiln REQUIRED)"), std::string::npos);
  // Weights under the member names, equal to the initializers.
  auto w = io::load_safetensors((tmp.path / "small_cnn_weights.safetensors").string()).tensors;
  std::map<std::string, Tensor> weights(w.begin(), w.end());
  ASSERT_TRUE(weights.count("fc1_weight"));
  EXPECT_EQ(weights["fc1_weight"].to_vector<float>(), m.graph.initializers.at("fc1.weight").to_vector<float>());
  // Example outputs are the executor's on the example inputs (batch 2).
  auto in = io::load_safetensors((tmp.path / "example_inputs.safetensors").string()).tensors;
  auto want = io::load_safetensors((tmp.path / "example_outputs.safetensors").string()).tensors;
  ASSERT_EQ(in.size(), 1u);
  EXPECT_EQ(in[0].second.shape(), (Shape{2, 1, 28, 28}));
  kiln::onnx::Session s(m);
  std::vector<Tensor> got = s.run({{in[0].first, in[0].second}});
  double err = 0;
  ASSERT_EQ(want.size(), 1u);
  EXPECT_EQ(kiln::onnx::compare_tensors(want[0].second, got[0], 0, 0, err), "");
}

TEST(OnnxCodegen, ListsEveryUntranslatedOpBeforeWriting) {
  TempDir tmp;
  kiln::onnx::Model m = cnn_model();
  m.graph.nodes[1].op_type = "CumSum";
  m.graph.nodes[2].op_type = "Hardmax";
  try {
    kiln::onnx::generate_cpp(m, tmp.path.string());
    FAIL() << "no error";
  } catch (const ValueError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("CumSum (node 'relu1')"), std::string::npos) << what;
    EXPECT_NE(what.find("Hardmax (node 'pool1')"), std::string::npos) << what;
  }
  EXPECT_FALSE(fs::exists(tmp.path));
}

// A run's predict program (kiln codegen --run; tests/cli/test_codegen_run.sh builds and runs it):
// the run's images.json and predict.cpp beside the class, a <stem>_predict target; a run whose
// classes do not fit the model's logits is refused before anything is written.
TEST(OnnxCodegen, PredictProgramOfARun) {
  TempDir tmp;
  kiln::onnx::Model m = cnn_model();
  data::ImageRun run = data::idx_image_run({"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"});
  kiln::onnx::CodegenOptions o;
  o.class_name = "SmallCnn";
  o.predict.image = &run;
  o.predict.classes = run.classes;
  std::vector<std::string> files = kiln::onnx::generate_cpp(m, tmp.path.string(), o);
  EXPECT_EQ(files.size(), 9u);
  EXPECT_EQ(data::parse_run_images(read(tmp.path / "images.json"), "images.json").classes, run.classes);
  const std::string predict = read(tmp.path / "predict.cpp");
  EXPECT_NE(predict.find("const SmallCnn model("), std::string::npos) << predict;
  EXPECT_NE(predict.find("kiln::data::read_image_input("), std::string::npos) << predict;
  EXPECT_NE(predict.find("classes{\"a\", \"b\""), std::string::npos) << predict;
  EXPECT_NE(read(tmp.path / "CMakeLists.txt").find("add_executable(small_cnn_predict predict.cpp)"), std::string::npos);
  fs::remove_all(tmp.path);
  run.classes.pop_back();  // 9 classes for 10 logits
  o.predict.classes = run.classes;
  try {
    kiln::onnx::generate_cpp(m, tmp.path.string(), o);
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("not the run's 9 logits"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(tmp.path));
}

TEST(OnnxCodegen, AsymmetricPadsNameTheNode) {
  TempDir tmp;
  kiln::onnx::Model m = cnn_model();
  m.graph.nodes[0].attributes["pads"].ints = {2, 2, 0, 0};
  try {
    kiln::onnx::generate_cpp(m, tmp.path.string());
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("node 'conv1' (Conv): pads {2, 2, 0, 0} are not symmetric"), std::string::npos)
        << e.what();
  }
}

namespace {

// Renames ONNX value `from` to `to` everywhere in the graph.
void rename_value(kiln::onnx::Graph& g, std::string from, const std::string& to) {  // by value: `from` may alias a name it renames
  for (auto& v : g.inputs) if (v.name == from) v.name = to;
  for (auto& v : g.outputs) if (v.name == from) v.name = to;
  for (auto& n : g.nodes) {
    for (auto& s : n.inputs) if (s == from) s = to;
    for (auto& s : n.outputs) if (s == from) s = to;
  }
  auto it = g.initializers.find(from);
  if (it != g.initializers.end()) {
    Tensor t = it->second;
    g.initializers.erase(it);
    g.initializers[to] = t;
  }
}

// The code of a C++ source with comments and string/char literals removed (line splices applied
// first, as the compiler does, so a comment ending in a backslash swallows the next line).
std::string code_only(std::string src) {
  for (size_t p; (p = src.find("\\\n")) != std::string::npos;) src.erase(p, 2);
  std::string out;
  for (size_t i = 0; i < src.size(); ++i) {
    if (src.compare(i, 2, "//") == 0) {
      while (i < src.size() && src[i] != '\n') ++i;
      out += '\n';
    } else if (src.compare(i, 2, "/*") == 0) {
      size_t e = src.find("*/", i + 2);
      i = e == std::string::npos ? src.size() : e + 1;
      out += ' ';
    } else if (src[i] == '"' || src[i] == '\'') {
      char q = src[i];
      for (++i; i < src.size() && src[i] != q; ++i)
        if (src[i] == '\\') ++i;
      out += "\"\"";
    } else {
      out += src[i];
    }
  }
  return out;
}

}  // namespace

TEST(OnnxCodegen, EscapesStringLiteralsAndComments) {
  using kiln::onnx::detail::cpp_comment_text;
  using kiln::onnx::detail::cpp_string_literal;
  EXPECT_EQ(cpp_string_literal("a\"b\\c\n\x01" "9\xc3\xa9"), R"("a\"b\\c\012\0019\303\251")");
  EXPECT_EQ(cpp_comment_text("a\r\nb */ c\\"), "a  b * / c/");
  EXPECT_EQ(cpp_comment_text("x\\\n"), "x/ ");
}

TEST(OnnxCodegen, HostileNamesOnlyAppearEscaped) {
  TempDir tmp;
  kiln::onnx::Model m = cnn_model();
  const std::string out_name = "y\"}; std::system(\"touch /tmp/KILN_PWNED\"); std::vector<std::string> d{\"";
  const std::string in_name = "x\")); std::system(\"touch /tmp/KILN_PWNED_IN\"); ((\"\\";
  rename_value(m.graph, m.graph.outputs[0].name, out_name);
  rename_value(m.graph, m.graph.inputs[0].name, in_name);
  rename_value(m.graph, "conv1.weight", "w\n#include </etc/passwd>\n*/ \"std::system(\\\"x\\\")");
  m.graph.nodes[0].name = "conv1\n#include </etc/passwd>\nint pwned = std::system(\"touch /tmp/KILN_PWNED\");";
  m.graph.nodes[1].name = "relu\\";  // a trailing backslash would splice the statement into the comment
  m.graph.nodes[2].name = "pool1\r/* */ */ std::system(\"x\"); /*";
  m.graph.name = "g\n#include </etc/passwd>";
  kiln::onnx::CodegenOptions o;
  o.class_name = "Hostile";
  std::vector<std::string> files = kiln::onnx::generate_cpp(m, tmp.path.string(), o);
  int sources = 0;
  for (const std::string& f : files) {
    std::string ext = fs::path(f).extension().string();
    if (ext != ".cpp" && ext != ".h") continue;
    ++sources;
    std::string text = read(f);
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      size_t first = line.find_first_not_of(" \t");
      std::string t = first == std::string::npos ? "" : line.substr(first);
      EXPECT_NE(t.rfind("#include </etc", 0), 0u) << f << ": " << line;
      EXPECT_EQ(line.find('\r'), std::string::npos) << f << ": " << line;
    }
    std::string code = code_only(text);
    // (Identifiers made from the names keep their letters, e.g. conv1__include__etc_passwd_...)
    for (const char* bad : {"system(", "std::system", "#include </etc", "/etc/passwd", "/tmp/KILN"})
      EXPECT_EQ(code.find(bad), std::string::npos) << f << " has '" << bad << "' outside comments and literals:\n" << code;
    // Every statement of forward survives (none swallowed by a comment).
    if (fs::path(f).filename() != "hostile.cpp") continue;
    EXPECT_NE(code.find("kiln::Tensor relu_ = kiln::relu("), std::string::npos) << code;
  }
  EXPECT_EQ(sources, 3);
  std::string main_cpp = read(tmp.path / "main.cpp");
  EXPECT_NE(main_cpp.find("names{" + kiln::onnx::detail::cpp_string_literal(out_name) + "}"), std::string::npos) << main_cpp;
  EXPECT_NE(main_cpp.find("in.at(\"x\\\")); std::system(\\\"touch /tmp/KILN_PWNED_IN\\\"); ((\\\"\\\\\")"), std::string::npos)
      << main_cpp;
  // The example files still use the real names.
  auto want = io::load_safetensors((tmp.path / "example_outputs.safetensors").string()).tensors;
  ASSERT_EQ(want.size(), 1u);
  EXPECT_EQ(want[0].first, out_name);
}

TEST(OnnxCodegen, ClassNameMustBeAnIdentifier) {
  kiln::onnx::Model m = cnn_model();
  for (const std::string& name : {std::string("my class"), std::string("int"), std::string("9lives"),
                                  std::string("A\"); std::system(\"x"), std::string("main")}) {
    TempDir tmp;
    kiln::onnx::CodegenOptions o;
    o.class_name = name;
    try {
      kiln::onnx::generate_cpp(m, tmp.path.string(), o);
      ADD_FAILURE() << "no error for " << name;
    } catch (const ValueError& e) {
      std::string what = e.what();
      EXPECT_NE(what.find("class name " + kiln::onnx::detail::cpp_string_literal(name)), std::string::npos) << what;
      EXPECT_NE(what.find("not a C++ identifier"), std::string::npos) << what;
    }
    EXPECT_FALSE(fs::exists(tmp.path)) << name;
  }
  TempDir tmp;
  kiln::onnx::CodegenOptions o;
  o.class_name = "My_Class2";
  EXPECT_NO_THROW(kiln::onnx::generate_cpp(m, tmp.path.string(), o));
}
