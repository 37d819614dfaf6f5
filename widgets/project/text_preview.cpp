#include "widgets/project/text_preview.h"

#include <QHeaderView>
#include <QLabel>
#include <QPainter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>

#include "engine/data/text/utf8.h"

namespace kiln::studio {

namespace {

int64_t bin_low(size_t b) { return b == 0 ? 0 : int64_t{1} << (b - 1); }
int64_t bin_high(size_t b) { return b == 0 ? 0 : (int64_t{1} << b) - 1; }

}  // namespace

TextSummary summarize_text(const data::OpenedText& t, int samples) {
  TextSummary s;
  s.max_length = t.max_length;
  s.tokenizer = QObject::tr("%1 (vocabulary %2)").arg(QString::fromStdString(t.tokenizer->kind())).arg(t.tokenizer->vocab_size());
  std::vector<int64_t> lengths;
  for (const data::TextDataset* d : {t.train.get(), t.test.get()}) {
    for (int64_t i = 0; i < d->size(); ++i) lengths.push_back(d->length(i));
    s.truncated += d->truncated();
  }
  s.texts = static_cast<int64_t>(lengths.size());
  if (!lengths.empty()) {
    std::sort(lengths.begin(), lengths.end());
    s.median = lengths[lengths.size() / 2];
    s.longest = lengths.back();
  }
  for (int64_t len : lengths) {
    size_t b = 0;
    while ((int64_t{1} << b) <= len) ++b;  // bin b holds [2^(b-1), 2^b), bin 0 holds 0
    if (s.bins.size() <= b) s.bins.resize(b + 1, 0);
    ++s.bins[b];
  }
  s.unknown = t.train->tokens() > 0 ? static_cast<double>(t.train->unknown()) / static_cast<double>(t.train->tokens()) : 0;
  const data::TextDataset& train = *t.train;
  const int64_t n = train.size();
  for (int k = 0; k < samples && k < n; ++k) {
    const int64_t i = static_cast<int64_t>(k) * n / samples;  // evenly spaced over the split
    const data::TextSample& x = train.index().samples[static_cast<size_t>(train.positions()[static_cast<size_t>(i)])];
    TextSummary::Sample out;
    out.label = QString::fromStdString(train.index().classes[static_cast<size_t>(x.label)]);
    out.origin = QString::fromStdString(x.origin);
    out.text = QString::fromStdString(data::text_preview(x.text, 160));
    QStringList tokens;
    const std::vector<int64_t>& ids = train.ids(i);
    for (size_t j = 0; j < std::min<size_t>(ids.size(), 48); ++j) {
      const std::string p = train.tokenizer().piece(ids[j]);
      tokens << (p.find_first_not_of(" \t\r\n") == std::string::npos ? QString::fromUtf8("\u2423")
                                                                     : QString::fromStdString(data::text_preview(p, 40)));
    }
    if (ids.size() > 48) tokens << QString::fromUtf8("\u2026");
    out.tokens = tokens.join(' ');
    out.length = train.length(i);
    s.samples.push_back(std::move(out));
  }
  return s;
}

// ---- LengthHistogram ----

LengthHistogram::LengthHistogram(QWidget* parent) : QWidget(parent) {
  setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Fixed);  // never widens the dock
  setToolTip(tr("Tokens per text before truncation (all splits); bars past the max length are truncated"));
}

void LengthHistogram::setSummary(const TextSummary& s) {
  summary_ = s;
  updateGeometry();
  update();
}

QString LengthHistogram::binLabel(int bin) const {
  const auto b = static_cast<size_t>(bin);
  return b == 0 ? QString("0") : QString::fromUtf8("%1\u2013%2").arg(bin_low(b)).arg(bin_high(b));
}

QSize LengthHistogram::sizeHint() const { return {320, minimumSizeHint().height()}; }

QSize LengthHistogram::minimumSizeHint() const {
  const QFontMetrics fm(font());
  size_t first = 0;
  while (first < summary_.bins.size() && summary_.bins[first] == 0) ++first;
  const int rows = static_cast<int>(summary_.bins.size() - std::min(first, summary_.bins.size()));
  return {160, std::max(1, rows) * (fm.height() + 2) + 4};
}

