// Command-line flags of one `kiln` command: declared with their defaults and help,
// parsed from argv, printed as the command's --help text.
//
// Every flag takes a value (`--epochs 5` or `--epochs=5`) unless it is a switch
// (`--resume`). A command may declare one positional argument (`kiln run MODEL.onnx`): any
// argument that is neither a flag nor a flag's value, before, between or after the flags. A
// flag declared repeatable may be given more than once (Args::all); any other flag or switch given
// twice is a mistake (the first value would be lost). A mistake on the command
// line (unknown flag, missing or malformed value, a value outside the flag's choices, a second
// positional argument, an existing directory given to a flag whose metavar starts with FILE, an
// existing file given to a DIR flag) throws UsageError; main() prints it as one line and exits
// with status 2.
#pragma once
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace kiln::cli {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The values given on the command line (or the defaults) of one command.
class Args {
 public:
  Args(std::string command, std::map<std::string, std::string> values, std::map<std::string, bool> given,
       std::map<std::string, std::vector<std::string>> all = {}, std::string positional = "")
      : command_(std::move(command)), values_(std::move(values)), given_(std::move(given)), all_(std::move(all)),
        positional_(std::move(positional)) {}

  bool help() const { return given("help"); }
  // Whether the flag (or switch) appeared on the command line.
  bool given(const std::string& name) const;
  // The flag's value (its default when absent; "" for a flag without default).
  const std::string& str(const std::string& name) const;
  // Every value of a repeatable flag, in command-line order (empty when not given).
  std::vector<std::string> all(const std::string& name) const;
  // The positional argument ("" when absent).
  const std::string& positional() const { return positional_; }
  // Parsed values; UsageError ("kiln train: --epochs expects an integer >= 1, got 'x'").
  int64_t integer(const std::string& name, int64_t min = INT64_MIN) const;
  double number(const std::string& name, double min, double max) const;
  // A finite number > 0 and <= max (a learning rate): "--lr expects a number in (0, 1e+06], got '0'".
  double positive(const std::string& name, double max) const;
  // Raises UsageError "kiln <command>: <message>".
  [[noreturn]] void fail(const std::string& message) const;

 private:
  std::string command_;
  std::map<std::string, std::string> values_;
  std::map<std::string, bool> given_;
  std::map<std::string, std::vector<std::string>> all_;
  std::string positional_;
};

class ArgParser {
 public:
  // command: "train"; synopsis: one line describing what it does.
  ArgParser(std::string command, std::string synopsis);

  // A flag with a value. default_value "" means "no default" (help shows `note`
  // instead when given, e.g. "auto = best device"). choices, when not empty, are the
  // only values accepted.
  ArgParser& flag(const std::string& name, const std::string& metavar, const std::string& default_value,
                  const std::string& help, std::vector<std::string> choices = {});
  // A flag without a value (present or not).
  ArgParser& toggle(const std::string& name, const std::string& help);
  // Makes the flag declared last repeatable: each occurrence adds a value (Args::all); str() is
  // the last one.
  ArgParser& repeatable();
  // The command's one positional argument, named `metavar` in the usage line ("MODEL.onnx").
  // Without it a positional argument is a usage error.
  ArgParser& positional(const std::string& metavar);
  // Text printed after the flags in --help (examples, notes).
  ArgParser& epilog(const std::string& text);

  // Parses argv (without the program and command names). `--help`/`-h` anywhere makes
  // Args::help() true and skips all other checks.
  Args parse(const std::vector<std::string>& argv) const;
  // The --help text: usage, synopsis, every flag with its default.
  std::string help() const;

 private:
  struct Flag {
    std::string name, metavar, default_value, help;
    std::vector<std::string> choices;
    bool is_toggle = false;
    bool is_repeatable = false;
  };
  const Flag* find(const std::string& name) const;

  std::string command_, synopsis_, epilog_, positional_;
  std::vector<Flag> flags_;
};

}  // namespace kiln::cli
