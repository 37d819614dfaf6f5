// LogPanel: the Studio's log — timestamped lines, errors in red, warnings in amber.
// Keeps the last kMaxLines lines.
#pragma once
#include <QWidget>

class QPlainTextEdit;

namespace kiln::studio {

class LogPanel : public QWidget {
  Q_OBJECT
 public:
  enum class Level { Info, Warning, Error };
  static constexpr int kMaxLines = 5000;
  explicit LogPanel(QWidget* parent = nullptr);
  QString text() const;  // the plain text shown
  int lineCount() const;

 public slots:
  void info(const QString& message) { append(Level::Info, message); }
  void warning(const QString& message) { append(Level::Warning, message); }
  void error(const QString& message) { append(Level::Error, message); }
  void append(kiln::studio::LogPanel::Level level, const QString& message);
  void clear();

 private:
  QPlainTextEdit* view_;
};

}  // namespace kiln::studio
