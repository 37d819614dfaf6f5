#include "app/studio/run_predictor.h"

#include <QTemporaryDir>
#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <numeric>

#include "app/studio/training_job.h"
#include "engine/core/error.h"
#include "engine/core/grad_mode.h"
#include "engine/core/ops.h"
#include "engine/data/dataset_source.h"
#include "engine/data/fashion_mnist.h"
#include "engine/data/predict_input.h"
#include "engine/explain/explain.h"
#include "engine/graph/graph_module.h"
#include "engine/graph/json.h"
#include "engine/io/checkpoint.h"
#include "projects/project.h"
#include "widgets/project/dataset_settings.h"

namespace kiln::studio {

namespace {

// An input without its prediction yet (error "") or with the reason it has none.
PredictedInput unpredicted(const std::string& input, const std::string& error) {
  PredictedInput p;
  p.input = input;
  p.error = error;
  return p;
}

// The image file names Kiln reads (data::is_image_file_name, which needs OpenCV's headers).
bool looks_like_image(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const char* e : {".jpg", ".jpeg", ".jpe", ".png", ".ppm", ".pgm", ".bmp", ".tif", ".tiff", ".webp"})
    if (ext == e) return true;
  return false;
}

}  // namespace

std::string preprocessing_json(const data::OpenedDataset& d) {
  if (d.images) return nlohmann::json{{"images", nlohmann::json::parse(data::run_images_json(d.images->run))}}.dump();
  KILN_CHECK(d.table && d.table_config, ValueError, d.path, ": only image and table runs keep a preprocessing");
  return nlohmann::json{{"table", nlohmann::json::parse(data::run_table_json(*d.table_config, d.table->schema))}}.dump();
}

std::shared_ptr<RunPredictor> RunPredictor::load(const std::string& project_path, int64_t run) {
  const projects::Project project = projects::Project::open(project_path);
  const std::vector<projects::RunRecord> runs = project.runs();
  auto it = std::find_if(runs.begin(), runs.end(), [&](const projects::RunRecord& r) { return r.id == run && !r.deleted; });
  KILN_CHECK(it != runs.end(), ValueError, "the project has no run ", run);
  KILN_CHECK(it->status == projects::RunStatus::finished, ValueError, "run ", run, " did not finish (",
             projects::to_string(it->status), "): predictions need a finished run");
  const std::vector<int> epochs = project.checkpoint_epochs(run);
  KILN_CHECK(!epochs.empty(), ValueError, "run ", run, " has no checkpoint stored in the project");
  const int epoch = *std::max_element(epochs.begin(), epochs.end());  // the weights its evaluation used
  std::optional<projects::GraphVersion> version;
  for (projects::GraphVersion& v : project.graph_versions())
    if (v.id == it->graph_version) version = std::move(v);
  KILN_CHECK(version.has_value(), ValueError, "run ", run, "'s graph (version ", it->graph_version, ") is not in the project");

  // The run's dataset settings and seed, as TrainingSession recorded them (its config_json).
  const nlohmann::json config = nlohmann::json::parse(it->config_json, nullptr, false);
  KILN_CHECK(config.is_object(), ValueError, "run ", run, "'s settings are not readable JSON");
  const DatasetSettings dataset =
      config.contains("dataset") ? DatasetSettings::from_json(config["dataset"].dump()) : DatasetSettings();
  const uint64_t seed = config.value("seed", uint64_t{0});

  auto p = std::shared_ptr<RunPredictor>(new RunPredictor());
  p->run_ = run;
  std::string data = "Fashion-MNIST";
  if (dataset.is_fashion_mnist()) {
    for (int64_t c : dataset.class_list()) p->classes_.push_back(data::FashionMNIST::kClassNames[static_cast<size_t>(c)]);
    p->image_ = std::make_shared<data::ImageRun>(data::idx_image_run(p->classes_));
  } else if (const std::string stored = project.run_preprocessing(run); !stored.empty()) {
    // The preprocessing fitted when the run trained: its data need not be there any more.
    const std::string where = project_path + ": run " + std::to_string(run) + "'s stored preprocessing";
    const nlohmann::json j = nlohmann::json::parse(stored, nullptr, false);
    KILN_CHECK(j.is_object(), IoError, where, " is not readable JSON");
    p->stored_ = true;
    if (j.contains("images")) {
      p->image_ = std::make_shared<data::ImageRun>(data::parse_run_images(j["images"].dump(), where));
      p->classes_ = p->image_->classes;
      data = "the preprocessing stored with the run (" + p->image_->config.kind + " " + p->image_->config.path + ", " +
             std::to_string(p->image_->channels) + " x " + std::to_string(p->image_->height) + " x " +
             std::to_string(p->image_->width) + ")";
    } else {
      KILN_CHECK(j.contains("table"), IoError, where, " holds neither \"images\" nor \"table\"");
      auto t = data::parse_run_table(j["table"].dump(), where);
      p->regression_ = t.second.task == data::Task::regression;
      p->classes_ = t.second.classes;
      p->label_ = t.second.label;
      data = "the preprocessing stored with the run (table " + t.first.path + ")";
      p->table_ = std::make_shared<std::pair<data::TableConfig, data::TabularSchema>>(std::move(t));
    }
  } else {
    KILN_CHECK(dataset.name != "text", ValueError, "run ", run, " was trained on texts; Predict takes images and tables");
    const data::OpenedDataset d = data::open_dataset(dataset.source(seed));
    data = d.description() + " (opened again: the run, stored by an older Kiln, keeps no preprocessing)";
    p->regression_ = d.regression;
    p->classes_ = d.classes;
    if (d.images) {
      p->image_ = std::make_shared<data::ImageRun>(d.images->run);
    } else {
      KILN_CHECK(d.table && d.table_config, ValueError, "run ", run, "'s dataset (", dataset.spec(), ") is neither images nor a table");
      p->table_ = std::make_shared<std::pair<data::TableConfig, data::TabularSchema>>(*d.table_config, d.table->schema);
      p->label_ = d.table->schema.label;
    }
  }

  QTemporaryDir dir;
  KILN_CHECK(dir.isValid(), IoError, "cannot create a temporary folder for run ", run, "'s checkpoint");
  project.restore_checkpoint(run, epoch, dir.path().toStdString());
  const nn::StateDict state = io::load_checkpoint(dir.path().toStdString()).model;
  auto model = std::make_shared<graph::GraphModule>(graph::from_json(version->graph_json, &project.blobs()));
  model->load_state_dict(state);
  model->eval();
  p->model_ = model;
  p->description_ = "run " + std::to_string(run) + " '" + it->name + "' (epoch " + std::to_string(epoch) + "), " + data;
  return p;
}

