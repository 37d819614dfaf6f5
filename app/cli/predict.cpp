// `kiln predict`: the trained model of a run directory applied to new inputs (images, a folder of
// images, or a CSV table of features), preprocessed as the run's data were (predict_input.h); one
// CSV row per input with the predicted class and its probability (softmax of the logits).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "app/cli/args.h"
#include "engine/data/class_filter.h"
#include "app/cli/commands.h"
#include "app/cli/device_list.h"
#include "app/cli/datasets.h"
#include "app/cli/image_data.h"
#include "app/cli/predict_input.h"
#include "app/cli/run_data.h"
#include "app/cli/run_model.h"
#include "app/cli/table_data.h"
#include "app/cli/text_run.h"
#include "app/cli/train_loop.h"
#include "engine/core/error.h"
#include "engine/core/grad_mode.h"
#include "engine/core/ops.h"
#include "engine/core/plural.h"
#include "engine/core/registry.h"
#include "engine/io/atomic_file.h"
#include "engine/io/safetensors.h"

namespace kiln::cli {

namespace {

namespace fs = std::filesystem;

ArgParser predict_parser() {
  ArgParser p("predict",
              "Applies the model of a `kiln train` run to new inputs, preprocessed as its data were, and\n"
              "writes one CSV row per input: input, class, probability (and the next classes with --top-k).");
  p.flag("run", "DIR", "", "the run directory (`kiln train --out DIR`: model.safetensors and its run files)")
      .flag("input", "PATH", "", "an image, a folder of images (recursively, sorted by path), or for a run trained\n"
                                 "on a table a CSV file of its feature columns (the label column optional); for a run\n"
                                 "trained on text a .txt file, a folder of them (recursively), or a CSV/TSV/JSON-lines\n"
                                 "file with the run's text column (one prediction per row), tokenized with the\n"
                                 "run's tokenizer.json; texts longer than its max length are truncated, as at training")
      .flag("skip-rows", "N", "", "a run trained on a table: lines of the CSV file to skip before its header or\n"
                                  "data (default: the training table's --skip-rows, said on standard error;\n"
                                  "0 for a file without the count line of scikit-learn's tables)")
      .flag("out", "FILE", "-", "the predictions CSV (- = standard output)")
      .flag("top-k", "K", "1", "classes per input, most probable first (columns class_2, probability_2 ...)")
      .flag("device", "D", "auto", "device (cpu, cuda:0, vulkan:0 ...; auto = the best, or KILN_DEVICE)")
      .flag("batch-size", "B", "64", "inputs per forward pass")
      .flag("threads", "N", "", "CPU threads (default: all cores, or OMP_NUM_THREADS when set)");
  p.epilog("Columns: input (the file, or FILE:LINE of a table row), label (when known: a table's label column,\n"
           "or the class folder DIR/<class>/ an image is in), class, probability, error (why an input has no\n"
           "prediction: an image that cannot be decoded, a text that is empty or not UTF-8). A regression\n"
           "run writes value instead of class and probability. With labels, the accuracy (or RMSE) goes to standard error with the summary.\n"
           "A table's label column is only echoed: a row whose label is empty or a class the run does not know\n"
           "is predicted as any other (counted wrong in the accuracy unless empty). A category the training\n"
           "data did not have is encoded as none of its column's (as scikit-learn's\n"
           "OneHotEncoder(handle_unknown='ignore')) and said on standard error with its file, line and column.\n"
           "Exit status 1 when no input gave a prediction (the CSV still lists each input's error).\n\n"
           "example: kiln predict --run runs/photos --input new_photos/ --top-k 3 --out predictions.csv\n"
           "         kiln predict --run runs/wine --input more_wine.csv\n"
           "         kiln predict --run runs/spam --input new_mails.jsonl");
  return p;
}

// Whether a label field counts in the accuracy (or RMSE): not empty or a missing-value marker, and a
// number for a regression run.
bool usable_label(const std::string& label, bool regression) {
  if (label.empty() || data::is_missing(label)) return false;
  if (!regression) return true;
  char* end = nullptr;
  const double v = std::strtod(label.c_str(), &end);
  return end != label.c_str() && *end == '\0' && std::isfinite(v);
}

// A CSV field, quoted when it holds a delimiter, quote or line break (RFC 4180).
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

int predict_command(const std::vector<std::string>& argv) {
  ArgParser parser = predict_parser();
  Args args = parser.parse(argv);
  if (args.help()) {
    std::fputs(parser.help().c_str(), stdout);
    return kExitOk;
  }
  if (!args.given("run")) args.fail("--run DIR is required (see kiln predict --help)");
  if (!args.given("input")) args.fail("--input PATH is required (see kiln predict --help)");
  const fs::path run(args.str("run"));
  const std::string input = args.str("input"), out_path = args.str("out");
  const int64_t top_k_wanted = args.integer("top-k", 1);
  const int64_t skip_rows = args.given("skip-rows") ? args.integer("skip-rows", 0) : -1;  // -1: the run's
  const int64_t batch_size = args.integer("batch-size", 1);
  set_threads(args.given("threads") ? static_cast<int>(std::min<int64_t>(args.integer("threads", 1), 4096)) : 0);
  const Device device = device_flag(args);

  std::error_code ec;
  KILN_CHECK(fs::is_directory(run, ec), IoError, run.string(), ": no such run directory");
  const fs::path model_path = run / "model.safetensors";
  KILN_CHECK(fs::is_regular_file(model_path, ec), IoError, run.string(), " holds no model.safetensors: ",
             fs::exists(run / "checkpoint", ec)
                 ? "its training has not finished (continue it with kiln train --out " + run.string() + " --resume)"
                 : std::string("not the directory of a kiln train run (kiln train --out DIR)"));
  const io::SafetensorsFile file = io::load_safetensors(model_path.string());
  const RunData d = run_data(file, run);
  if (args.given("skip-rows") && !d.table)
    args.fail("--skip-rows is for a run trained on a table; " + run.string() + " was trained on " +
              (d.text ? "text" : "images"));
  const int64_t outputs = d.regression ? 1 : static_cast<int64_t>(d.names.size());
  const int64_t k = d.regression ? 1 : std::min(top_k_wanted, outputs);
  std::string model_name;
  const bool idx = !d.table && d.image && d.image->config.kind.empty();
  std::shared_ptr<nn::Module> model =
      load_model(file, model_path.string(), "", model_name, device,
                 d.table ? d.table->second.num_features() : d.class_subset ? 28 * 28 : 0,
                 d.table || !idx || d.class_subset ? outputs : 0, d.table || idx || d.text ? nullptr : &*d.image);
  model->eval();
  NoGradGuard no_grad;

  // The inputs: rows of a table, or image files (decoded batch by batch).
  std::vector<std::string> names_in, labels, errors;
  std::optional<TableInput> table_in;
  std::optional<TextInput> text_in;
  std::vector<ImageInput> images;
  int64_t other_files = 0;
  if (d.text) {
    text_in = read_text_input(input, *d.text, *d.tokenizer);
    names_in = text_in->inputs;
    labels = text_in->labels;
  } else if (d.table) {
    TableConfig config = d.table->first;
    if (skip_rows >= 0) {
      config.csv.skip_rows = skip_rows;
    } else if (config.csv.skip_rows > 0) {  // said, as a file without the count line loses its header to it
      const auto n = static_cast<long long>(config.csv.skip_rows);
      std::fprintf(stderr, "note: skipped the first %lld line(s) of %s as the training table's --skip-rows %lld "
                           "(--skip-rows 0 reads every line)\n", n, input.c_str(), n);
    }
    table_in = read_table_input(input, config, d.table->second);
    names_in = table_in->inputs;
    labels = table_in->labels;
  } else {
    images = list_image_inputs(input, d.names, &other_files);
    for (const ImageInput& im : images) names_in.push_back(im.path), labels.push_back(im.label);
  }
  const int64_t n = static_cast<int64_t>(names_in.size());
  errors.assign(static_cast<size_t>(n), "");
  if (text_in) errors = text_in->errors;  // files that are not usable text (empty, binary, not UTF-8)
  const bool text_rows = text_in && text_in->rows;
  std::vector<std::vector<std::pair<int64_t, float>>> top(static_cast<size_t>(n));  // (class, probability)
  std::vector<double> values(static_cast<size_t>(n), NAN);                           // regression

  for (int64_t start = 0; start < n; start += batch_size) {
    const int64_t end = std::min(n, start + batch_size);
    std::vector<int64_t> rows;  // the inputs of this batch that have a sample
    Tensor x;
    if (table_in) {
      x = table_in->x.slice(0, start, end);
      for (int64_t i = start; i < end; ++i) rows.push_back(i);
    } else if (text_in) {
      for (int64_t i = start; i < end; ++i)
        if (errors[static_cast<size_t>(i)].empty()) rows.push_back(i);
      if (rows.empty()) continue;
      x = index_select(text_in->x, 0, Tensor::from_vector<int64_t>(rows, {static_cast<int64_t>(rows.size())}));
    } else {
      const ImageRun& ir = *d.image;
      const int64_t per = ir.channels * ir.height * ir.width;
      std::vector<float> buf(static_cast<size_t>((end - start) * per));
      for (int64_t i = start; i < end; ++i) {
        try {
          read_image_input(names_in[static_cast<size_t>(i)], ir, buf.data() + rows.size() * per);
          rows.push_back(i);
        } catch (const IoError& e) {
          errors[static_cast<size_t>(i)] = e.what();
        }
      }
      if (rows.empty()) continue;
      buf.resize(rows.size() * static_cast<size_t>(per));
      x = Tensor::from_vector(buf, {static_cast<int64_t>(rows.size()), ir.channels, ir.height, ir.width});
    }
    Tensor y = model->forward(x.to(device));
    KILN_CHECK(y.dim() == 2 && y.size(0) == static_cast<int64_t>(rows.size()) && y.size(1) == outputs, ShapeError,
               model_path.string(), ": the model's output ", shape_str(y.shape()), " is not [", rows.size(), ", ",
               outputs, "]");
    const std::vector<float> p = (d.regression ? y : softmax(y, 1)).to(Device()).to_vector<float>();
    for (size_t r = 0; r < rows.size(); ++r) {
      const float* row = p.data() + r * static_cast<size_t>(outputs);
      const auto i = static_cast<size_t>(rows[r]);
      if (d.regression) {
        values[i] = row[0];
        continue;
      }
      std::vector<int64_t> order(static_cast<size_t>(outputs));
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return row[a] > row[b]; });
      for (int64_t j = 0; j < k; ++j) {
        const int64_t c = order[static_cast<size_t>(j)];
        top[i].push_back({c, row[c]});
      }
    }
  }

