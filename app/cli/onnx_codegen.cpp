// `kiln codegen MODEL.onnx --out DIR [--class NAME]`: writes the model as readable C++ against the
// installed engine (engine/onnx/codegen.h): a class, its weights as safetensors, a self-checking
// main.cpp and a CMakeLists.txt using find_package(Kiln).
#include <cstdio>
#include <string>
#include <vector>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "engine/onnx/codegen.h"
#include "engine/onnx/model.h"

namespace kiln::cli {

int onnx_codegen_command(const std::vector<std::string>& argv) {
  ArgParser parser("codegen", "Writes an ONNX model as C++ source with its weights and a\n"
                              "CMakeLists.txt that builds it against the installed engine (find_package(Kiln)).");
  parser.flag("out", "DIR", "", "The folder to write (created when missing; required).");
  parser.flag("class", "NAME", "", "Name of the generated class: a C++ identifier, not a keyword (default: from the graph name).");
  parser.epilog("example: kiln codegen cnn.onnx --out cnn_cpp && cmake -S cnn_cpp -B cnn_cpp/build && "
                "cmake --build cnn_cpp/build && cnn_cpp/build/<name>_main");
  parser.positional("MODEL.onnx");
  Args args = parser.parse(argv);
  const std::string path = args.positional();
  if (args.help()) {
    std::printf("%s", parser.help().c_str());
    return kExitOk;
  }
  if (path.empty()) args.fail("needs a model: kiln codegen MODEL.onnx --out DIR");
  if (!args.given("out")) args.fail("needs --out DIR");
  onnx::CodegenOptions options;
  options.class_name = args.str("class");
  for (const std::string& f : onnx::generate_cpp(onnx::load_model(path), args.str("out"), options))
    std::printf("wrote %s\n", f.c_str());
  return kExitOk;
}

}  // namespace kiln::cli
