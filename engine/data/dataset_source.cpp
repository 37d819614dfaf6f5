#include "engine/data/dataset_source.h"

#include <algorithm>
#include <numeric>
#include <sstream>

#include "engine/core/error.h"

namespace kiln::data {

namespace {

// Takes validation_fraction of all `total` samples out of `train` by seed (random_split).
void split_validation(OpenedDataset& d, double validation_fraction, int64_t total, uint64_t seed) {
  if (d.validation || validation_fraction <= 0) return;
  const int64_t n = d.train->size();
  const int64_t v = std::min<int64_t>(n - 1, static_cast<int64_t>(validation_fraction * static_cast<double>(total) + 0.5));
  if (v <= 0) return;
  auto parts = random_split(d.train, {n - v, v}, seed);
  d.train = parts[0];
  d.validation = parts[1];
}

}  // namespace

std::vector<int64_t> count_classes(const Dataset& dataset, int64_t classes) {
  std::vector<int64_t> counts(static_cast<size_t>(classes), 0);
  if (const std::vector<int64_t> labels = image_labels(dataset); !labels.empty()) {
    for (int64_t y : labels)
      if (y >= 0 && y < classes) ++counts[static_cast<size_t>(y)];
    return counts;
  }
  const int64_t n = dataset.size(), batch = 512;
  for (int64_t start = 0; start < n; start += batch) {
    std::vector<int64_t> idx(static_cast<size_t>(std::min(batch, n - start)));
    std::iota(idx.begin(), idx.end(), start);
    const Tensor t = dataset.get_batch(idx).target.contiguous();
    const int64_t* y = t.data_ptr<const int64_t>();
    for (int64_t i = 0; i < t.numel(); ++i)
      if (y[i] >= 0 && y[i] < classes) ++counts[static_cast<size_t>(y[i])];
  }
  return counts;
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
  split_validation(d, source.validation_fraction, static_cast<int64_t>(index->samples.size()), source.seed);
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
    ImageConfig c = image_config_from_spec(source.spec);
    c.test_fraction = source.test_fraction;
    c.seed = source.seed;
    c.workers = std::max(1, source.workers);
    c.cache_mb = source.cache_mb;
    c.height = source.image_height, c.width = source.image_width;
    c.augment = source.augment;
    c.rotation = source.rotation;
    ImageData images = load_images(c);
    d.kind = c.kind;
    d.path = c.path;
    d.train = images.train, d.validation = images.validation, d.test = images.test;
    d.sample_shape = {images.run.channels, images.run.height, images.run.width};
    d.classes = images.run.classes;
    d.skipped = images.skipped;
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
    split_validation(d, source.validation_fraction, total, source.seed);
    return d;
  }
  KILN_CHECK(is_csv_dataset(source.spec), ValueError, "'", source.spec,
             "' is not a dataset spec: expected imagefolder:DIR, images:FILE.csv, csv:FILE or text:DIR|FILE");
  TableConfig c;
  c.path = source.spec.substr(std::string(kCsvPrefix).size());
  KILN_CHECK(!c.path.empty(), ValueError, "csv:FILE needs a file");
  c.csv.header = source.header;
  c.csv.skip_rows = source.skip_rows;
  c.tabular.label = source.label.empty() ? "-1" : source.label;
  c.tabular.test_fraction = source.test_fraction;
  c.tabular.seed = source.seed;
  c.tabular.task = task;
  TabularData t = load_table(c);
  d.kind = "csv";
  d.path = c.path;
  if (task == Task::regression) {
    d.regression = true;
    d.train = std::make_shared<TensorDataset>(t.x_train, t.y_train);
    d.test = std::make_shared<TensorDataset>(t.x_test, t.y_test);
    d.sample_shape = {t.schema.num_features()};
    const int64_t total = d.train->size() + d.test->size();
    d.table = std::move(t);
    d.table_config = c;
    split_validation(d, source.validation_fraction, total, source.seed);
    return d;
  }
  KILN_CHECK(t.schema.classes.size() >= 2, ValueError, c.path, ": the label column '", t.schema.label, "' has one class ('",
             t.schema.classes.empty() ? std::string() : t.schema.classes[0], "'); classification needs at least two");
  d.train = std::make_shared<TensorDataset>(t.x_train, t.y_train);
  d.test = std::make_shared<TensorDataset>(t.x_test, t.y_test);
  d.sample_shape = {t.schema.num_features()};
  d.classes = t.schema.classes;
  const auto k = static_cast<int64_t>(d.classes.size());
  d.class_counts = count_classes(*d.train, k);
  const std::vector<int64_t> test_counts = count_classes(*d.test, k);
  for (size_t i = 0; i < d.class_counts.size(); ++i) d.class_counts[i] += test_counts[i];
  const int64_t total = d.train->size() + d.test->size();
  d.table = std::move(t);
  d.table_config = c;
  split_validation(d, source.validation_fraction, total, source.seed);
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
  if (!skipped.empty()) s << " (" << skipped.size() << " files skipped)";
  s << ", samples [";
  for (size_t i = 0; i < sample_shape.size(); ++i) s << (i ? ", " : "") << sample_shape[i];
  s << "]";
  if (text) s << " token ids, " << text->tokenizer->kind() << " vocabulary " << text->tokenizer->vocab_size();
  return s.str();
}

}  // namespace kiln::data
