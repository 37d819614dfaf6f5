// `kiln`: the headless front end of the engine. Dispatches to one command per file
// (commands.h) and turns every error into one line on stderr (`kiln --version` prints
// KILN_VERSION, CMake's project version):
//   kiln: error: <what the engine said>      exit status 1
//   kiln train: unknown flag --foo ...        exit status 2 (a command-line mistake)
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "app/omp_wait.h"
#include "engine/core/error.h"

namespace kiln::cli {
namespace {

constexpr Command kCommands[] = {
    {"devices", "list the compute devices, their scores and the default one", devices_command},
    {"train", "train a reference model on a dataset, with a live progress bar", train_command},
    {"eval", "evaluate saved weights on a test set (loss, accuracy, confusion matrix)", eval_command},
    {"quantize", "int8 quantization of a trained model (post-training or --qat-epochs); accuracy and size before/after", quantize_command},
    {"predict", "apply a run's model to new images, an image folder or a CSV table; one CSV row each", predict_command},
    {"explain", "why an image model predicted its class: a Grad-CAM or saliency heat map over the image", explain_command},
    {"dataset", "inspect a dataset: samples, classes, image sizes, skipped files, column types, tokens; import-text", dataset_command},
    {"analyze", "per-layer parameters, multiply-adds and memory of a graph, warnings, step time per device", analyze_command},
    {"sweep", "hyper-parameter sweep of a Kiln Studio project (grid/random, median-rule pruning)", sweep_command},
    {"bench", "train and run a reference model on each device; step times, images/s, speedup", bench_command},
#ifdef KILN_HAVE_ONNX
    {"import", "read an ONNX model and print its inputs, outputs, ops and parameter count", onnx_import_command},
    {"onnx-suite", "run the ONNX backend test cases of a folder and compare the outputs", onnx_suite_command},
    {"run", "run an ONNX model on .npy inputs and write its outputs as .npy", onnx_run_command},
    {"export", "write a graph (GRAPH.json), an ONNX model or a trained run with its preprocessing (--run DIR) as ONNX opset 17 and check it", onnx_export_command},
    {"codegen", "write an ONNX model as C++ with its weights and a CMakeLists.txt (find_package(Kiln))", onnx_codegen_command},
#endif
};

void print_help(std::FILE* out) {
  std::fprintf(out,
               "usage: kiln <command> [flags]\n\n"
               "Kiln's deep-learning engine from the command line.\n\ncommands:\n");
  for (const Command& c : kCommands) std::fprintf(out, "  %-9s %s\n", c.name, c.summary);
  std::fprintf(out,
               "\n`kiln <command> --help` lists a command's flags and their defaults; `kiln --version` the version.\n"
               "KILN_DEVICE=cuda:0 (or vulkan:0, cpu, ...) picks the default device. OMP_NUM_THREADS sets the CPU\n"
               "threads; idle ones spin GOMP_SPINCOUNT=1000 times unless GOMP_SPINCOUNT or OMP_WAIT_POLICY is set.\n");
}

int dispatch(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    print_help(stderr);
    return kExitUsage;
  }
  const std::string& name = args[0];
  if (name == "--help" || name == "-h" || name == "help") {
    print_help(stdout);
    return kExitOk;
  }
  if (name == "--version" || name == "-V" || name == "version") {
    std::printf("kiln %s\n", KILN_VERSION);
    return kExitOk;
  }
  for (const Command& c : kCommands)
    if (name == c.name) return c.run(std::vector<std::string>(args.begin() + 1, args.end()));
  throw UsageError("kiln: unknown command '" + name + "' (see kiln --help)");
}

}  // namespace
}  // namespace kiln::cli

int main(int argc, char** argv) {
  using namespace kiln::cli;
  kiln::app::use_short_omp_spin(argv);  // app/omp_wait.h: may execute kiln again with GOMP_SPINCOUNT set
  try {
    return dispatch(argc, argv);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return kExitUsage;
  } catch (const std::exception& e) {  // kiln::Error and everything else the engine throws
    std::fprintf(stderr, "kiln: error: %s\n", e.what());
    return kExitError;
  } catch (...) {
    std::fprintf(stderr, "kiln: error: unknown exception\n");
    return kExitError;
  }
}
