// `kiln codegen MODEL.onnx --out DIR [--class NAME]`: writes the model as readable C++ against the
// installed engine (engine/onnx/codegen.h): a class, its weights as safetensors, a self-checking
// main.cpp and a CMakeLists.txt using find_package(Kiln).
// `kiln codegen --run DIR --out DIR2 [--no-preprocessing]`: the same for a trained run's network
// (app/cli/onnx_run_export.h), plus a predict program applying the run's preprocessing.
#include <cstdio>
#include <string>
#include <vector>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "app/cli/onnx_run_export.h"
#include "engine/core/error.h"
#include "engine/onnx/codegen.h"
#include "engine/onnx/model.h"

namespace kiln::cli {

int onnx_codegen_command(const std::vector<std::string>& argv) {
  ArgParser parser("codegen", "Writes an ONNX model as C++ source with its weights and a\n"
                              "CMakeLists.txt that builds it against the installed engine (find_package(Kiln)).");
  parser.flag("out", "DIR", "", "The folder to write (created when missing; required).");
  parser.flag("class", "NAME", "", "Name of the generated class: a C++ identifier, not a keyword (default: from the graph name).");
  parser.flag("run", "DIR", "", "Instead of MODEL.onnx: the network of a `kiln train` run (image or table), and a\n"
                                "<name>_predict program that reads raw inputs (an image, a folder of images, or a\n"
                                "CSV of the table's columns) with the run's preprocessing (its images.json or\n"
                                "table.json, copied beside) and prints the CSV of `kiln predict`.");
  parser.toggle("no-preprocessing", "With --run: the network alone, no predict program (a text run needs it: its "
                                    "tokenizer is not translated).");
  parser.epilog("example: kiln codegen cnn.onnx --out cnn_cpp && cmake -S cnn_cpp -B cnn_cpp/build && "
                "cmake --build cnn_cpp/build && cnn_cpp/build/<name>_main\n"
                "         kiln codegen --run runs/photos --out photos_cpp --class Photos && cmake -S photos_cpp -B "
                "photos_cpp/build && cmake --build photos_cpp/build && photos_cpp/build/photos_predict new_photos/");
  parser.positional("MODEL.onnx");
  Args args = parser.parse(argv);
  const std::string path = args.positional();
  if (args.help()) {
    std::printf("%s", parser.help().c_str());
    return kExitOk;
  }
  if (path.empty() == !args.given("run")) args.fail("needs a model: kiln codegen MODEL.onnx --out DIR, or --run DIR (not both)");
  if (!args.given("out")) args.fail("needs --out DIR");
  if (args.given("no-preprocessing") && !args.given("run")) args.fail("--no-preprocessing is for --run DIR");
  onnx::CodegenOptions options;
  options.class_name = args.str("class");
  std::vector<std::string> written;
  if (!args.given("run")) {
    written = onnx::generate_cpp(onnx::load_model(path), args.str("out"), options);
  } else {
    const std::string run = args.str("run");
    const bool include = !args.given("no-preprocessing");
    const RunOnnx r = run_onnx(run, false);
    const RunData& d = r.data;
    KILN_CHECK(!(d.text && include), ValueError, run, " is a text run: the generated C++ has no tokenizer yet, so no "
               "predict program; --no-preprocessing generates the network alone (it takes token ids), where codegen "
               "translates its layers (not every text layer yet)");
    if (include) {
      options.predict.image = d.image ? &*d.image : nullptr;
      options.predict.table_config = d.table ? &d.table->first : nullptr;
      options.predict.table = d.table ? &d.table->second : nullptr;
      options.predict.classes = d.names;
      options.predict.regression = d.regression;
    }
    written = onnx::generate_cpp(onnx::parse_model(r.bytes, "", run), args.str("out"), options);
  }
  for (const std::string& f : written) std::printf("wrote %s\n", f.c_str());
  return kExitOk;
}

}  // namespace kiln::cli
