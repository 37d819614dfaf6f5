// `kiln eval`: loads safetensors weights into a reference model, or into the graph a
// `kiln train --graph` run kept (train_graph.h), and reports its loss, accuracy, top-5
// accuracy and confusion matrix on a test set. Ctrl-C stops it between batches (exit 130).
#include <algorithm>
#include <cmath>
#include <optional>
#include <filesystem>
#include <cstdio>
#include <string>
#include <vector>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "app/cli/device_list.h"
#include "engine/data/class_filter.h"
#include "app/cli/datasets.h"
#include "app/cli/image_data.h"
#include "app/cli/interrupt.h"
#include "app/cli/run_model.h"
#include "app/cli/table_data.h"
#include "app/cli/text_run.h"
#include "app/cli/train_graph.h"
#include "app/cli/train_loop.h"
#include "engine/core/error.h"
#include "engine/core/registry.h"
#include "engine/data/dataloader.h"
#include "engine/graph/graph_module.h"
#include "engine/io/safetensors.h"
#include "engine/nn/functional.h"
#include "engine/train/evaluate.h"
#include "engine/train/reference_models.h"

namespace kiln::cli {

namespace {

ArgParser eval_parser() {
  ArgParser p("eval", "Evaluates saved weights (a model.safetensors written by `kiln train`, or PyTorch's\n"
                      "state_dict of the same network) on a dataset's test set.");
  p.flag("model-file", "FILE", "", "safetensors file with the weights (required)")
      .flag("dataset", "NAME", "fashion-mnist", "dataset whose test set to use: fashion-mnist, or csv:FILE for a\n"
                                             "run trained on a table (default: the table.json the run kept); a run\n"
                                             "trained on images is evaluated on the test split its images.json names")
      .flag("model", "NAME", "", "reference model (default: inferred from the file's keys)",
            train::reference_model_names())
      .flag("graph", "FILE", "", "graph JSON the weights belong to (default: the graph.json that a\n"
                                 "`kiln train --graph` run keeps next to its model.safetensors)")
      .flag("device", "D", "auto", "device (cpu, cuda:0, vulkan:0 ...; auto = the best, or KILN_DEVICE)")
      .flag("batch-size", "B", "256", "samples per batch")
      .flag("data-dir", "DIR", "", std::string("dataset directory (default: ") + default_data_dir("fashion-mnist") + ")")
      .flag("threads", "N", "", "CPU threads (default: all cores, or OMP_NUM_THREADS when set)")
      .flag("show-errors", "N", "10", "text: misclassified test texts listed with their tokens");
  p.epilog("Ctrl-C stops the evaluation between batches (exit status 130).\n\n"
           "example: kiln eval --model-file runs/cnn/model.safetensors");
  return p;
}

void print_confusion(const train::ClassificationMetrics& m, const std::vector<std::string>& names) {
  const int64_t c = m.num_classes();
  int name_w = 0;
  for (const std::string& n : names) name_w = std::max(name_w, static_cast<int>(n.size()));
  std::printf("\nconfusion matrix (rows: true class, columns: predicted class)\n%*s", name_w + 4, "");
  for (int64_t p = 0; p < c; ++p) std::printf(" %6lld", static_cast<long long>(p));
  std::printf("  recall\n");
  for (int64_t t = 0; t < c; ++t) {
    std::printf("%2lld  %-*s", static_cast<long long>(t), name_w,
                t < static_cast<int64_t>(names.size()) ? names[static_cast<size_t>(t)].c_str() : "");
    int64_t row = 0;
    for (int64_t p = 0; p < c; ++p) {
      int64_t v = m.confusion()[static_cast<size_t>(t * c + p)];
      row += v;
      std::printf(" %6lld", static_cast<long long>(v));
    }
    int64_t hit = m.confusion()[static_cast<size_t>(t * c + t)];
    if (row > 0) std::printf("  %5.1f%%\n", 100.0 * static_cast<double>(hit) / static_cast<double>(row));
    else std::printf("      -\n");
  }
}

}  // namespace

int eval_command(const std::vector<std::string>& argv) {
  ArgParser parser = eval_parser();
  Args args = parser.parse(argv);
  if (args.help()) {
    std::fputs(parser.help().c_str(), stdout);
    return kExitOk;
  }
  if (!args.given("model-file")) args.fail("--model-file FILE is required (see kiln eval --help)");
  if (args.given("graph") && args.given("model")) args.fail("--graph and --model are exclusive (the graph is the model)");
  const std::string path = args.str("model-file");
  const std::string dataset = args.str("dataset");
  std::string model_name = args.str("model");
  const int64_t batch_size = args.integer("batch-size", 1);
  const bool csv = is_csv_dataset(dataset);
  const bool text_dataset = is_text_dataset(dataset);
  if (!csv && !text_dataset && std::find(dataset_names().begin(), dataset_names().end(), dataset) == dataset_names().end())
    args.fail("unknown dataset '" + dataset + "'; known: fashion-mnist, csv:FILE");
  if ((csv || text_dataset) && args.given("data-dir")) args.fail("--data-dir applies to fashion-mnist, not csv:FILE");
  const std::string data_dir = args.given("data-dir") ? args.str("data-dir") : csv || text_dataset ? "" : default_data_dir(dataset);
  set_threads(args.given("threads") ? static_cast<int>(std::min<int64_t>(args.integer("threads", 1), 4096)) : 0);

  const Device device = device_flag(args);
  InterruptGuard interrupt_guard;  // Ctrl-C from here on ends with a message, not a kill
  KILN_CHECK(!std::filesystem::is_directory(path), IoError, path, " is a directory, not a safetensors file");
  io::SafetensorsFile file = io::load_safetensors(path);

  // A run trained on a table kept how it read and split it (table.json): the same test split,
  // with the standardization fitted on its training split.
  std::optional<std::pair<TableConfig, data::TabularSchema>> table;
  if (auto it = file.metadata.find(kTableMetadataKey); it != file.metadata.end())
    table = load_run_table((std::filesystem::path(path).parent_path() / it->second).string());
  KILN_CHECK(!csv || table, ValueError, path, " was not trained on a table (its metadata names no ", kRunTableFile,
             "); --dataset csv:FILE evaluates runs of `kiln train --dataset csv:FILE`");
  std::optional<ImageRun> image;
  if (auto it = file.metadata.find(kImagesMetadataKey); it != file.metadata.end())
    image = load_run_images((std::filesystem::path(path).parent_path() / it->second).string());
  KILN_CHECK(!image || !args.given("dataset"), ValueError, path, " was trained on images (",
             image ? image->config.path : "", "); evaluate it without --dataset (its ", kRunImagesFile,
             " names the data)");
  KILN_CHECK(!table || csv || !args.given("dataset"), ValueError, path, " was trained on a table (",
             table ? table->first.path : "", "); evaluate it with --dataset csv:FILE or without --dataset");
  // A run trained on text kept how it read and split it (text.json) and its tokenizer.
  std::optional<TextRun> text_run;
  std::optional<TextData> text;
  if (auto it = file.metadata.find(kTextMetadataKey); it != file.metadata.end())
    text_run = load_run_text((std::filesystem::path(path).parent_path() / it->second).string());
  KILN_CHECK(!text_dataset || text_run, ValueError, path, " was not trained on text (its metadata names no ",
             kRunTextFile, "); --dataset text:PATH evaluates runs of `kiln train --dataset text:PATH`");
  std::shared_ptr<const data::Dataset> test_set;
  std::vector<std::string> names;
  std::string data_name = dataset;
  bool regression = false;
  bool class_subset = false;  // a run of kiln train --classes
  if (text_run) {
    if (text_dataset) text_run->config.path = dataset.substr(std::string(kTextPrefix).size());
    text = load_text_for_run(std::filesystem::path(path).parent_path().string(), *text_run);
    test_set = text->test;
    names = text_run->classes;
    data_name = kTextPrefix + text_run->config.path;
  } else if (table) {
    if (csv) table->first.path = dataset.substr(std::string(kCsvPrefix).size());
    data_name = kCsvPrefix + table->first.path;
    const data::TabularData d = load_table(table->first, &table->second);
    test_set = std::make_shared<data::TensorDataset>(d.x_test, d.y_test);
    names = d.schema.classes;
    regression = d.schema.task == data::Task::regression;
  } else if (image) {
    ImageData d = load_images(image->config, &*image);
    if (d.run.fingerprint != image->fingerprint)
      std::fprintf(stderr, "kiln: warning: %s changed since the run trained on it (fingerprint %s, was %s)\n",
                   image->config.path.c_str(), d.run.fingerprint.c_str(), image->fingerprint.c_str());
    test_set = d.test;
    names = image->classes;
    data_name = image->config.kind + ":" + image->config.path;
  } else {
    test_set = open_dataset(dataset, data_dir, /*train=*/false);
    names = class_names(dataset);
    if (auto it = file.metadata.find(data::kClassesMetadataKey); it != file.metadata.end()) {
      // a run of `kiln train --classes`: the same classes, relabelled the same way (engine/data/class_filter.h)
      const std::vector<int64_t> kept = data::parse_classes(it->second, static_cast<int64_t>(names.size()));
      test_set = std::make_shared<data::ClassFilter>(test_set, kept);
      std::vector<std::string> kept_names;
      for (int64_t k : kept) kept_names.push_back(names[static_cast<size_t>(k)]);
      names = kept_names;
      class_subset = true;
    }
  }
  const int64_t outputs = regression ? 1 : static_cast<int64_t>(names.size());
  std::shared_ptr<nn::Module> model =
      load_model(file, path, args.str("graph"), model_name, device,
                 table          ? table->second.num_features()
                 : class_subset ? test_set->get_batch({0}).input.numel()  // pixels of one image
                                : 0,
                 table || image || class_subset || text ? outputs : 0, image ? &*image : nullptr);
  if (auto* g = dynamic_cast<graph::GraphModule*>(model.get()))
    check_graph_fits(g->graph(), data_name, *test_set, outputs);
  KILN_CHECK(test_set->size() > 0, ValueError, data_name, " has no test split (the run used --test-fraction 0)");
  data::DataLoader loader(test_set, batch_size);
  std::fprintf(stderr, "evaluating %s on %lld test %s of %s on %s ...\n", model_name.c_str(),
               static_cast<long long>(test_set->size()), table || text ? "samples" : "images", data_name.c_str(),
               device.str().c_str());
  train::EvaluateOptions options;
  options.num_classes = outputs;
  if (regression) options.loss = [](const Tensor& y, const Tensor& t) { return nn::F::mse_loss(y, t); };
  options.device = device;
  options.should_stop = [] { return InterruptGuard::interrupted(); };
  bool interrupted = InterruptGuard::interrupted();
  train::ClassificationMetrics m(options.num_classes, options.top_k);
  if (!interrupted) {
    train::Evaluation e = train::evaluate(*model, loader, options);
    m = e.metrics;
    interrupted = e.stopped;
  }
  if (interrupted) {
    std::fprintf(stderr, "kiln: evaluation interrupted after %lld of %lld test samples; no results\n",
                 static_cast<long long>(m.count()), static_cast<long long>(test_set->size()));
    return kExitInterrupted;
  }

  std::printf("%s: %s on %s, %lld test %s of %s\n", path.c_str(), model_name.c_str(), device.str().c_str(),
              static_cast<long long>(m.count()), table || text ? "samples" : "images", data_name.c_str());
  if (text)
    std::printf("%lld test texts longer than the max length %lld tokens were truncated to it\n",
                static_cast<long long>(text->test->truncated()), static_cast<long long>(text->config.max_length));
  if (regression) {
    std::printf("mse %.6g  rmse %.6g\n", m.loss(), std::sqrt(m.loss()));
    return kExitOk;
  }
  std::printf("loss %.4f  accuracy %.2f%%  top-%lld accuracy %.2f%%\n", m.loss(), 100 * m.accuracy(),
              static_cast<long long>(m.top_k()), 100 * m.top_k_accuracy());
  print_confusion(m, names);
  if (text) {
    const std::vector<TextMistake> mistakes =
        text_mistakes(*model, *text->test, names, device, args.integer("show-errors", 0));
    std::printf("\nmisclassified test texts (%lld of %lld; first %zu, with the tokens the model saw):\n%s",
                static_cast<long long>(m.count() - m.correct()), static_cast<long long>(m.count()), mistakes.size(),
                format_mistakes(mistakes).c_str());
  }
  return kExitOk;
}

}  // namespace kiln::cli
