// `kiln sweep`: hyper-parameter sweeps over a Kiln Studio project. Each trial is an ordinary
// run of the project, trained by Kiln Studio's training sessions (app/studio/training_session.h:
// the run, its curves, checkpoints and evaluation recorded in the project) so there is one
// trainer of project runs, not two. That code is Qt (QtCore) and `kiln` stays free of Qt
// (DESIGN.md, "Layers"), so the command replaces this process with
// `kiln-studio --headless --sweep ARGS` (execv: the same pid, signals and exit status) found
// beside this binary, else on PATH. Its flags: app/studio/headless_sweep.h.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "app/cli/commands.h"
#include "engine/core/error.h"

namespace kiln::cli {

namespace {

// kiln-studio in the directory of the running kiln (build/bin, /usr/bin), "" when absent.
std::string studio_beside_kiln() {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  const std::filesystem::path studio = self.parent_path() / "kiln-studio";
  return std::filesystem::exists(studio, ec) ? studio.string() : "";
}

}  // namespace

int sweep_command(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"kiln-studio", "--headless", "--sweep"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> c;
  for (std::string& a : argv) c.push_back(a.data());
  c.push_back(nullptr);
  const std::string beside = studio_beside_kiln();
  if (!beside.empty()) execv(beside.c_str(), c.data());
  execvp("kiln-studio", c.data());  // returns only on failure
  throw IoError(std::string("kiln sweep runs its trials with Kiln Studio's training sessions, but kiln-studio could not be ") +
                "started (" + std::strerror(errno) + "); it is built with KILN_STUDIO=ON and installed beside kiln");
}

}  // namespace kiln::cli
