#include "engine/data/predict_input.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string_view>

#include "engine/core/error.h"
#include "engine/data/fashion_mnist.h"

namespace kiln::data {

namespace fs = std::filesystem;

ImageRun idx_image_run(const std::vector<std::string>& classes) {
  ImageRun r;
  r.channels = 1;
  r.height = r.width = 28;
  r.mean = {FashionMNIST::kMean};
  r.stddev = {FashionMNIST::kStd};
  r.classes = classes;
  return r;
}

// Without OpenCV; engine/data/image/image_predict.cpp has the functions of a build with it.
#ifndef KILN_HAVE_OPENCV

namespace {
[[noreturn]] void no_opencv(const std::string& path) {
  throw ValueError(path + ": this build of Kiln reads no images: it was configured without OpenCV (KILN_OPENCV=OFF, or "
                   "libopencv-imgcodecs-dev and libopencv-imgproc-dev missing; installer/quickstart.sh installs them)");
}
}  // namespace

std::vector<ImageInput> list_image_inputs(const std::string& path, const std::vector<std::string>&, int64_t*) {
  no_opencv(path);
}
void read_image_input(const std::string& path, const ImageRun&, float*) { no_opencv(path); }

#endif

namespace {

std::string where(const CsvTable& t, int64_t line) { return t.source + ":" + std::to_string(line); }

// "PNG", "JPEG", ... when the file at `path` starts as an image of that format does, else "".
std::string image_format(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char b[12] = {};
  in.read(b, sizeof b);
  const std::string h(b, static_cast<size_t>(in.gcount()));
  auto starts = [&](std::string_view magic) { return h.size() >= magic.size() && h.compare(0, magic.size(), magic) == 0; };
  if (starts("\x89PNG\r\n\x1a\n")) return "PNG";
  if (starts("\xff\xd8\xff")) return "JPEG";
  if (starts("GIF87a") || starts("GIF89a")) return "GIF";
  if (starts("BM")) return "BMP";
  if (starts(std::string_view("II*\0", 4)) || starts(std::string_view("MM\0*", 4))) return "TIFF";
  if (starts("RIFF") && h.size() >= 12 && h.compare(8, 4, "WEBP") == 0) return "WebP";
  return "";
}

std::string join_names(const std::vector<std::string>& names) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) s += (i ? ", '" : "'") + names[i] + "'";
  return s;
}

}  // namespace

