// `kiln run model.onnx --input x.npy`: runs an ONNX model on NumPy inputs and writes each
// output as <output name>.npy (for scripts), printing the output names, shapes and dtypes.
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "engine/core/error.h"
#include "engine/core/registry.h"
#include "engine/onnx/executor.h"
#include "engine/onnx/npy.h"

namespace kiln::cli {

int onnx_run_command(const std::vector<std::string>& argv) {
  ArgParser parser("run", "Runs an ONNX model (MODEL.onnx comes first) on .npy inputs and writes every output\n"
                          "to OUT-DIR/<output name>.npy.");
  parser.flag("input", "LIST", "", "comma-separated .npy files, in the model's input order, or NAME=FILE pairs")
      .flag("out-dir", "DIR", ".", "folder for the outputs' .npy files")
      .flag("device", "D", "auto", "device (cpu, cuda:0, vulkan:0 ...; auto = the best, or KILN_DEVICE)");
  parser.epilog("example: kiln run model.onnx --input x.npy --out-dir results");
  std::vector<std::string> rest = argv;
  std::string path;
  if (!rest.empty() && rest[0].rfind("-", 0) != 0) {
    path = rest[0];
    rest.erase(rest.begin());
  }
  Args args = parser.parse(rest);
  if (args.help()) {
    std::printf("%s", parser.help().c_str());
    return kExitOk;
  }
  if (path.empty()) args.fail("needs a model: kiln run MODEL.onnx --input x.npy");
  Device device = resolve_device(args.str("device"));
  onnx::Session session(onnx::load_model(path), device);
  std::vector<std::string> names = session.input_names();
  std::map<std::string, Tensor> feed;
  std::stringstream list(args.str("input"));
  std::string item;
  size_t position = 0;
  while (std::getline(list, item, ',')) {
    if (item.empty()) continue;
    std::string name, file = item;
    if (auto eq = item.find('='); eq != std::string::npos) {
      name = item.substr(0, eq);
      file = item.substr(eq + 1);
    } else {
      if (position >= names.size())
        args.fail("more --input files than the model's " + std::to_string(names.size()) + " inputs");
      name = names[position++];
    }
    if (feed.count(name)) args.fail("input '" + name + "' is given twice");
    feed[name] = onnx::load_npy(file);
  }
  std::vector<Tensor> out = session.run(feed);
  std::filesystem::create_directories(args.str("out-dir"));
  std::vector<std::string> out_names = session.output_names();
  for (size_t i = 0; i < out.size(); ++i) {
    std::string safe = out_names[i];
    for (char& ch : safe)
      if (ch == '/' || ch == '\\' || ch == ':') ch = '_';
    std::string file = (std::filesystem::path(args.str("out-dir")) / (safe + ".npy")).string();
    onnx::save_npy(out[i], file);
    std::printf("%s: %s%s -> %s\n", out_names[i].c_str(), dtype_name(out[i].dtype()), shape_str(out[i].shape()).c_str(),
                file.c_str());
  }
  return kExitOk;
}

}  // namespace kiln::cli