  // The CSV.
  const bool labelled = std::any_of(labels.begin(), labels.end(), [](const std::string& s) { return !s.empty(); });
  std::string text = "input";
  if (labelled) text += ",label";
  if (d.regression) text += ",value";
  else
    for (int64_t j = 0; j < k; ++j)
      text += j == 0 ? ",class,probability"
                     : ",class_" + std::to_string(j + 1) + ",probability_" + std::to_string(j + 1);
  text += ",error\n";
  int64_t predicted = 0, labelled_count = 0, correct = 0, unknown_labels = 0;
  double squared = 0;
  for (int64_t i = 0; i < n; ++i) {
    const auto u = static_cast<size_t>(i);
    text += csv_field(names_in[u]);
    if (labelled) text += "," + csv_field(labels[u]);
    const bool ok = errors[u].empty();
    predicted += ok;
    if (d.regression) {
      text += "," + (ok ? number(values[u]) : "");
      if (ok && usable_label(labels[u], true)) {
        const double diff = values[u] - std::strtod(labels[u].c_str(), nullptr);
        squared += diff * diff, ++labelled_count;
      }
    } else {
      for (int64_t j = 0; j < k; ++j)
        text += ok ? "," + csv_field(d.names[static_cast<size_t>(top[u][static_cast<size_t>(j)].first)]) + "," +
                         number(top[u][static_cast<size_t>(j)].second)
                   : ",,";
      if (ok && usable_label(labels[u], false)) {  // a JSON line may leave its label out
        ++labelled_count;
        correct += d.names[static_cast<size_t>(top[u][0].first)] == labels[u];
        unknown_labels += std::find(d.names.begin(), d.names.end(), labels[u]) == d.names.end();
      }
    }
    text += "," + csv_field(errors[u]) + "\n";
  }
  if (table_in)
    for (const std::string& row : table_in->dropped) {
      text += csv_field(row);
      if (labelled) text += ",";
      text += std::string(d.regression ? 1 : 2 * static_cast<size_t>(k), ',') +
              ",a missing value: the run's missing-value policy drops the row\n";
    }
  if (out_path == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  } else {
    io::AtomicFile out(out_path);
    out.write(text.data(), text.size());
    out.commit();
  }

