// Text that must fit a narrow dock (the Studio's docks are about 230 px wide on a 1366x768
// laptop): a word-wrapped QLabel breaks lines only between words, so one long word (a file
// path, a 265-character node name) sets the label's minimum width and widens the dock or is
// cut at its edge. Header-only: used by the training and the project widget libraries.
#pragma once
#include <QFont>
#include <QFontMetrics>
#include <QRegularExpression>
#include <QString>
#include <QStringList>
#include <QTextLayout>
#include <QTextOption>

namespace kiln::studio {

// `text` with every run of non-space characters longer than `max` characters shortened to `max`
// characters: its first third, "…" (U+2026), and the rest from its end, where a path has its
// file name ("/home/al…/class_a/broken.png:"). The spaces between words are kept. max >= 3.
inline QString elideLongWords(const QString& text, int max) {
  static const QRegularExpression word(QStringLiteral("\\S+"));
  QString out;
  qsizetype last = 0;
  for (auto it = word.globalMatch(text); it.hasNext();) {
    const QRegularExpressionMatch m = it.next();
    out += text.mid(last, m.capturedStart() - last);
    const QString w = m.captured();
    out += w.size() <= max ? w : w.left(max / 3) + QChar(0x2026) + w.right(max - max / 3 - 1);
    last = m.capturedEnd();
  }
  return out + text.mid(last);
}

// `text` as a word-wrapped QLabel of `width` px in `font` lays it out, cut to at most `lines`
// lines: the lines joined by '\n', the last one ending in "…" when text was left out. Words
// wider than `width` are not broken (as in QLabel): shorten them first with elideLongWords.
// The whole text when width <= 0 (not laid out yet) or it fits.
inline QString elideToLines(const QString& text, const QFont& font, int width, int lines) {
  if (width <= 0 || lines < 1) return text;
  QString flow = text;
  flow.replace('\n', QChar::LineSeparator);  // a hard break, as QLabel shows '\n'
  QTextLayout layout(flow, font);
  QTextOption option;
  option.setWrapMode(QTextOption::WordWrap);
  layout.setTextOption(option);
  QStringList out;
  bool cut = false;
  layout.beginLayout();
  for (QTextLine line = layout.createLine(); line.isValid(); line = layout.createLine()) {
    line.setLineWidth(width);
    if (int(out.size()) == lines - 1 && line.textStart() + line.textLength() < flow.size()) {
      // The last line allowed, and more text follows: the rest, elided to this line.
      out << QFontMetrics(font).elidedText(flow.mid(line.textStart()).simplified(), Qt::ElideRight, width);
      cut = true;
      break;
    }
    out << flow.mid(line.textStart(), line.textLength()).trimmed();
  }
  layout.endLayout();
  return cut ? out.join('\n') : text;
}

}  // namespace kiln::studio
