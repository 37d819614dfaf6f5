// `kiln onnx-suite DIR`: runs the ONNX backend test cases under DIR (engine/onnx/suite.h)
// and prints the failures with their largest error, the unsupported ops (all at once,
// before running), then `passed: P failed: F unsupported: U total: T`, and, on a device
// other than the CPU, one line saying how many nodes ran on the CPU instead (only when any;
// --no-fallback keeps every node on the device, so the counts are the device's own).
// Exit status 1 when any case fails or is unsupported; with --expect FILE it is a regression
// check instead: 1 only when a case named in FILE does not pass (or does not exist).
// Ctrl-C stops after the current case: the summary (of the cases run, saying it was
// interrupted) and --json / --write-passes are still written, and the exit status is 130.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "app/cli/device_list.h"
#include "app/cli/interrupt.h"
#include "engine/core/error.h"
#include "engine/core/registry.h"
#include "engine/onnx/model.h"
#include "engine/onnx/suite.h"

namespace kiln::cli {

namespace {

ArgParser suite_parser() {
  ArgParser p("onnx-suite", "Runs every ONNX backend test case (a folder with model.onnx and test_data_set_*)\n"
                            "under DIR and compares the outputs (rtol 1e-3, atol 1e-7).\n"
                            "Exit status 1 when a case fails or is unsupported; with --expect, only when a\n"
                            "listed case does not pass.");
  p.flag("device", "D", "cpu", "device to run on (cpu, cuda:0, vulkan:0 ...; auto = the best)")
      .flag("json", "FILE", "", "also write the results as JSON")
      .flag("expect", "FILE", "", "expected passes, one case name a line: any of them failing is an error")
      .flag("write-passes", "FILE", "", "write the names of the passing cases (sorted) to FILE")
      .flag("filter", "TEXT", "", "only cases whose name contains TEXT")
      .toggle("quiet", "print only the unsupported list, regressions and the summary")
      .toggle("no-fallback", "run every node on the device: no CPU fallback for ops or dtypes it lacks");
  p.positional("DIR");
  p.epilog("example: kiln onnx-suite /usr/share/libonnx-testdata/data/node --json node.json");
  return p;
}

std::set<std::string> read_list(const std::string& path, const std::string& flag) {
  std::error_code ec;
  KILN_CHECK(!std::filesystem::is_directory(path, ec), IoError, "--", flag, " ", path, " is a folder, not a list of case names");
  std::ifstream in(path);
  KILN_CHECK(in, IoError, "--", flag, ": cannot open the list of expected passes ", path);
  std::set<std::string> names;
  std::string line;
  while (std::getline(in, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (!line.empty() && line[0] != '#') names.insert(line);
  }
  return names;
}

std::string format_g(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

int onnx_suite_command(const std::vector<std::string>& argv) {
  ArgParser parser = suite_parser();
  Args args = parser.parse(argv);
  const std::string dir = args.positional();
  if (args.help()) {
    std::printf("%s", parser.help().c_str());
    return kExitOk;
  }
  if (dir.empty()) args.fail("needs the folder of test cases: kiln onnx-suite DIR [flags]");
  onnx::SuiteOptions opt;
  opt.device = device_flag(args);
  opt.cpu_fallback = !args.given("no-fallback");
  std::set<std::string> expected;
  if (args.given("expect")) expected = read_list(args.str("expect"), "expect");
  bool quiet = args.given("quiet");

  std::vector<std::string> cases = onnx::find_cases(dir);
  std::string filter = args.str("filter");
  if (!filter.empty())
    std::erase_if(cases, [&](const std::string& c) { return c.find(filter) == std::string::npos; });

  if (cases.empty()) {  // a wrong folder or filter must not look like a clean run
    std::fprintf(stderr, "kiln onnx-suite: no test cases (folders with model.onnx and test_data_set_*) in %s%s\n",
                 dir.c_str(), filter.empty() ? "" : (" matching '" + filter + "'").c_str());
    return kExitError;
  }

  InterruptGuard interrupt_guard;  // Ctrl-C from here on stops after the current case
  // Unsupported ops first, all at once, before anything runs.
  std::vector<std::string> to_run;
  std::vector<onnx::CaseResult> results;
  int unsupported_cases = 0;
  for (const std::string& c : cases) {
    onnx::CaseResult r;
    r.name = std::filesystem::path(c).filename().string();
    try {
      onnx::Model m = onnx::load_model(c + "/model.onnx");
      r.unsupported = onnx::find_unsupported(m);
    } catch (const std::exception& e) {
      r.reason = e.what();  // reported when the case runs
    }
    if (r.unsupported.empty()) {
      to_run.push_back(c);
      continue;
    }
    r.status = onnx::CaseResult::Status::Unsupported;
    std::string list;
    for (const auto& u : r.unsupported) list += (list.empty() ? "" : ", ") + u.str();
    r.reason = "unsupported: " + list;
    std::printf("UNSUPPORTED %s: %s\n", r.name.c_str(), list.c_str());
    ++unsupported_cases;
    results.push_back(r);
  }
  std::fflush(stdout);
  int passed = 0, failed = 0, fallback_cases = 0;
  onnx::FallbackStats fallback;
  size_t ran = 0;
  bool interrupted = false;
  for (const std::string& c : to_run) {
    if ((interrupted = InterruptGuard::interrupted())) break;
    ++ran;
    onnx::CaseResult r = onnx::run_case(c, opt);
    fallback_cases += !r.fallback.empty();
    fallback.merge(r.fallback);
    if (r.status == onnx::CaseResult::Status::Passed) ++passed;
    else if (r.status == onnx::CaseResult::Status::Unsupported) ++unsupported_cases;
    else {
      ++failed;
      if (!quiet || expected.count(r.name))
        std::printf("FAIL %s: %s%s\n", r.name.c_str(), r.reason.c_str(),  // the error only for a numeric mismatch
                    r.max_error > 0 ? (" (largest error " + format_g(r.max_error) + ")").c_str() : "");
    }
    std::fflush(stdout);
    results.push_back(r);
  }
  std::sort(results.begin(), results.end(), [](const auto& a, const auto& b) { return a.name < b.name; });

  int status = kExitOk;
  if (args.given("expect")) {
    std::vector<std::string> regressed, fresh;
    std::set<std::string> seen;
    for (const auto& r : results) {
      seen.insert(r.name);
      bool ok = r.status == onnx::CaseResult::Status::Passed;
      if (expected.count(r.name) && !ok) regressed.push_back(r.name);
      if (!expected.count(r.name) && ok) fresh.push_back(r.name);
    }
    for (const auto& e : expected)
      if (!seen.count(e) && filter.empty() && !interrupted) regressed.push_back(e + " (no such case)");
    for (const auto& n : regressed) std::printf("REGRESSION %s: expected to pass (listed in %s)\n", n.c_str(), args.str("expect").c_str());
    if (!fresh.empty()) {
      std::printf("note: %zu new pass%s; add to %s:", fresh.size(), fresh.size() > 1 ? "es" : "", args.str("expect").c_str());
      for (const auto& n : fresh) std::printf(" %s", n.c_str());
      std::printf("\n");
    }
    if (!regressed.empty()) status = kExitError;
  } else if (failed + unsupported_cases > 0) {
    status = kExitError;  // without a list of expected passes, every case must pass
  }
  if (args.given("write-passes")) {
    std::ofstream out(args.str("write-passes"));
    KILN_CHECK(out, IoError, "--write-passes: cannot write ", args.str("write-passes"));
    for (const auto& r : results)
      if (r.status == onnx::CaseResult::Status::Passed) out << r.name << "\n";
  }
  if (args.given("json")) {
    nlohmann::json j;
    j["passed"] = passed;
    j["failed"] = failed;
    j["unsupported"] = unsupported_cases;
    j["total"] = results.size();
    j["interrupted"] = interrupted;
    if (interrupted) j["not_run"] = to_run.size() - ran;
    j["device"] = opt.device.str();
    j["cpu_fallback"] = opt.cpu_fallback;
    j["cpu_fallback_nodes"] = fallback.nodes;
    j["cases"] = nlohmann::json::array();
    for (const auto& r : results) {
      nlohmann::json c{{"name", r.name}, {"status", onnx::status_name(r.status)}};
      if (!r.reason.empty()) c["reason"] = r.reason;
      if (r.max_error > 0) c["max_error"] = r.max_error;
      if (r.seconds > 0) c["seconds"] = r.seconds;
      if (!r.fallback.empty())
        c["cpu_fallback"] = {{"nodes", r.fallback.nodes}, {"op_types", r.fallback.op_types}, {"reasons", r.fallback.reasons}};
      j["cases"].push_back(c);
    }
    std::ofstream out(args.str("json"));
    KILN_CHECK(out, IoError, "--json: cannot write ", args.str("json"));
    out << j.dump(1) << "\n";
  }
  if (interrupted)
    std::printf("interrupted (Ctrl-C): %zu of %zu cases not run; the summary counts the cases run\n",
                to_run.size() - ran, cases.size());
  std::printf("passed: %d failed: %d unsupported: %d total: %zu\n", passed, failed, unsupported_cases, results.size());
  if (!fallback.empty())
    std::printf("cpu fallback: %s of %d case%s ran on the CPU instead of %s; --no-fallback keeps them there\n",
                fallback.str().c_str(), fallback_cases, fallback_cases == 1 ? "" : "s", opt.device.str().c_str());
  return interrupted ? kExitInterrupted : status;
}

}  // namespace kiln::cli
