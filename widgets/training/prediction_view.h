// The predictions of a trained model on files the user gave (Kiln Studio's Predict): a caption
// naming the run, then one table row per input (an image file with its thumbnail, or a CSV row)
// with its three most probable classes and their probabilities (classification), its predicted
// value (regression), or why it has no prediction; with an explanation method chosen (Grad-CAM or
// saliency), a column with the image as the model saw it under its heat map. It only shows what
// it is given: the model, the preprocessing and the maps run in app/studio (run_predictor.h).
#pragma once
#include <QComboBox>
#include <QImage>
#include <QLabel>
#include <QStringList>
#include <QTableWidget>
#include <QVector>
#include <QWidget>

namespace kiln::studio {

struct PredictionRow {
  QString input;       // the file, or FILE:LINE of a table row
  QImage thumbnail;    // an image input's picture (null: none, e.g. an undecodable file or a table row)
  QString error;       // why there is no prediction ("" = there is one)
  QStringList classes; // classification: the most probable classes first
  QVector<float> probabilities;  // their softmax probabilities in [0, 1]
  double value = 0;    // regression: the predicted value
  QImage explanation;  // the heat map over what the model saw (heatOverlay); null: none
  QString explanationNote;  // its layer, or why there is none
};

// The image the model saw (f32 [channels, height, width] in [0, 1], grey or RGB) with a heat map
// (f32 [height, width] in [0, 1]) blended over it half and half, in the "jet" colours (blue 0,
// green 0.5, red 1) that Grad-CAM's paper and pytorch-grad-cam show. Null for sizes that do not fit.
QImage heatOverlay(const std::vector<float>& seen, const std::vector<float>& heat, int channels, int height, int width);

class PredictionView : public QWidget {
  Q_OBJECT
 public:
  static constexpr int kThumbnailSide = 48;  // px, the longer side
  static constexpr int kExplanationSide = 96;  // px, the heat maps' longer side
  enum ExplainMethod { noExplanation = 0, gradCam = 1, saliency = 2 };
  explicit PredictionView(QWidget* parent = nullptr);
  // "Predictions of run 3 '…' (epoch 2), …"; also used for "predicting 12 files…" and errors.
  void setCaption(const QString& text);
  // regression: one "value" column headed `valueName` (the label column) instead of the classes.
  void setRows(const QVector<PredictionRow>& rows, bool regression, const QString& valueName = QString());
  void clear();
  QLabel* caption() const { return caption_; }
  QTableWidget* table() const { return table_; }
  QComboBox* explainMethod() const { return explain_; }

 signals:
  // The user chose another explanation method (ExplainMethod): the predictions are to be made again.
  void explainMethodChanged(int method);

 private:
  QLabel* caption_;
  QComboBox* explain_;
  QTableWidget* table_;
};

}  // namespace kiln::studio
