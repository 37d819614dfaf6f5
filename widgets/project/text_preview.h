// What the Dataset panel shows of a text dataset (engine/data/dataset_source.h's OpenedText):
// sample texts of the training split with the tokens the model sees, and a histogram of the
// token counts per text (before truncation, in power-of-two bins, as `kiln dataset inspect
// text:...`) with the share that the max length truncates.
#pragma once
#include <QString>
#include <QStringList>
#include <QWidget>
#include <cstdint>
#include <vector>

#include "engine/data/dataset_source.h"

class QLabel;
class QTableWidget;

namespace kiln::studio {

struct TextSummary {
  struct Sample {
    QString label, origin, text;  // text: the first 160 code points on one line
    QString tokens;               // the first 48 pieces the model sees, space separated (a blank piece as ␣)
    int64_t length = 0;           // tokens before truncation
  };
  std::vector<Sample> samples;    // evenly spaced over the training split
  // bins[b]: texts with a token count in [lo(b), hi(b)], lo(0) = hi(0) = 0, else [2^(b-1), 2^b - 1].
  std::vector<int64_t> bins;
  int64_t max_length = 0, truncated = 0, texts = 0;  // truncated: texts longer than max_length
  int64_t median = 0, longest = 0;                   // token counts before truncation
  double unknown = 0;                                // share of <unk> among the kept training tokens
  QString tokenizer;                                 // "word (vocabulary 20000)"
};

// Fills a TextSummary from an opened text dataset: `samples` texts of its training split and the
// token counts of its training and test texts.
TextSummary summarize_text(const data::OpenedText& text, int samples);

// The token-length histogram: one bar per bin, labelled with its range and count; the bins past
// the max length drawn in the warning colour.
class LengthHistogram : public QWidget {
  Q_OBJECT
 public:
  explicit LengthHistogram(QWidget* parent = nullptr);
  void setSummary(const TextSummary& s);
  QString binLabel(int bin) const;  // "16–31"
  int binCount() const { return static_cast<int>(summary_.bins.size()); }
  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 protected:
  void paintEvent(QPaintEvent*) override;

 private:
  TextSummary summary_;
};

// The histogram, one line of figures, and a table of sample texts (class, text, tokens, length).
class TextPreview : public QWidget {
  Q_OBJECT
 public:
  explicit TextPreview(QWidget* parent = nullptr);
  void setSummary(const TextSummary& s);
  QTableWidget* sampleTable() const { return table_; }  // columns: class, text, tokens, length
  LengthHistogram* histogram() const { return histogram_; }
  QLabel* figuresLabel() const { return figures_; }

 private:
  LengthHistogram* histogram_;
  QLabel* figures_;
  QTableWidget* table_;
};

}  // namespace kiln::studio
