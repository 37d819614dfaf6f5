#include "engine/data/dataset_source.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

#include "engine/core/error.h"
#include "engine/core/plural.h"
#include "engine/data/class_balance.h"

namespace kiln::data {

namespace {

// Takes the validation split of `source` out of d.train (none when d has a val/ folder's).
void take_validation(OpenedDataset& d, const DatasetSource& source, int64_t total) {
  if (d.validation) return;
  TrainValidation tv = split_validation(d.train, source.validation_fraction,
                                        source.validation_of_train ? d.train->size() : total, source.seed);
  d.train = tv.train;
  d.validation = tv.validation;
}

}  // namespace

TrainValidation split_validation(std::shared_ptr<const Dataset> train, double fraction, int64_t of, uint64_t seed) {
  const int64_t n = train->size();
  int64_t v = std::llround(fraction * static_cast<double>(of));
  if (fraction > 0) v = std::max<int64_t>(v, 1);
  v = std::min(v, n - 1);
  if (v <= 0) return {std::move(train), nullptr};
  auto parts = random_split(train, {n - v, v}, seed);
  return {parts[0], parts[1]};
}

std::vector<int64_t> count_classes(const Dataset& dataset, int64_t classes) {
  return class_counts(sample_labels(dataset), classes);
}

bool is_text_spec(const std::string& spec) { return spec.rfind(kTextSpecPrefix, 0) == 0; }

namespace {

OpenedDataset open_text(const DatasetSource& source) {
  OpenedDataset d;
  d.kind = "text";
  d.path = source.spec.substr(std::string(kTextSpecPrefix).size());
  KILN_CHECK(!d.path.empty(), ValueError, "text: needs a folder or file, e.g. text:mails/ or text:reviews.csv");
  KILN_CHECK(source.max_length >= 1, ValueError, d.path, ": the max length must be at least 1 token, not ",
             source.max_length);
  auto index = std::make_shared<const TextIndex>(read_text_dataset(d.path, source.text_read));
  TextSplit split = split_and_fit(index, source.test_fraction, source.seed, source.tokenizer);
  KILN_CHECK(!split.train.empty(), ValueError, d.path, ": no training samples after the split");
  OpenedText t;
  t.index = index;
  t.tokenizer = split.tokenizer;
  t.max_length = source.max_length;
  t.train = std::make_shared<TextDataset>(index, split.train, split.tokenizer, source.max_length);
  t.test = std::make_shared<TextDataset>(index, split.test, split.tokenizer, source.max_length);
  d.train = t.train;
  d.test = t.test;
  d.sample_shape = {source.max_length};
  d.classes = index->classes;
  d.class_counts = index->class_counts();
  for (const SkippedText& s : index->skipped) d.skipped.push_back(s.origin + ": " + s.reason);
  d.text = std::move(t);
  take_validation(d, source, static_cast<int64_t>(index->samples.size()));
  return d;
}

}  // namespace

OpenedDataset open_dataset(const DatasetSource& source) {
  const Task task = parse_task(source.task);
  KILN_CHECK(task == Task::classification || is_csv_dataset(source.spec), ValueError, "'", source.spec,
             "': regression needs a table (csv:FILE) with a numeric label column");
  if (is_text_spec(source.spec)) return open_text(source);
  OpenedDataset d;
  if (is_image_dataset(source.spec)) {
    ImageConfig c = source.image ? *source.image : image_config_from_spec(source.spec);
    if (!source.image) {
      c.test_fraction = source.test_fraction;
      c.seed = source.seed;
      c.workers = std::max(1, source.workers);
      c.cache_mb = source.cache_mb;
      c.height = source.image_height, c.width = source.image_width;
      c.augment = source.augment;
      c.rotation = source.rotation;
    }
    ImageData images = load_images(c, nullptr, source.index_store.get(), source.rescan);
    d.kind = c.kind;
    d.path = c.path;
    d.train = images.train, d.validation = images.validation, d.test = images.test;
    d.sample_shape = {images.run.channels, images.run.height, images.run.width};
    d.classes = images.run.classes;
    d.skipped = images.skipped;
    d.notes = images.notes;
    const int64_t total = d.train->size() + d.test->size() + (d.validation ? d.validation->size() : 0);
    // The summary's class counts are the training split's; the test split adds its own.
    d.class_counts = images.summary.at("class_counts").get<std::vector<int64_t>>();
    const std::vector<int64_t> test_counts = count_classes(*d.test, static_cast<int64_t>(d.classes.size()));
    for (size_t k = 0; k < d.class_counts.size(); ++k) d.class_counts[k] += test_counts[k];
    if (d.validation) {
      const std::vector<int64_t> v = count_classes(*d.validation, static_cast<int64_t>(d.classes.size()));
      for (size_t k = 0; k < d.class_counts.size(); ++k) d.class_counts[k] += v[k];
    }
    d.images = std::move(images);
    take_validation(d, source, total);
    return d;
  }
  KILN_CHECK(is_csv_dataset(source.spec), ValueError, "'", source.spec,
             "' is not a dataset spec: expected imagefolder:DIR, images:FILE.csv, csv:FILE or text:DIR|FILE");
  TableConfig c;
  if (source.table) {
    c = *source.table;
  } else {
    c.path = source.spec.substr(std::string(kCsvPrefix).size());
    c.csv.header = source.header;
    c.csv.skip_rows = source.skip_rows;
    c.tabular.label = source.label.empty() ? "-1" : source.label;
    c.tabular.test_fraction = source.test_fraction;
    c.tabular.seed = source.seed;
    c.tabular.task = task;
    c.tabular.missing = parse_missing_policy(source.missing);
  }
  KILN_CHECK(!c.path.empty(), ValueError, "csv:FILE needs a file");
  TabularData t = load_table(c);
  const bool regression = t.schema.task == Task::regression;
  KILN_CHECK(regression || t.schema.classes.size() >= 2, ValueError, c.path, ": the label column '", t.schema.label, "' has one class ('",
             t.schema.classes.empty() ? std::string() : t.schema.classes[0], "'); classification needs at least two");
  d.kind = "csv";
  d.path = c.path;
  d.regression = regression;
  d.train = std::make_shared<TensorDataset>(t.x_train, t.y_train);
  d.test = std::make_shared<TensorDataset>(t.x_test, t.y_test);
  d.sample_shape = {t.schema.num_features()};
  d.classes = t.schema.classes;  // none for regression
  if (!regression) {
    const auto k = static_cast<int64_t>(d.classes.size());
    d.class_counts = count_classes(*d.train, k);
    const std::vector<int64_t> test_counts = count_classes(*d.test, k);
    for (size_t i = 0; i < d.class_counts.size(); ++i) d.class_counts[i] += test_counts[i];
  }
  const int64_t total = d.train->size() + d.test->size();
  d.notes = t.notes;
  d.table = std::move(t);
  d.table_config = c;
  take_validation(d, source, total);
  return d;
}

std::string OpenedDataset::description() const {
  std::ostringstream s;
  const int64_t n = train->size() + test->size() + (validation ? validation->size() : 0);
  s << (kind == "csv" ? "the table " : kind == "images" ? "the image manifest " : kind == "text" ? "the texts " : "the image folder ")
    << path << ": ";
  if (regression) s << "regression of '" << (table ? table->schema.label : std::string()) << "', ";
  else s << classes.size() << " classes, ";
  s << n << (kind == "csv" ? " rows" : kind == "text" ? " texts" : " images");
  if (!skipped.empty()) s << " (" << count_of(static_cast<long long>(skipped.size()), "file") << " skipped)";
  s << ", samples [";
  for (size_t i = 0; i < sample_shape.size(); ++i) s << (i ? ", " : "") << sample_shape[i];
  s << "]";
  if (text) s << " token ids, " << text->tokenizer->kind() << " vocabulary " << text->tokenizer->vocab_size();
  return s.str();
}

}  // namespace kiln::data