  // The summary.
  const int64_t skipped = n - predicted + (table_in ? static_cast<int64_t>(table_in->dropped.size()) : 0);
  const char* noun = table_in || text_rows ? "row" : text_in ? "text" : "image";
  const char* skipped_noun = table_in || text_rows ? "row" : "file";
  std::fprintf(stderr, "%s: %lld of %s predicted with %s on %s%s%s\n", input.c_str(),
               static_cast<long long>(predicted), count_of(predicted + skipped, noun).c_str(), model_name.c_str(),
               device.str().c_str(), out_path == "-" ? "" : ", written to ", out_path == "-" ? "" : out_path.c_str());
  if (table_in)
    if (const std::string note = data::unseen_categories_note(*table_in); !note.empty())
      std::fprintf(stderr, "warning: %s\n", note.c_str());
  if (text_in && text_in->truncated > 0)
    std::fprintf(stderr, "  %s longer than the run's max length %lld tokens: the first %lld tokens were used\n",
                 count_of(text_in->truncated, "text").c_str(), static_cast<long long>(d.text->config.max_length),
                 static_cast<long long>(d.text->config.max_length));
  if (other_files > 0)
    std::fprintf(stderr, "  %s left out: not image file names\n", count_of(other_files, "file").c_str());
  if (skipped > 0) {
    std::fprintf(stderr, "  %s skipped:\n", count_of(skipped, skipped_noun).c_str());
    for (int64_t i = 0; i < n; ++i)
      if (const std::string& e = errors[static_cast<size_t>(i)]; !e.empty()) {
        // an image's decoder names its file; a text's reason does not
        const std::string where = text_in && e.rfind(names_in[static_cast<size_t>(i)], 0) != 0
                                      ? names_in[static_cast<size_t>(i)] + ": " : std::string();
        std::fprintf(stderr, "  skipped %s%s\n", where.c_str(), e.c_str());
      }
    if (table_in)
      for (const std::string& row : table_in->dropped)
        std::fprintf(stderr, "  skipped %s: a missing value\n", row.c_str());
  }
  if (labelled_count > 0 && d.regression)
    std::fprintf(stderr, "rmse %.6g on %lld labelled rows\n", std::sqrt(squared / static_cast<double>(labelled_count)),
                 static_cast<long long>(labelled_count));
  else if (labelled_count > 0)
    std::fprintf(stderr, "accuracy %.2f%% (%lld of %s)%s\n",
                 100.0 * static_cast<double>(correct) / static_cast<double>(labelled_count),
                 static_cast<long long>(correct), count_of(labelled_count, "labelled input").c_str(),
                 unknown_labels ? ("; " + count_of(unknown_labels, "label") + " not among the run's classes, counted wrong").c_str() : "");
  // Nothing predicted is a failure (a script must not take an empty CSV for a result); the CSV
  // above still names each input's error.
  KILN_CHECK(predicted > 0, IoError, input, ": no input gave a prediction (", count_of(skipped, skipped_noun),
             " skipped, each named above and in the CSV's error column)");
  return kExitOk;
}

}  // namespace kiln::cli
