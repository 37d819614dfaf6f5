#include "app/studio/run_restore.h"

#include <nlohmann/json.hpp>

#include <QVector>
#include <algorithm>

#include "engine/data/fashion_mnist.h"
#include "widgets/training/live_plots.h"

namespace kiln::studio {

EvaluationResult toEvaluationResult(const projects::Evaluation& e) {
  EvaluationResult r;
  r.count = e.count;
  r.loss = e.loss;
  r.accuracy = e.accuracy;
  for (const std::string& name : e.class_names) r.classNames << QString::fromStdString(name);
  r.confusion = e.confusion;
  const size_t pixels = static_cast<size_t>(e.image_height) * static_cast<size_t>(e.image_width);
  for (size_t i = 0; i < e.misclassified.size(); ++i) {
    QImage image;
    if (pixels > 0 && e.images.size() >= (i + 1) * pixels) {
      image = QImage(e.image_width, e.image_height, QImage::Format_Grayscale8);
      for (int y = 0; y < e.image_height; ++y)
        std::copy_n(e.images.data() + i * pixels + static_cast<size_t>(y * e.image_width), e.image_width,
                    image.scanLine(y));
    }
    r.misclassified.push_back({image, e.misclassified[i].truth, e.misclassified[i].predicted, e.misclassified[i].index});
  }
  r.predictions.reserve(static_cast<qsizetype>(e.predictions.size()));
  for (const projects::Evaluation::Prediction& p : e.predictions) r.predictions.push_back({p.index, p.truth, p.predicted, p.probability});
  for (const projects::Evaluation::Text& t : e.texts) {
    r.textOrigins << QString::fromStdString(t.origin);
    r.texts << QString::fromStdString(t.text);
    r.textTokens << QString::fromStdString(t.tokens);
  }
  r.target = QString::fromStdString(e.target);
  for (const projects::Evaluation::Point& p : e.regression) {
    r.actual << p.actual;
    r.predicted << p.predicted;
  }
  // The Studio trains on Fashion-MNIST only; a run's own directory replaces this (TrainingSession).
  if (!e.predictions.empty()) r.imageDir = QString::fromUtf8(data::FashionMNIST::kDefaultDir);
  return r;
}

bool showStoredRun(const projects::Project& project, int64_t run, LivePlots* plots, EvaluationView* evaluation,
                   QString* error) {
  plots->clear();
  evaluation->clear();
  try {
    const auto steps = project.step_metrics(run);
    QVector<double> x, loss, lr, time, epoch;
    for (QVector<double>* v : {&x, &loss, &lr, &time, &epoch}) v->reserve(static_cast<qsizetype>(steps.size()));
    for (const projects::StepMetric& m : steps) {
      x << static_cast<double>(m.step);
      loss << m.loss;
      lr << m.lr;
      time << m.time_s;
      epoch << m.epoch;
    }
    if (!x.isEmpty()) plots->addSteps(x, loss, lr, time, epoch);
    for (const projects::EpochMetric& m : project.epoch_metrics(run))
      plots->addEpoch(m.epoch, m.train_loss, m.train_accuracy, m.val_loss, m.val_accuracy);
    plots->fitToData();
    if (auto e = project.evaluation(run)) {
      EvaluationResult r = toEvaluationResult(*e);
      // A run on another dataset than Fashion-MNIST (an image folder, a table) shows its stored
      // misclassified thumbnails only: its test files are not kept with the run.
      for (const projects::RunRecord& rec : project.runs())
        if (rec.id == run) {
          const nlohmann::json config = nlohmann::json::parse(rec.config_json, nullptr, false);
          if (config.is_object() && config.contains("dataset") && config["dataset"].is_object() &&
              config["dataset"].value("name", std::string("fashion-mnist")) != "fashion-mnist")
            r.imageDir.clear();
        }
      evaluation->setResult(r);
    }
  } catch (const std::exception& e) {
    plots->clear();
    evaluation->clear();
    if (error) *error = QString::fromUtf8(e.what());
    return false;
  }
  return true;
}

}  // namespace kiln::studio