void RunPredictor::fill(const Tensor& x, int64_t top_k, PredictedInput* out) const {
  NoGradGuard no_grad;
  const Tensor y = model_->forward(x);
  const int64_t n = x.size(0), outputs = regression_ ? 1 : static_cast<int64_t>(classes_.size());
  KILN_CHECK(y.dim() == 2 && y.size(0) == n && y.size(1) == outputs, ShapeError, "the model's output ",
             shape_str(y.shape()), " is not [", n, ", ", outputs, "]");
  // As kiln predict and train::evaluate: the softmax of the logits, the most probable first
  // (ties to the lower class).
  const std::vector<float> p = (regression_ ? y : softmax(y, 1)).contiguous().to_vector<float>();
  const int64_t k = std::min(top_k, outputs);
  for (int64_t i = 0; i < n; ++i) {
    const float* row = p.data() + i * outputs;
    if (regression_) {
      out[i].value = row[0];
      continue;
    }
    std::vector<int64_t> order(static_cast<size_t>(outputs));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return row[a] > row[b]; });
    for (int64_t j = 0; j < k; ++j) out[i].top.push_back({order[static_cast<size_t>(j)], row[order[static_cast<size_t>(j)]]});
  }
}

void RunPredictor::explainImage(const float* image, Explain explain, PredictedInput& r) const {
  const data::ImageRun& ir = *image_;
  const int64_t hw = ir.height * ir.width;
  std::vector<float> pixels(image, image + ir.channels * hw);
  try {
    const Tensor x = Tensor::from_vector(pixels, {ir.channels, ir.height, ir.width});
    const explain::Explanation e = explain == Explain::grad_cam ? explain::grad_cam(*model_, x) : explain::saliency(*model_, x);
    r.heat = e.map.contiguous().to_vector<float>();
    if (explain == Explain::saliency) {  // not normalised by the engine: scaled by its maximum for display
      const float peak = *std::max_element(r.heat.begin(), r.heat.end());
      for (float& v : r.heat) v = peak > 0 ? v / peak : 0.0f;
    }
    r.explain_layer = e.layer;
  } catch (const std::exception& e) {
    r.explain_error = plain_error(e);
    return;
  }
  for (int64_t c = 0; c < ir.channels; ++c) {  // undo Normalize: x * std + mean
    const size_t k = static_cast<size_t>(c);
    const double m = k < ir.mean.size() ? ir.mean[k] : 0.0, sd = k < ir.stddev.size() ? ir.stddev[k] : 1.0;
    for (int64_t i = 0; i < hw; ++i) {
      float& v = pixels[static_cast<size_t>(c * hw + i)];
      v = std::clamp(static_cast<float>(v * sd + m), 0.0f, 1.0f);
    }
  }
  r.seen = std::move(pixels);
  r.channels = ir.channels, r.height = ir.height, r.width = ir.width;
}