void LengthHistogram::paintEvent(QPaintEvent*) {
  QPainter p(this);
  const QFontMetrics fm(font());
  if (summary_.bins.empty()) return;
  size_t first = 0;
  while (summary_.bins[first] == 0) ++first;  // the last bin is never empty
  const int64_t top = *std::max_element(summary_.bins.begin(), summary_.bins.end());
  const int labelW = fm.horizontalAdvance("16384\u201332767") + 8, countW = fm.horizontalAdvance("000000") + 8;
  const int barW = std::max(10, width() - labelW - countW);
  int y = 2;
  for (size_t b = first; b < summary_.bins.size(); ++b) {
    const int h = fm.height();
    p.setPen(palette().color(QPalette::WindowText));
    p.drawText(QRect(0, y, labelW - 6, h), Qt::AlignRight | Qt::AlignVCenter, binLabel(static_cast<int>(b)));
    const int w = static_cast<int>(static_cast<double>(barW) * static_cast<double>(summary_.bins[b]) / static_cast<double>(top));
    const bool cut = bin_high(b) > summary_.max_length;  // some or all of these texts are truncated
    p.fillRect(QRect(labelW, y + 2, std::max(1, w), h - 4), cut ? QColor(224, 140, 60) : QColor(70, 130, 200));
    p.drawText(QRect(labelW + w + 4, y, countW, h), Qt::AlignLeft | Qt::AlignVCenter, QString::number(summary_.bins[b]));
    y += h + 2;
  }
}

// ---- TextPreview ----

TextPreview::TextPreview(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  auto* title = new QLabel(tr("<b>Tokens per text</b> (before truncation):"));
  title->setWordWrap(true);
  title->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);  // never widens the dock
  layout->addWidget(title);
  histogram_ = new LengthHistogram;
  layout->addWidget(histogram_);
  figures_ = new QLabel;
  figures_->setWordWrap(true);
  figures_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  layout->addWidget(figures_);
  table_ = new QTableWidget(0, 4);
  table_->setHorizontalHeaderLabels({tr("Class"), tr("Text"), tr("Tokens"), tr("Length")});
  table_->verticalHeader()->setVisible(false);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setWordWrap(false);
  table_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
  table_->horizontalHeader()->setSectionResizeMode(1, QHeaderView::Interactive);
  table_->horizontalHeader()->setSectionResizeMode(2, QHeaderView::Interactive);
  table_->horizontalHeader()->setSectionResizeMode(3, QHeaderView::ResizeToContents);
  table_->setToolTip(tr("Samples of the training split: the text, and the tokens the model sees (<unk>: not in the "
                        "vocabulary; the text is cut at the max length)"));
  layout->addWidget(table_, 1);
}

void TextPreview::setSummary(const TextSummary& s) {
  histogram_->setSummary(s);
  figures_->setText(tr("Tokenizer %1, fitted on the training split. Median %2 tokens, longest %3; %4 of %5 texts "
                       "(%6 %) are longer than the max length %7 and truncated. Unknown tokens in the training split: %8 %.")
                        .arg(s.tokenizer)
                        .arg(s.median)
                        .arg(s.longest)
                        .arg(s.truncated)
                        .arg(s.texts)
                        .arg(s.texts ? 100.0 * double(s.truncated) / double(s.texts) : 0.0, 0, 'f', 1)
                        .arg(s.max_length)
                        .arg(100 * s.unknown, 0, 'f', 2));
  table_->setRowCount(static_cast<int>(s.samples.size()));
  for (int r = 0; r < static_cast<int>(s.samples.size()); ++r) {
    const TextSummary::Sample& x = s.samples[static_cast<size_t>(r)];
    table_->setItem(r, 0, new QTableWidgetItem(x.label));
    auto* text = new QTableWidgetItem(x.text);
    text->setToolTip(x.origin + "\n" + x.text);
    table_->setItem(r, 1, text);
    auto* tokens = new QTableWidgetItem(x.tokens);
    tokens->setToolTip(x.tokens);
    table_->setItem(r, 2, tokens);
    auto* len = new QTableWidgetItem(QString::number(x.length));
    len->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    table_->setItem(r, 3, len);
  }
  table_->setColumnWidth(1, 260);
  table_->setColumnWidth(2, 260);
}

}  // namespace kiln::studio
