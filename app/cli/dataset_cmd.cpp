// `kiln dataset inspect PATH`: what Kiln sees in an image folder, an image manifest, a table or a
// text dataset before training on it: samples, classes and counts, image sizes, channels and bit
// depths, every skipped file with its reason (image_data.h), a table's inferred column types and
// missing values (table_data.h), or a text dataset's duplicates, token lengths and vocabulary
// (text_data.h). `kiln dataset import-text` writes the npm text datasets as folders (text_import.cpp).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "app/cli/image_data.h"
#include "app/cli/table_data.h"
#include "app/cli/text_data.h"
#include "engine/core/error.h"

namespace kiln::cli {

namespace {

ArgParser inspect_parser() {
  ArgParser p("dataset inspect",
              "Prints what Kiln sees in a dataset: samples, classes and counts, image sizes, channels,\n"
              "skipped files with the reason; for a table its columns' inferred types and missing values.\n"
              "For text: duplicates dropped, token length histogram, vocabulary, <unk> rate, tokenized samples.\n"
              "PATH: imagefolder:DIR, images:FILE.csv, csv:FILE, text:DIR|FILE (a folder per class of\n"
              ".txt files, a CSV/TSV with text and label columns, or JSON lines), or a bare folder (an\n"
              "image folder) or table file (.csv .tsv .csv.gz).");
  p.flag("workers", "N", "2", "threads that decode the images");
  add_table_flags(p);
  add_text_flags(p);
  p.flag("seed", "N", "0", "text: seed of the train/test split");
  p.flag("samples", "N", "5", "text: tokenized test samples shown");
  p.positional("PATH");
  return p;
}

void print_table(const TableConfig& c) {
  data::TabularOptions o = c.tabular;
  o.missing = data::MissingPolicy::drop;  // report the missing values instead of stopping at the first
  o.test_fraction = 0;
  const data::CsvTable table = data::read_csv(c.path, c.csv);
  const data::TabularData d = data::prepare_tabular(table, o);
  std::printf("%s: %lld rows, %zu columns (delimiter '%s'), label '%s' (%s)\n", c.path.c_str(),
              static_cast<long long>(d.rows), table.columns.size(), table.delimiter == '\t' ? "tab" :
              std::string(1, table.delimiter).c_str(), d.schema.label.c_str(), data::task_name(d.schema.task));
  for (const std::string& n : table.notes) std::printf("  note: %s\n", n.c_str());
  if (d.schema.task == data::Task::classification) {
    std::vector<int64_t> counts(d.schema.classes.size(), 0);  // over every row, dropped ones included
    for (const std::vector<std::string>& row : table.rows) {
      const std::string& v = row[static_cast<size_t>(d.schema.label_index)];
      for (size_t k = 0; k < d.schema.classes.size(); ++k)
        if (d.schema.classes[k] == v) ++counts[k];
    }
    std::printf("  %zu classes:", d.schema.classes.size());
    for (size_t k = 0; k < counts.size(); ++k)
      std::printf(" '%s' (%lld)", d.schema.classes[k].c_str(), static_cast<long long>(counts[k]));
    std::printf("\n");
  }
  for (const data::ColumnInfo& col : d.schema.columns) {
    std::printf("  column %lld '%s': %s, %lld missing", static_cast<long long>(col.index), col.name.c_str(),
                data::column_type_name(col.type), static_cast<long long>(col.missing));
    if (col.type == data::ColumnType::categorical) std::printf(", %zu categories", col.categories.size());
    std::printf("\n");
  }
  std::printf("  %lld features; %lld rows with a missing value (dropped under --missing drop)\n",
              static_cast<long long>(d.schema.num_features()), static_cast<long long>(d.rows_dropped));
}

}  // namespace

int dataset_command(const std::vector<std::string>& argv) {
  if (argv.empty() || argv[0] == "--help" || argv[0] == "-h") {
    std::fputs((inspect_parser().help() + "\nusage: kiln dataset inspect PATH [flags]\n       kiln dataset import-text spamassassin|first-names --from DIR --out DIR\n").c_str(),
               argv.empty() ? stderr : stdout);
    return argv.empty() ? kExitUsage : kExitOk;
  }
  if (argv[0] == "import-text") return import_text_command(std::vector<std::string>(argv.begin() + 1, argv.end()));
  if (argv[0] != "inspect")
    throw UsageError("kiln dataset: unknown subcommand '" + argv[0] + "' (known: inspect, import-text)");
  ArgParser parser = inspect_parser();
  Args args = parser.parse(std::vector<std::string>(argv.begin() + 1, argv.end()));
  const std::string path = args.positional();
  if (args.help()) {
    std::fputs(parser.help().c_str(), stdout);
    return kExitOk;
  }
  if (path.empty()) args.fail("needs a PATH: imagefolder:DIR, images:FILE.csv, csv:FILE, text:DIR|FILE, a folder or a table file");
  std::string dataset = path;
  if (is_text_dataset(dataset)) {
    const TextConfig c = text_config(args, dataset, args.number("test-fraction", 0, 0.99),
                                     static_cast<uint64_t>(args.integer("seed", 0)));
    std::fputs(inspect_text(c, args.integer("samples", 0)).c_str(), stdout);
    return kExitOk;
  }
  for (const char* f : {"tokenizer", "max-length", "vocab-size", "min-freq", "sp-model", "no-lowercase", "text-column",
                        "label-column", "keep-duplicates", "seed", "samples"})
    if (args.given(f)) args.fail(std::string("--") + f + " applies to text:DIR|FILE only");
  if (!is_image_dataset(dataset) && !is_csv_dataset(dataset))
    dataset = (std::filesystem::is_directory(path) ? kImageFolderPrefix : kCsvPrefix) + path;
  if (is_csv_dataset(dataset)) {
    print_table(table_config(args, dataset, 0));
    return kExitOk;
  }
  ImageConfig c;
  const bool folder = dataset.rfind(kImageFolderPrefix, 0) == 0;
  c.kind = folder ? "imagefolder" : "images";
  c.path = dataset.substr(std::string(folder ? kImageFolderPrefix : kImageManifestPrefix).size());
  c.workers = static_cast<int>(std::min<int64_t>(args.integer("workers", 1), 256));
  std::fputs(inspect_images(c).c_str(), stdout);
  return kExitOk;
}

}  // namespace kiln::cli
