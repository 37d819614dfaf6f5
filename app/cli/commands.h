// The commands of `kiln`. Each takes the arguments after its name and returns the
// process exit status; it throws UsageError (args.h) for command-line mistakes and
// kiln::Error for everything the engine reports, which main() turns into messages.
#pragma once
#include <string>
#include <vector>

namespace kiln::cli {

struct Command {
  const char* name;
  const char* summary;  // one line, for `kiln --help`
  int (*run)(const std::vector<std::string>& args);
};

int devices_command(const std::vector<std::string>& args);  // devices.cpp
int train_command(const std::vector<std::string>& args);    // train.cpp
int eval_command(const std::vector<std::string>& args);     // eval.cpp
int predict_command(const std::vector<std::string>& args);  // predict.cpp
int explain_command(const std::vector<std::string>& args);  // explain.cpp
int bench_command(const std::vector<std::string>& args);    // bench.cpp
int analyze_command(const std::vector<std::string>& args);  // analyze.cpp
int quantize_command(const std::vector<std::string>& args); // quantize.cpp
int dataset_command(const std::vector<std::string>& args);  // dataset_cmd.cpp
int sweep_command(const std::vector<std::string>& args);    // sweep.cpp (runs kiln-studio --headless --sweep)
#ifdef KILN_HAVE_ONNX
int onnx_suite_command(const std::vector<std::string>& args);   // onnx_suite.cpp
int onnx_import_command(const std::vector<std::string>& args);  // onnx_import.cpp
int onnx_run_command(const std::vector<std::string>& args);     // onnx_run.cpp
int onnx_export_command(const std::vector<std::string>& args);  // onnx_export.cpp
int onnx_codegen_command(const std::vector<std::string>& args); // onnx_codegen.cpp
#endif

// Exit statuses.
constexpr int kExitOk = 0;
constexpr int kExitError = 1;        // the engine reported an error
constexpr int kExitUsage = 2;        // a mistake on the command line
constexpr int kExitInterrupted = 130;  // 128 + SIGINT, as shells report it

}  // namespace kiln::cli