void RunPredictor::predictImages(const std::vector<std::string>& files, int64_t top_k, Explain explain,
                                 std::vector<PredictedInput>& out) const {
  const data::ImageRun& ir = *image_;
  const int64_t per = ir.channels * ir.height * ir.width;
  constexpr size_t kBatch = 64;
  for (size_t start = 0; start < files.size(); start += kBatch) {
    std::vector<size_t> rows;  // positions in `out` of the decoded images
    std::vector<float> buf;
    for (size_t i = start; i < std::min(files.size(), start + kBatch); ++i) {
      PredictedInput r;
      r.input = files[i];
      try {
        KILN_CHECK(looks_like_image(files[i]), IoError, files[i], ": not an image file (jpg, jpeg, jpe, png, ppm, pgm, bmp, "
                   "tif, tiff, webp), but this run was trained on images");
        buf.resize(buf.size() + static_cast<size_t>(per));
        try {
          data::read_image_input(files[i], ir, buf.data() + (buf.size() - static_cast<size_t>(per)));
        } catch (...) {
          buf.resize(buf.size() - static_cast<size_t>(per));
          throw;
        }
        rows.push_back(out.size());
      } catch (const std::exception& e) {
        r.error = plain_error(e);
      }
      out.push_back(std::move(r));
    }
    if (rows.empty()) continue;
    std::vector<PredictedInput> batch(rows.size());
    fill(Tensor::from_vector(buf, {static_cast<int64_t>(rows.size()), ir.channels, ir.height, ir.width}), top_k, batch.data());
    for (size_t j = 0; j < rows.size(); ++j) {
      out[rows[j]].top = std::move(batch[j].top);
      out[rows[j]].value = batch[j].value;
      if (explain != Explain::none) explainImage(buf.data() + j * static_cast<size_t>(per), explain, out[rows[j]]);
    }
  }
}

void RunPredictor::predictTable(const std::string& file, int64_t top_k, std::vector<PredictedInput>& out) const {
  data::TableInput in;
  try {
    KILN_CHECK(!looks_like_image(file), IoError, file, ": an image, but this run was trained on the table ",
               table_->first.path, "; give a CSV file of its columns");
    in = data::read_table_input(file, table_->first, table_->second);
  } catch (const std::exception& e) {
    out.push_back(unpredicted(file, plain_error(e)));
    return;
  }
  const size_t first = out.size();
  for (const std::string& row : in.inputs) out.push_back(unpredicted(row, ""));
  if (!in.inputs.empty()) fill(in.x, top_k, out.data() + first);
  for (const data::UnseenCategory& u : in.unseen) {
    std::string& note = out[first + u.input].note;
    note += (note.empty() ? "" : "; ") + ("column '" + u.column + "': '" + u.value + "' was not seen in training");
  }
  for (const std::string& row : in.dropped)
    out.push_back(unpredicted(row, "left out: a missing value (the run's missing-value policy drops such rows)"));
}

std::vector<PredictedInput> RunPredictor::predict(const std::vector<std::string>& files, int64_t top_k,
                                                  Explain explain) const {
  std::vector<PredictedInput> out;
  if (table_)
    for (const std::string& f : files) predictTable(f, top_k, out);
  else
    predictImages(files, top_k, explain, out);
  return out;
}

}  // namespace kiln::studio
