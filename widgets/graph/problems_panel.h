// ProblemsPanel: every problem of the document's analysis (node name + message), then the
// training problems the window sets (the graph does not fit the data set: the same reasons
// the Training panel gives), then the warnings (graph_warnings.h, amber, "⚠"), refreshed on
// each change. Clicking (or activating) a row emits nodeActivated(id) for node problems;
// graph-level problems ("no Output node") have no node.
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
  // "N problem(s)" and ", M warning(s)", or "No problems in the graph.".
  QString summaryText() const { return summary_->text(); }
  // Problems of training this graph that its analysis does not report (an Output that is
  // not [N, 10], an Input that does not fit the data set); shown after the analysis's.
  void setTrainingProblems(const std::vector<graph::Problem>& problems);

 signals:
  void nodeActivated(kiln::graph::NodeId id);

 private:
  void refresh();
  GraphDocument* doc_;
  std::vector<graph::Problem> training_;
  QLabel* summary_;
  QTreeWidget* list_;
};

}  // namespace kiln::studio
