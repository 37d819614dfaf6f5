// ProblemsPanel: every problem of the document's analysis (node name + message),
// refreshed on each change. Clicking (or activating) a row emits nodeActivated(id)
// for node problems; graph-level problems ("no Output node") have no node.
#pragma once
#include <QLabel>
#include <QTreeWidget>
#include <QWidget>

#include "widgets/graph/graph_document.h"

namespace kiln::studio {

class ProblemsPanel : public QWidget {
  Q_OBJECT
 public:
  static constexpr int kMaxNodeColumn = 180;  // px; longer node names are elided
  explicit ProblemsPanel(GraphDocument* document, QWidget* parent = nullptr);
  QTreeWidget* list() const { return list_; }
  int count() const { return list_->topLevelItemCount(); }
  // "N problem(s)", or "No problems in the graph." (the graph only: training may still
  // be blocked elsewhere, e.g. by the dataset's shape).
  QString summaryText() const { return summary_->text(); }

 signals:
  void nodeActivated(kiln::graph::NodeId id);

 private:
  void refresh();
  GraphDocument* doc_;
  QLabel* summary_;
  QTreeWidget* list_;
};

}  // namespace kiln::studio
