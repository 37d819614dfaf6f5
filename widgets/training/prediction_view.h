// The predictions of a trained model on files the user gave (Kiln Studio's Predict): a caption
// naming the run, then one table row per input (an image file with its thumbnail, or a CSV row)
// with its three most probable classes and their probabilities (classification), its predicted
// value (regression), or why it has no prediction. It only shows what it is given: the model and
// the preprocessing run in app/studio (run_predictor.h).
#pragma once
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
};

class PredictionView : public QWidget {
  Q_OBJECT
 public:
  static constexpr int kThumbnailSide = 48;  // px, the longer side
  explicit PredictionView(QWidget* parent = nullptr);
  // "Predictions of run 3 '…' (epoch 2), …"; also used for "predicting 12 files…" and errors.
  void setCaption(const QString& text);
  // regression: one "value" column headed `valueName` (the label column) instead of the classes.
  void setRows(const QVector<PredictionRow>& rows, bool regression, const QString& valueName = QString());
  void clear();
  QLabel* caption() const { return caption_; }
  QTableWidget* table() const { return table_; }

 private:
  QLabel* caption_;
  QTableWidget* table_;
};

}  // namespace kiln::studio
