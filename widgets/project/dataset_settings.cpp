#include "widgets/project/dataset_settings.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "engine/core/error.h"
#include "engine/data/class_filter.h"

namespace kiln::studio {

namespace {
constexpr const char* kWhat = "dataset settings";

std::string describe(const QJsonValue& v) {
  if (v.isString()) return ('"' + v.toString() + '"').toStdString();
  if (v.isBool()) return v.toBool() ? "true" : "false";
  if (v.isDouble()) return QString::number(v.toDouble(), 'g', 17).toStdString();
  if (v.isArray()) return "an array";
  if (v.isObject()) return "an object";
  return "null";
}

int64_t read_int(const QJsonObject& o, const char* key, int64_t fallback) {
  if (!o.contains(key)) return fallback;
  const QJsonValue v = o.value(key);
  const double d = v.toDouble();
  KILN_CHECK(v.isDouble() && std::floor(d) == d && std::abs(d) < 9e15, ValueError, kWhat, ": '", key,
             "' must be an integer, got ", describe(v));
  return static_cast<int64_t>(d);
}

std::string read_string(const QJsonObject& o, const char* key, const std::string& fallback) {
  if (!o.contains(key)) return fallback;
  const QJsonValue v = o.value(key);
  KILN_CHECK(v.isString(), ValueError, kWhat, ": '", key, "' must be a string, got ", describe(v));
  return v.toString().toStdString();
}
}  // namespace

std::vector<int64_t> DatasetSettings::class_list() const {
  if (classes.empty()) return {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  return data::parse_classes(classes, 10, "dataset settings: 'classes'");
}

int64_t DatasetSettings::num_classes() const { return static_cast<int64_t>(class_list().size()); }

data::DatasetSource DatasetSettings::source(uint64_t seed) const {
  data::DatasetSource s;
  s.spec = spec();
  s.label = label;
  s.task = task;
  s.missing = missing;
  s.header = header;
  s.skip_rows = skip_rows;
  s.test_fraction = test_fraction;
  s.validation_fraction = validation_fraction;
  s.seed = seed;
  if (name == "imagefolder" || name == "images") {
    s.image_height = image_height, s.image_width = image_width;
    s.augment = augment;
    s.rotation = rotation;
  }
  if (name == "text") {
    s.text_read.text_column = text_column;
    s.text_read.label_column = label.empty() ? "label" : label;
    s.tokenizer.kind = tokenizer;
    s.tokenizer.vocab_size = vocab_size;
    s.max_length = max_length;
  }
  return s;
}

void DatasetSettings::validate() const {
  KILN_CHECK(name == "fashion-mnist" || name == "imagefolder" || name == "images" || name == "csv" || name == "text",
             ValueError, kWhat, ": 'name' must be fashion-mnist, imagefolder, images, csv or text, got '", name, "'");
  if (name == "text") {
    KILN_CHECK(tokenizer == "word" || tokenizer == "char" || tokenizer == "sentencepiece", ValueError, kWhat,
               ": 'tokenizer' must be word, char or sentencepiece, got '", tokenizer, "'");
    KILN_CHECK(max_length >= 1 && max_length <= 65536, ValueError, kWhat, ": 'max_length' must be 1 to 65536 tokens, got ",
               max_length);
    KILN_CHECK(vocab_size >= 3 && vocab_size <= 10000000, ValueError, kWhat,
               ": 'vocab_size' must be 3 (<pad>, <unk> and one piece) to 10000000, got ", vocab_size);
    KILN_CHECK(!text_column.empty(), ValueError, kWhat, ": 'text_column' must name the text column");
  }
  KILN_CHECK((image_height == 0 && image_width == 0) ||
                 (image_height >= 1 && image_height <= 8192 && image_width >= 1 && image_width <= 8192),
             ValueError, kWhat, ": 'image_height' and 'image_width' must be 1 to 8192 (or both 0: the most common size), got ",
             image_height, " and ", image_width);
  KILN_CHECK(task == "classification" || task == "regression", ValueError, kWhat,
             ": 'task' must be classification or regression, got '", task, "'");
  KILN_CHECK(task == "classification" || name == "csv", ValueError, kWhat,
             ": 'task' regression needs a CSV table (name csv), not ", name);
  KILN_CHECK(missing == "error" || missing == "drop" || missing == "fill", ValueError, kWhat,
             ": 'missing' must be error, drop or fill, got '", missing, "'");
  KILN_CHECK(augment == "none" || augment == "flip" || augment == "standard", ValueError, kWhat,
             ": 'augment' must be none, flip or standard, got '", augment, "'");
  KILN_CHECK(rotation >= 0 && rotation <= 180, ValueError, kWhat, ": 'rotation' must be 0 to 180 degrees, got ", rotation);
  if (!is_fashion_mnist()) {
    KILN_CHECK(!path.empty(), ValueError, kWhat, ": 'path' must name the ", name == "imagefolder" ? "folder" : "file",
               " of the ", name, " dataset");
    KILN_CHECK(skip_rows >= 0, ValueError, kWhat, ": 'skip_rows' must be >= 0, got ", skip_rows);
    KILN_CHECK(test_fraction >= 0 && test_fraction <= 0.9 && validation_fraction >= 0 && validation_fraction <= 0.9 &&
                   test_fraction + validation_fraction <= 0.9,
               ValueError, kWhat, ": 'test_fraction' and 'validation_fraction' must be in [0, 0.9] and together at most 0.9, got ",
               test_fraction, " and ", validation_fraction);
    return;
  }
  KILN_CHECK(train_size >= 1, ValueError, kWhat, ": 'train_size' must be >= 1, got ", train_size);
  KILN_CHECK(validation_size >= 0, ValueError, kWhat, ": 'validation_size' must be >= 0, got ", validation_size);
  KILN_CHECK(test_size >= 0 && test_size <= kTestImages, ValueError, kWhat, ": 'test_size' must be 0 (all) to ",
             kTestImages, ", got ", test_size);
  const int64_t k = num_classes(), images = k * kTrainPerClass;
  KILN_CHECK(train_size + validation_size <= images, ValueError, kWhat, ": train_size + validation_size = ",
             train_size + validation_size, " exceeds the ", images, " Fashion-MNIST training images",
             k < 10 ? " of classes " + classes : std::string());
}

std::string DatasetSettings::unavailable() const {
  if (is_fashion_mnist() || path.empty()) return {};  // validate() names an empty path
  namespace fs = std::filesystem;
  const std::string what = name == "imagefolder" ? "image folder"
                           : name == "images"    ? "image list"
                           : name == "csv"       ? "table"
                                                 : "texts";
  const std::string where = "the dataset's " + what + " '" + path + "'";
  const std::string fix = "; restore it, or choose the dataset again in the Dataset panel (headless: --dataset " + name + ":PATH)";
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (!fs::exists(st)) return where + " is gone (no such file or folder)" + fix;
  if (name == "imagefolder" && !fs::is_directory(st)) return where + " is not a folder" + fix;
  if ((name == "images" || name == "csv") && fs::is_directory(st)) return where + " is a folder, not a file" + fix;
  if (!fs::is_directory(st) && !std::ifstream(path).good()) return where + " cannot be read (permission denied?)" + fix;
  if (fs::is_directory(st)) {
    fs::directory_iterator it(path, ec);
    if (ec) return where + " cannot be listed (" + ec.message() + ")" + fix;
  }
  return {};
}

std::string DatasetSettings::to_json() const {
  QJsonObject o{{"name", QString::fromStdString(name)},
                {"dir", QString::fromStdString(dir)},
                {"train_size", static_cast<double>(train_size)},
                {"validation_size", static_cast<double>(validation_size)}};
  if (test_size != 0) o["test_size"] = static_cast<double>(test_size);
  if (test_seed != 0) o["test_seed"] = static_cast<double>(test_seed);
  if (!classes.empty()) o["classes"] = QString::fromStdString(classes);
  if (!is_fashion_mnist()) {
    o["path"] = QString::fromStdString(path);
    o["test_fraction"] = test_fraction;
    o["validation_fraction"] = validation_fraction;
    if (name == "csv") {
      o["label"] = QString::fromStdString(label);
      o["header"] = header;
      o["skip_rows"] = static_cast<double>(skip_rows);
      if (task != "classification") o["task"] = QString::fromStdString(task);
      if (missing != "error") o["missing"] = QString::fromStdString(missing);
    }
    if (image_height != 0) o["image_height"] = static_cast<double>(image_height);
    if (image_width != 0) o["image_width"] = static_cast<double>(image_width);
    if (augment != "none") o["augment"] = QString::fromStdString(augment);
    if (rotation != 0) o["rotation"] = rotation;
    if (name == "text") {
      o["label"] = QString::fromStdString(label);
      o["text_column"] = QString::fromStdString(text_column);
      o["tokenizer"] = QString::fromStdString(tokenizer);
      o["max_length"] = static_cast<double>(max_length);
      o["vocab_size"] = static_cast<double>(vocab_size);
    }
  }
  return QJsonDocument(o).toJson(QJsonDocument::Compact).toStdString();  // QJsonObject keeps keys sorted
}

DatasetSettings DatasetSettings::from_json(const std::string& json) {
  QJsonParseError err{};
  const QJsonDocument doc = QJsonDocument::fromJson(QByteArray::fromStdString(json), &err);
  KILN_CHECK(err.error == QJsonParseError::NoError, ValueError, kWhat, ": not JSON (", err.errorString().toStdString(),
             " at offset ", err.offset, ")");
  KILN_CHECK(doc.isObject(), ValueError, kWhat, ": expected a JSON object");
  const QJsonObject o = doc.object();
  DatasetSettings s;
  s.name = read_string(o, "name", s.name);
  s.dir = read_string(o, "dir", s.dir);
  s.train_size = read_int(o, "train_size", s.train_size);
  s.validation_size = read_int(o, "validation_size", s.validation_size);
  s.test_size = read_int(o, "test_size", s.test_size);
  const int64_t seed = read_int(o, "test_seed", 0);
  KILN_CHECK(seed >= 0, ValueError, kWhat, ": 'test_seed' must be >= 0, got ", seed);
  s.test_seed = static_cast<uint64_t>(seed);
  s.classes = read_string(o, "classes", s.classes);
  s.path = read_string(o, "path", s.path);
  s.label = read_string(o, "label", s.label);
  s.skip_rows = read_int(o, "skip_rows", s.skip_rows);
  s.text_column = read_string(o, "text_column", s.text_column);
  s.tokenizer = read_string(o, "tokenizer", s.tokenizer);
  s.max_length = read_int(o, "max_length", s.max_length);
  s.vocab_size = read_int(o, "vocab_size", s.vocab_size);
  s.image_height = read_int(o, "image_height", s.image_height);
  s.image_width = read_int(o, "image_width", s.image_width);
  s.augment = read_string(o, "augment", s.augment);
  s.task = read_string(o, "task", s.task);
  s.missing = read_string(o, "missing", s.missing);
  if (o.contains("rotation")) {
    KILN_CHECK(o.value("rotation").isDouble(), ValueError, kWhat, ": 'rotation' must be a number, got ",
               describe(o.value("rotation")));
    s.rotation = o.value("rotation").toDouble();
  }
  if (o.contains("header")) {
    KILN_CHECK(o.value("header").isBool(), ValueError, kWhat, ": 'header' must be true or false, got ", describe(o.value("header")));
    s.header = o.value("header").toBool();
  }
  for (auto [key, field] : {std::pair{"test_fraction", &s.test_fraction}, {"validation_fraction", &s.validation_fraction}})
    if (o.contains(key)) {
      KILN_CHECK(o.value(key).isDouble(), ValueError, kWhat, ": '", key, "' must be a number, got ", describe(o.value(key)));
      *field = o.value(key).toDouble();
    }
  s.validate();
  return s;
}

}  // namespace kiln::studio
