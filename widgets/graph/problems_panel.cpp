#include "widgets/graph/problems_panel.h"

#include <QHeaderView>
#include <QVBoxLayout>
#include <algorithm>

#include "widgets/graph/graph_warnings.h"

namespace kiln::studio {

namespace {
constexpr int kNodeRole = Qt::UserRole + 1;
}

ProblemsPanel::ProblemsPanel(GraphDocument* document, QWidget* parent)
    : QWidget(parent), doc_(document) {
  summary_ = new QLabel(this);
  list_ = new QTreeWidget(this);
  list_->setColumnCount(2);
  list_->setHeaderLabels({tr("Node"), tr("Problem")});
  list_->setRootIsDecorated(false);
  list_->setUniformRowHeights(true);
  list_->setWordWrap(true);
  list_->header()->setSectionResizeMode(0, QHeaderView::Interactive);
  list_->header()->setStretchLastSection(true);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  layout->addWidget(summary_);
  layout->addWidget(list_);
  auto activate = [this](QTreeWidgetItem* item) {
    const graph::NodeId id = item->data(0, kNodeRole).toLongLong();
    if (id >= 0 && doc_->graph().contains(id)) emit nodeActivated(id);
  };
  connect(list_, &QTreeWidget::itemClicked, this, activate);
  connect(list_, &QTreeWidget::itemActivated, this, activate);
  connect(doc_, &GraphDocument::changed, this, &ProblemsPanel::refresh);
  refresh();
}

void ProblemsPanel::setTrainingProblems(const std::vector<graph::Problem>& problems) {
  if (problems == training_) return;
  training_ = problems;
  refresh();
}

void ProblemsPanel::refresh() {
  const graph::Graph& g = doc_->graph();
  struct Row {
    graph::Problem problem;
    bool warning;
  };
  std::vector<Row> rows;
  for (const graph::Problem& p : doc_->analysis().problems) rows.push_back({p, false});
  for (const graph::Problem& p : training_) rows.push_back({p, false});
  const size_t problems = rows.size();
  for (const graph::Problem& p : graph_warnings(g, doc_->analysis())) rows.push_back({p, true});
  auto nodeText = [&](const graph::Problem& p) {
    const graph::Node* n = g.find(p.node);
    return n ? toQString(n->name) : p.node < 0 ? tr("(graph)") : tr("(removed)");
  };
  auto messageText = [](const Row& r) { return (r.warning ? QStringLiteral("⚠ ") : QString()) + toQString(r.problem.message); };
  // Rows are rebuilt only when the list changed: moves leave it alone.
  bool same = int(rows.size()) == list_->topLevelItemCount();
  for (int i = 0; same && i < int(rows.size()); ++i) {
    QTreeWidgetItem* item = list_->topLevelItem(i);
    const Row& r = rows[size_t(i)];
    same = item->data(0, kNodeRole).toLongLong() == r.problem.node && item->text(1) == messageText(r) &&
           item->text(0) == nodeText(r.problem);
  }
  if (same && !summary_->text().isEmpty()) return;
  list_->clear();
  for (const Row& r : rows) {
    auto* item = new QTreeWidgetItem(list_, {nodeText(r.problem), messageText(r)});
    item->setData(0, kNodeRole, qlonglong(r.problem.node));
    item->setToolTip(0, item->text(0));
    item->setToolTip(1, item->text(1));
    const QColor color = r.warning ? QColor(0xe0, 0xa0, 0x40) : QColor(0xe0, 0x52, 0x52);
    item->setForeground(0, color);
    if (r.warning) item->setForeground(1, color);
  }
  // The node column fits its names up to kMaxNodeColumn px (longer names are elided; the
  // full name is the tooltip), so that a long name never pushes the problem text away.
  list_->resizeColumnToContents(0);
  list_->setColumnWidth(0, std::min(list_->columnWidth(0), kMaxNodeColumn));
  const size_t warnings = rows.size() - problems;
  QString summary = problems ? tr("%n problem(s)", nullptr, int(problems)) : QString();
  if (warnings) summary += (problems ? QStringLiteral(", ") : QString()) + tr("%n warning(s)", nullptr, int(warnings));
  summary_->setText(summary.isEmpty() ? tr("No problems in the graph.") : summary);
}

}  // namespace kiln::studio