TableInput read_table_input(const std::string& path, const TableConfig& config, const TabularSchema& schema) {
  std::error_code ec;
  KILN_CHECK(!fs::is_directory(path, ec), IoError, path, ": a folder, but the run was trained on a table (",
             config.path, "); give a CSV file of the same columns");
  const std::string format = image_format(path);
  KILN_CHECK(format.empty(), IoError, path, ": a ", format, " image, but the run was trained on a table (", config.path,
             "); give a CSV file of the same columns");
  const CsvTable t = read_csv(path, config.csv);
  const int64_t header_line = config.csv.skip_rows + 1;

  // The training table's columns in file order: name -> position.
  const size_t total = schema.columns.size() + 1;
  std::vector<std::string> train_names(total);
  train_names[static_cast<size_t>(schema.label_index)] = schema.label;
  std::vector<std::string> features;
  for (const ColumnInfo& c : schema.columns) {
    train_names[static_cast<size_t>(c.index)] = c.name;
    features.push_back(c.name);
  }
  // source[k]: the input column holding training column k (-1: none, the label only).
  std::vector<int64_t> source(total, -1);
  TableInput in;
  if (config.csv.header) {
    std::map<std::string, int64_t> position;
    for (size_t i = 0; i < t.columns.size(); ++i) position[t.columns[i]] = static_cast<int64_t>(i);
    for (size_t k = 0; k < total; ++k) {
      auto it = position.find(train_names[k]);
      if (it != position.end()) {
        source[k] = it->second;
      } else {
        KILN_CHECK(static_cast<int64_t>(k) == schema.label_index, IoError, where(t, header_line), ": no column '",
                   train_names[k], "'; the model was trained on the columns ", join_names(features), " (label '",
                   schema.label, "', optional here)");
      }
    }
    for (size_t i = 0; i < t.columns.size(); ++i)
      KILN_CHECK(std::find(train_names.begin(), train_names.end(), t.columns[i]) != train_names.end(), IoError,
                 where(t, header_line), ": column ", i + 1, " '", t.columns[i],
                 "' was not in the training table; remove it (the model was trained on ", join_names(features), ")");
    in.labelled = source[static_cast<size_t>(schema.label_index)] >= 0;
  } else {
    const size_t n = t.columns.size();
    const int64_t first_line = t.lines.empty() ? header_line : t.lines[0];
    KILN_CHECK(n == total || n + 1 == total, IoError, where(t, first_line), ": ", n, " fields a row; the training "
               "table had ", total, " (", total - 1, " without its label column ", schema.label_index + 1, ")");
    in.labelled = n == total;
    for (size_t k = 0, i = 0; k < total; ++k)
      if (in.labelled || static_cast<int64_t>(k) != schema.label_index) source[k] = static_cast<int64_t>(i++);
  }

  // The rows in the training table's column order. The label field holds a known class (or 0) only
  // for prepare_tabular, which needs one: a prediction does not depend on the label, so a row whose
  // label is empty or unknown to the run is predicted as any other; the file's label is echoed.
  const std::string no_label = schema.task == Task::classification ? schema.classes.at(0) : "0";
  const auto label_at = static_cast<size_t>(schema.label_index);
  CsvTable r;
  r.source = t.source;
  r.columns = train_names;
  r.lines = t.lines;
  r.delimiter = t.delimiter;
  r.rows.reserve(t.rows.size());
  for (const auto& row : t.rows) {
    std::vector<std::string> fields(total);
    for (size_t k = 0; k < total; ++k)
      fields[k] = source[k] >= 0 && k != label_at ? row[static_cast<size_t>(source[k])] : no_label;
    r.rows.push_back(std::move(fields));
  }
  TabularOptions o = config.tabular;
  o.test_fraction = 0;  // every row
  const TabularData d = prepare_tabular(r, o, &schema);
  in.x = d.x_train;
  std::vector<int64_t> input_of(r.rows.size(), -1);  // table row -> input
  for (int64_t row : d.train_rows) {
    input_of[static_cast<size_t>(row)] = static_cast<int64_t>(in.inputs.size());
    in.inputs.push_back(where(t, t.lines[static_cast<size_t>(row)]));
    in.labels.push_back(in.labelled ? t.rows[static_cast<size_t>(row)][static_cast<size_t>(source[label_at])] : "");
  }
  for (size_t row = 0; row < input_of.size(); ++row)
    if (input_of[row] < 0) in.dropped.push_back(where(t, t.lines[row]));
  for (const auto& [row, c] : d.unseen_categories) {
    const ColumnInfo& col = schema.columns[static_cast<size_t>(c)];
    in.unseen.push_back({static_cast<size_t>(input_of[static_cast<size_t>(row)]), col.name,
                         r.rows[static_cast<size_t>(row)][static_cast<size_t>(col.index)]});
  }
  return in;
}

std::string unseen_categories_note(const TableInput& in, size_t shown) {
  if (in.unseen.empty()) return "";
  const bool one = in.unseen.size() == 1;
  std::string note = std::to_string(in.unseen.size()) + (one ? " value of a categorical column was" : " values of categorical columns were") +
                     " not seen in training: encoded as none of the column's categories (as scikit-learn's "
                     "OneHotEncoder(handle_unknown='ignore')), the row still predicted:";
  for (size_t i = 0; i < in.unseen.size() && i < shown; ++i) {
    const UnseenCategory& u = in.unseen[i];
    note += "\n  " + in.inputs[u.input] + ", column '" + u.column + "': '" + u.value.substr(0, 40) +
            (u.value.size() > 40 ? "...'" : "'");
  }
  if (in.unseen.size() > shown) note += "\n  and " + std::to_string(in.unseen.size() - shown) + " more";
  return note;
}

}  // namespace kiln::data
