#include "widgets/training/log_panel.h"

#include <QPlainTextEdit>
#include <QPushButton>
#include <QTime>
#include <QVBoxLayout>

namespace kiln::studio {

LogPanel::LogPanel(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  view_ = new QPlainTextEdit(this);
  view_->setReadOnly(true);
  view_->setMaximumBlockCount(kMaxLines);
  view_->setFont(QFont("monospace"));
  view_->setPlaceholderText(tr("Messages from training and the editor appear here."));
  layout->addWidget(view_);
  auto* clearButton = new QPushButton(tr("Clear"), this);
  connect(clearButton, &QPushButton::clicked, this, &LogPanel::clear);
  layout->addWidget(clearButton, 0, Qt::AlignRight);
}

void LogPanel::append(Level level, const QString& message) {
  const char* colour = level == Level::Error ? "#e05050" : level == Level::Warning ? "#d89a20" : nullptr;
  const QString prefix = level == Level::Error ? tr("error: ") : level == Level::Warning ? tr("warning: ") : QString();
  const QString line = QTime::currentTime().toString("HH:mm:ss") + "  " + prefix + message;
  if (colour)
    view_->appendHtml(QString("<span style=\"color:%1\">%2</span>").arg(colour, line.toHtmlEscaped()));
  else
    view_->appendHtml(line.toHtmlEscaped());
}

void LogPanel::clear() { view_->clear(); }
QString LogPanel::text() const { return view_->toPlainText(); }
int LogPanel::lineCount() const { return view_->document()->isEmpty() ? 0 : view_->blockCount(); }

}  // namespace kiln::studio
