// Project: a run's per-epoch checkpoints (its latest and best kept) and its evaluation
// on the test images.
#include <bit>
#include <cmath>
#include <cstring>
#include <sstream>

#include "projects/project.h"

namespace kiln::projects {

namespace {
// evaluations.predictions: Evaluation::Prediction records packed as 16 bytes each
// (int32 index, int32 truth, int32 predicted, float32 probability), little-endian.
static_assert(sizeof(Evaluation::Prediction) == 16, "the stored prediction record is 16 bytes");
static_assert(std::endian::native == std::endian::little, "predictions are stored little-endian");
// evaluations.regression: Evaluation::Point records (float64 actual, float64 predicted), little-endian.
static_assert(sizeof(Evaluation::Point) == 16, "the stored regression point is 16 bytes");

// evaluations.texts: for each Evaluation::Text its origin, text and tokens, each as a
// little-endian uint32 byte count followed by the UTF-8 bytes.
std::string pack_texts(const std::vector<Evaluation::Text>& texts) {
  std::string out;
  for (const Evaluation::Text& t : texts)
    for (const std::string* field : {&t.origin, &t.text, &t.tokens}) {
      const auto n = static_cast<uint32_t>(field->size());
      out.append(reinterpret_cast<const char*>(&n), sizeof n);
      out += *field;
    }
  return out;
}

std::vector<Evaluation::Text> unpack_texts(const std::vector<char>& bytes, const std::string& where) {
  std::vector<Evaluation::Text> texts;
  size_t at = 0;
  while (at < bytes.size()) {
    Evaluation::Text& t = texts.emplace_back();
    for (std::string* field : {&t.origin, &t.text, &t.tokens}) {
      uint32_t n = 0;
      if (bytes.size() - at < sizeof n || (std::memcpy(&n, bytes.data() + at, sizeof n), bytes.size() - at - sizeof n < n))
        throw ProjectError(where + " is damaged: text " + std::to_string(texts.size() - 1) + " runs past the " +
                           std::to_string(bytes.size()) + " stored bytes");
      at += sizeof n;
      field->assign(bytes.data() + at, n);
      at += n;
    }
  }
  return texts;
}

// The run's best checkpoint: highest val_accuracy, NULL (NaN) last, ties to the later epoch.
constexpr const char* kBest =
    "SELECT id FROM checkpoints WHERE run = ?1 AND batch = 0 ORDER BY val_accuracy IS NULL, val_accuracy DESC, epoch DESC "
    "LIMIT 1";
}  // namespace

void Project::add_epoch_checkpoint(int64_t run, int epoch, const std::string& checkpoint_dir, double val_accuracy,
                                   int64_t step) {
  Transaction tx(*db_);
  db_->prepare("DELETE FROM checkpoints WHERE run = ? AND batch > 0").bind(1, run).run();  // older than this one
  // Older epochs that are not the best go first, so the new files reuse their pages:
  // at most the best and the new checkpoint are stored at once.
  db_->prepare(std::string("DELETE FROM checkpoints WHERE run = ?1 AND epoch < ?2 AND id NOT IN (") + kBest + ")")
      .bind(1, run)
      .bind(2, epoch)
      .run();
  store_checkpoint(run, epoch, checkpoint_dir, val_accuracy, 0, step);
  // Keep the newest epoch and the best one; checkpoint_files go with them (ON DELETE CASCADE).
  db_->prepare(std::string("DELETE FROM checkpoints WHERE run = ?1 AND id NOT IN ("
                           "SELECT id FROM (SELECT id FROM checkpoints WHERE run = ?1 ORDER BY epoch DESC LIMIT 1) "
                           "UNION SELECT id FROM (") + kBest + "))")
      .bind(1, run)
      .run();
  tx.commit();
}

std::vector<CheckpointInfo> Project::checkpoints(int64_t run) const {
  Statement s = db_->prepare(
      "SELECT epoch, val_accuracy, "
      "epoch = (SELECT max(epoch) FROM checkpoints WHERE run = ?1 AND batch = 0), "
      "id = (" + std::string(kBest) + ") FROM checkpoints WHERE run = ?1 AND batch = 0 ORDER BY epoch");
  s.bind(1, run);
  std::vector<CheckpointInfo> out;
  while (s.step()) out.push_back({static_cast<int>(s.int64(0)), s.real(1), s.int64(2) != 0, s.int64(3) != 0});
  return out;
}

void Project::set_evaluation(int64_t run, const Evaluation& e) {
  const std::string where = "project " + path() + ": evaluation of run " + std::to_string(run);
  require_run(run);
  const size_t c = e.class_names.size();
  if (e.confusion.size() != c * c)
    throw ProjectError(where + ": the confusion matrix has " + std::to_string(e.confusion.size()) + " cells, " +
                       std::to_string(c) + " classes need " + std::to_string(c * c));
  std::string names;
  for (const std::string& n : e.class_names) {
    if (n.find('\n') != std::string::npos) throw ProjectError(where + ": class name '" + n + "' has a line break");
    names += (names.empty() ? "" : "\n") + n;
  }
  std::ostringstream miss;
  for (const auto& m : e.misclassified) {
    if (m.truth < 0 || m.predicted < 0 || static_cast<size_t>(m.truth) >= c || static_cast<size_t>(m.predicted) >= c)
      throw ProjectError(where + ": misclassified image " + std::to_string(m.index) + " has a label outside 0.." +
                         std::to_string(c) + "-1");
    miss << m.index << ':' << m.truth << ':' << m.predicted << ' ';
  }
  const size_t image_bytes = static_cast<size_t>(e.image_height) * static_cast<size_t>(e.image_width);
  if (!e.images.empty() && e.images.size() != e.misclassified.size() * image_bytes)
    throw ProjectError(where + ": " + std::to_string(e.images.size()) + " image bytes for " +
                       std::to_string(e.misclassified.size()) + " images of " + std::to_string(e.image_height) + "x" +
                       std::to_string(e.image_width));
  for (const auto& p : e.predictions) {
    if (p.truth < 0 || p.predicted < 0 || static_cast<size_t>(p.truth) >= c || static_cast<size_t>(p.predicted) >= c)
      throw ProjectError(where + ": the prediction of sample " + std::to_string(p.index) + " has a label outside 0.." +
                         std::to_string(c) + "-1");
    if (!std::isnan(p.probability) && !(p.probability >= 0.0f && p.probability <= 1.0f))
      throw ProjectError(where + ": the prediction of sample " + std::to_string(p.index) + " has probability " +
                         std::to_string(p.probability) + ", not in [0, 1]");
  }
  if (!e.texts.empty() && e.texts.size() != static_cast<size_t>(e.count))
    throw ProjectError(where + ": " + std::to_string(e.texts.size()) + " texts for " + std::to_string(e.count) +
                       " evaluated samples");
  if (!e.regression.empty() && (c != 0 || e.regression.size() != static_cast<size_t>(e.count)))
    throw ProjectError(where + ": a regression evaluation has no classes and one point per evaluated sample, got " +
                       std::to_string(c) + " classes and " + std::to_string(e.regression.size()) + " points for " +
                       std::to_string(e.count) + " samples");
  if (e.target.find('\n') != std::string::npos) throw ProjectError(where + ": the target name has a line break");
  Statement s = db_->prepare(
      "INSERT OR REPLACE INTO evaluations(run, count, loss, accuracy, class_names, confusion, misclassified, "
      "image_height, image_width, images, created_at, predictions, texts, target, regression) "
      "VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  s.bind(1, run).bind(2, e.count).bind(3, e.loss).bind(4, e.accuracy).bind(5, names);
  s.bind_blob(6, e.confusion.data(), e.confusion.size() * sizeof(int64_t));
  s.bind(7, miss.str()).bind(8, e.image_height).bind(9, e.image_width);
  if (e.images.empty()) s.bind_null(10);
  else s.bind_blob(10, e.images.data(), e.images.size());
  s.bind(11, utc_now());
  if (e.predictions.empty()) s.bind_null(12);
  else s.bind_blob(12, e.predictions.data(), e.predictions.size() * sizeof(Evaluation::Prediction));
  const std::string texts = pack_texts(e.texts);
  if (e.texts.empty()) s.bind_null(13);
  else s.bind_blob(13, texts.data(), texts.size());
  s.bind(14, e.target);
  if (e.regression.empty()) s.bind_null(15);
  else s.bind_blob(15, e.regression.data(), e.regression.size() * sizeof(Evaluation::Point));
  s.run();
}

std::optional<Evaluation> Project::evaluation(int64_t run) const {
  Statement s = db_->prepare(
      "SELECT count, loss, accuracy, class_names, confusion, misclassified, image_height, image_width, images, "
      "predictions, texts, target, regression "
      "FROM evaluations WHERE run = ?");
  s.bind(1, run);
  if (!s.step()) return std::nullopt;
  const std::string where = "project " + path() + ": the stored evaluation of run " + std::to_string(run);
  Evaluation e;
  e.count = s.int64(0);
  e.loss = s.real(1);
  e.accuracy = s.real(2);
  std::istringstream names(s.text(3));
  for (std::string line; std::getline(names, line);) e.class_names.push_back(line);
  const std::vector<char> confusion = s.blob(4);
  const size_t c = e.class_names.size();
  if (confusion.size() != c * c * sizeof(int64_t))
    throw ProjectError(where + " is damaged: " + std::to_string(confusion.size()) + " confusion bytes for " +
                       std::to_string(c) + " classes");
  e.confusion.resize(c * c);
  if (!confusion.empty()) std::memcpy(e.confusion.data(), confusion.data(), confusion.size());
  std::istringstream miss(s.text(5));
  for (std::string item; miss >> item;) {
    Evaluation::Misclassified m;
    char colon1 = 0, colon2 = 0;
    std::istringstream one(item);
    if (!(one >> m.index >> colon1 >> m.truth >> colon2 >> m.predicted) || colon1 != ':' || colon2 != ':')
      throw ProjectError(where + " is damaged: misclassified entry '" + item + "' is not index:truth:predicted");
    e.misclassified.push_back(m);
  }
  e.image_height = static_cast<int>(s.int64(6));
  e.image_width = static_cast<int>(s.int64(7));
  if (!s.is_null(8)) {
    const std::vector<char> images = s.blob(8);
    e.images.assign(images.begin(), images.end());
    if (e.images.size() != e.misclassified.size() * static_cast<size_t>(e.image_height * e.image_width))
      throw ProjectError(where + " is damaged: " + std::to_string(e.images.size()) + " image bytes");
  }
  if (!s.is_null(9)) {
    const std::vector<char> predictions = s.blob(9);
    if (predictions.size() % sizeof(Evaluation::Prediction) != 0)
      throw ProjectError(where + " is damaged: " + std::to_string(predictions.size()) +
                         " prediction bytes, not a multiple of 16");
    e.predictions.resize(predictions.size() / sizeof(Evaluation::Prediction));
    std::memcpy(e.predictions.data(), predictions.data(), predictions.size());
    for (const auto& p : e.predictions)
      if (p.truth < 0 || p.predicted < 0 || static_cast<size_t>(p.truth) >= c || static_cast<size_t>(p.predicted) >= c)
        throw ProjectError(where + " is damaged: the prediction of sample " + std::to_string(p.index) +
                           " has a label outside 0.." + std::to_string(c) + "-1");
  }
  if (!s.is_null(10)) e.texts = unpack_texts(s.blob(10), where);
  e.target = s.text(11);
  if (!s.is_null(12)) {
    const std::vector<char> points = s.blob(12);
    if (points.size() % sizeof(Evaluation::Point) != 0)
      throw ProjectError(where + " is damaged: " + std::to_string(points.size()) +
                         " regression bytes, not a multiple of 16");
    e.regression.resize(points.size() / sizeof(Evaluation::Point));
    std::memcpy(e.regression.data(), points.data(), points.size());
  }
  return e;
}

}  // namespace kiln::projects
