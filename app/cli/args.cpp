#include "app/cli/args.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>

namespace kiln::cli {

namespace {

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? sep : "") + items[i];
  return out;
}

}  // namespace

// ---- Args ----

bool Args::given(const std::string& name) const {
  auto it = given_.find(name);
  return it != given_.end() && it->second;
}

const std::string& Args::str(const std::string& name) const {
  static const std::string empty;
  auto it = values_.find(name);
  return it == values_.end() ? empty : it->second;
}

std::vector<std::string> Args::all(const std::string& name) const {
  auto it = all_.find(name);
  return it == all_.end() ? std::vector<std::string>{} : it->second;
}

void Args::fail(const std::string& message) const { throw UsageError("kiln " + command_ + ": " + message); }

int64_t Args::integer(const std::string& name, int64_t min) const {
  const std::string& text = str(name);
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE || v < min) {
    fail("--" + name + " expects an integer" + (min > INT64_MIN ? " >= " + std::to_string(min) : "") + ", got '" +
         text + "'");
  }
  return v;
}

double Args::number(const std::string& name, double min, double max) const {
  const std::string& text = str(name);
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(v) || v < min || v > max) {
    std::ostringstream range;
    range << " in [" << min << ", " << max << "]";
    fail("--" + name + " expects a number" + range.str() + ", got '" + text + "'");
  }
  return v;
}

double Args::positive(const std::string& name, double max) const {
  const std::string& text = str(name);
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(v) || v <= 0 || v > max) {
    std::ostringstream range;
    range << " in (0, " << max << "]";
    fail("--" + name + " expects a number" + range.str() + ", got '" + text + "'");
  }
  return v;
}

// ---- ArgParser ----

ArgParser::ArgParser(std::string command, std::string synopsis)
    : command_(std::move(command)), synopsis_(std::move(synopsis)) {}

ArgParser& ArgParser::flag(const std::string& name, const std::string& metavar, const std::string& default_value,
                           const std::string& help, std::vector<std::string> choices) {
  flags_.push_back({name, metavar, default_value, help, std::move(choices), false});
  return *this;
}

ArgParser& ArgParser::toggle(const std::string& name, const std::string& help) {
  flags_.push_back({name, "", "", help, {}, true});
  return *this;
}

ArgParser& ArgParser::repeatable() {
  flags_.back().is_repeatable = true;
  return *this;
}

ArgParser& ArgParser::positional(const std::string& metavar) {
  positional_ = metavar;
  return *this;
}

ArgParser& ArgParser::epilog(const std::string& text) {
  epilog_ = text;
  return *this;
}

const ArgParser::Flag* ArgParser::find(const std::string& name) const {
  for (const Flag& f : flags_)
    if (f.name == name) return &f;
  return nullptr;
}

Args ArgParser::parse(const std::vector<std::string>& argv) const {
  std::map<std::string, std::string> values;
  std::map<std::string, bool> given;
  std::map<std::string, std::vector<std::string>> all;
  std::string positional;
  for (const Flag& f : flags_) values[f.name] = f.default_value;
  Args failing(command_, {}, {});

  if (std::any_of(argv.begin(), argv.end(), [](const std::string& a) { return a == "--help" || a == "-h"; })) {
    given["help"] = true;
    return Args(command_, values, given);
  }
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    // A positional argument: anywhere among the flags, never a flag's value (those are read below).
    if (!positional_.empty() && !arg.empty() && arg[0] != '-') {
      if (!positional.empty())
        failing.fail("two positional arguments, '" + positional + "' and '" + arg + "'; kiln " + command_ +
                     " takes one " + positional_ + " (see kiln " + command_ + " --help)");
      positional = arg;
      continue;
    }
    if (arg.rfind("--", 0) != 0 || arg.size() == 2)
      failing.fail("unexpected argument '" + arg + "' (see kiln " + command_ + " --help)");
    std::string name = arg.substr(2), value;
    bool inline_value = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      inline_value = true;
    }
    const Flag* f = find(name);
    if (!f) failing.fail("unknown flag --" + name + " (see kiln " + command_ + " --help)");
    if (f->is_toggle) {
      if (inline_value) failing.fail("--" + name + " takes no value");
      if (given[name]) failing.fail("--" + name + " given twice (see kiln " + command_ + " --help)");
      given[name] = true;
      continue;
    }
    if (!inline_value) {
      if (i + 1 >= argv.size()) failing.fail("--" + name + " needs a value (" + f->metavar + ")");
      value = argv[++i];
    }
    if (!f->choices.empty() && std::find(f->choices.begin(), f->choices.end(), value) == f->choices.end())
      failing.fail("--" + name + " must be one of " + join(f->choices, ", ") + "; got '" + value + "'");
    // A folder where a file is expected (and the reverse) is named here, not by a reader's
    // "cannot read" later: FILE... flags refuse an existing directory, DIR flags an existing file.
    std::error_code ec;
    if (f->metavar.rfind("FILE", 0) == 0 && std::filesystem::is_directory(value, ec))
      failing.fail("--" + name + ": '" + value + "' is a directory, not a file");
    if (f->metavar == "DIR" && std::filesystem::exists(value, ec) && !std::filesystem::is_directory(value, ec))
      failing.fail("--" + name + ": '" + value + "' is a file, not a directory");
    // A flag of one value given again would silently drop the first: refused, as both may be meant.
    if (given[name] && !f->is_repeatable)
      failing.fail("--" + name + " given twice ('" + values[name] + "' and '" + value + "'); it takes one value (see kiln " +
                   command_ + " --help)");
    values[name] = value;
    given[name] = true;
    if (f->is_repeatable) all[name].push_back(value);
  }
  return Args(command_, values, given, all, positional);
}

std::string ArgParser::help() const {
  std::ostringstream os;
  os << "usage: kiln " << command_ << (positional_.empty() ? "" : " " + positional_) << " [flags]\n\n"
     << synopsis_ << "\n\nflags:\n";
  std::vector<std::string> lefts;
  size_t width = 0;
  for (const Flag& f : flags_) {
    std::string left = "  --" + f.name;
    if (!f.is_toggle) left += " " + (f.choices.empty() ? f.metavar : join(f.choices, "|"));
    width = std::max(width, left.size());
    lefts.push_back(left);
  }
  width = std::min<size_t>(width, 40);
  for (size_t i = 0; i < flags_.size(); ++i) {
    const Flag& f = flags_[i];
    std::string text = f.help;
    if (!f.is_toggle && !f.default_value.empty()) text += " (default: " + f.default_value + ")";
    if (f.is_repeatable) text += " (repeatable)";
    os << lefts[i];
    if (lefts[i].size() > width) os << "\n" << std::string(width, ' ');
    else os << std::string(width - lefts[i].size(), ' ');
    for (size_t pos = 0; (pos = text.find('\n', pos)) != std::string::npos; pos += width + 3)
      text.insert(pos + 1, std::string(width + 2, ' '));  // continuation lines under the first
    os << "  " << text << "\n";
  }
  os << "  --help" << std::string(width > 8 ? width - 8 : 0, ' ') << "  show this help and exit\n";
  if (!epilog_.empty()) os << "\n" << epilog_ << "\n";
  return os.str();
}

}  // namespace kiln::cli
