// `kiln run model.onnx --input x.npy`: runs an ONNX model on NumPy inputs and writes each
// output as <output name>.npy (for scripts), printing the output names, shapes and dtypes.
// --repeat N then runs it N more times and prints the latency (median and minimum, in ms;
// outputs are read back to the host in each run, so the device has finished). Nodes the
// device lacks an op or dtype for run on the CPU (onnx::SessionOptions), said in one line when
// any did; --no-fallback keeps them on the device (their error is then the run's error). On the
// CPU the activation chains PyTorch exports run fused (onnx::SessionOptions::optimize, said in
// one line); --no-optimize runs the nodes as written.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "app/cli/device_list.h"
#include "engine/core/error.h"
#include "engine/core/registry.h"
#include "engine/onnx/executor.h"
#include "engine/onnx/npy.h"

namespace kiln::cli {

namespace {

// The inputs one --input value gives, each "FILE" or "NAME=FILE": the value itself when it names an
// existing file, else its comma-separated items, where in a NAME=FILE list (its first item has the
// NAME= form) a comma starts a new item only when NAME= follows it; the others belong to the file name.
std::vector<std::string> input_items(const std::string& value) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(value, ec)) return {value};
  std::vector<std::string> items;
  std::stringstream list(value);
  const auto named = [](const std::string& s) { return s.find('=') != std::string::npos && s.find('=') > 0; };
  for (std::string part; std::getline(list, part, ',');) {
    if (!items.empty() && named(items.front()) && !named(part)) items.back() += "," + part;
    else items.push_back(part);
  }
  return items;
}

}  // namespace

int onnx_run_command(const std::vector<std::string>& argv) {
  ArgParser parser("run", "Runs an ONNX model on .npy inputs and writes every output\n"
                          "to OUT-DIR/<output name>.npy.");
  parser.flag("input", "[NAME=]FILE", "", "a .npy file per model input, in the model's input order, or NAME=FILE\n"
                                          "(a unicode string array, dtype <U, feeds a STRING input); one --input\n"
                                          "may list several, comma-separated: x.npy,y.npy or a=x.npy,b=y.npy.\n"
                                          "A file name with a comma: a value naming an existing file is that file,\n"
                                          "and in a NAME=FILE list only a comma before NAME= starts a new input")
      .repeatable()
      .flag("out-dir", "DIR", ".", "folder for the outputs' .npy files")
      .flag("device", "D", "auto", "device (cpu, cuda:0, vulkan:0 ...; auto = the best, or KILN_DEVICE)")
      .flag("repeat", "N", "0", "then time N more runs and print the latency (median, min in ms)")
      .toggle("no-cuda-graph", "on a CUDA device, run every node eagerly instead of recording the second run of each "
                               "input shape set as a CUDA graph and replaying it (also KILN_CUDA_GRAPH=0)")
      .toggle("no-fallback", "run every node on the device: no CPU fallback for ops or dtypes it lacks")
      .toggle("no-optimize", "on the CPU, run the nodes as written: no load-time fusion of activation chains "
                             "(x * sigmoid(x), the erf form of GELU) into one kernel each");
  parser.epilog("example: kiln run model.onnx --input x.npy --out-dir results\n"
                "         kiln run --device cpu model.onnx --input ids=ids.npy --input mask=mask.npy");
  parser.positional("MODEL.onnx");
  Args args = parser.parse(argv);
  const std::string path = args.positional();
  if (args.help()) {
    std::printf("%s", parser.help().c_str());
    return kExitOk;
  }
  if (path.empty()) args.fail("needs a model: kiln run MODEL.onnx --input x.npy");
  Device device = device_flag(args);
  onnx::SessionOptions session_options;
  session_options.cpu_fallback = !args.given("no-fallback");
  session_options.cuda_graph = !args.given("no-cuda-graph");
  session_options.optimize = !args.given("no-optimize");
  onnx::Session session(onnx::load_model(path), device, session_options);
  if (int64_t fused = std::count_if(session.rewrite_log().begin(), session.rewrite_log().end(),
                                    [](const std::string& l) { return l.find("->") != std::string::npos; }))
    std::printf("graph optimizations: %lld fusions (--no-optimize runs the nodes as written)\n",
                static_cast<long long>(fused));
  // the shape arithmetic folded; a QDQ model's layers and residual adds: int8 or float, and why
  for (const std::string& line : session.rewrite_log())
    if (line.rfind("FoldShapeSubgraphs: ", 0) == 0 || line.rfind("FuseQdq: ", 0) == 0 ||
        line.rfind("FuseQLinear: ", 0) == 0 || line.rfind("FuseAddQuantize: ", 0) == 0)
      std::printf("%s\n", line.c_str());
  std::vector<std::string> names = session.input_names();
  std::map<std::string, Tensor> feed;
  std::map<std::string, onnx::Value> strings;  // STRING inputs ('<U' .npy files): the run goes through run_values
  std::vector<std::string> items;
  for (const std::string& value : args.all("input"))
    for (std::string& item : input_items(value)) items.push_back(std::move(item));
  size_t position = 0;
  for (const std::string& item : items) {
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
    if (feed.count(name) || strings.count(name)) args.fail("input '" + name + "' is given twice");
    if (onnx::npy_holds_strings(file)) strings[name] = onnx::Value::of_strings(onnx::load_npy_strings(file));
    else feed[name] = onnx::load_npy(file);
  }
  int64_t repeat = args.integer("repeat", 0);
  std::error_code ec;  // before running: a folder that cannot be made is the user's to fix first
  std::filesystem::create_directories(args.str("out-dir"), ec);
  std::error_code ec_dir;
  KILN_CHECK(!ec && std::filesystem::is_directory(args.str("out-dir"), ec_dir), IoError,
             "--out-dir: cannot create the folder ", args.str("out-dir"),
             ec ? ": " + ec.message() : std::string(" (a file of that name exists)"));
  std::vector<Tensor> out;
  if (strings.empty()) {
    out = session.run(feed);
  } else {
    KILN_CHECK(args.integer("repeat", 0) == 0, ValueError, "--repeat times numeric inputs only");
    std::map<std::string, onnx::Value> values = strings;
    for (const auto& [name, t] : feed) values[name] = t;
    for (const onnx::Value& v : session.run_values(values)) {
      KILN_CHECK(v.tensor.defined(), ValueError, "an output that is not a numeric tensor");
      out.push_back(v.tensor);
    }
  }
  if (onnx::FallbackStats fb = session.fallback_stats(); !fb.empty())
    std::printf("cpu fallback: %s ran on the CPU instead of %s; --no-fallback keeps them there\n", fb.str().c_str(),
                device.str().c_str());
  if (repeat > 0) {
    std::vector<double> ms;
    for (int64_t r = 0; r < repeat; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      std::vector<Tensor> o = session.run(feed);
      for (const Tensor& t : o) (void)t.to(Device()).contiguous();
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    std::printf("latency: median %.3f ms, min %.3f ms over %lld runs on %s\n", ms[ms.size() / 2], ms.front(),
                static_cast<long long>(repeat), device.str().c_str());
    if (const std::string note = session.cuda_graph_note(); !note.empty()) std::printf("CUDA graph: %s\n", note.c_str());
  }
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
