#include "widgets/graph/problems_panel.h"

#include <QHeaderView>
#include <QVBoxLayout>
#include <algorithm>

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

void ProblemsPanel::refresh() {
  const graph::Graph& g = doc_->graph();
  const std::vector<graph::Problem>& problems = doc_->analysis().problems;
  // Rows are rebuilt only when the problem list changed: moves leave it alone.
  bool same = int(problems.size()) == list_->topLevelItemCount();
  for (int i = 0; same && i < int(problems.size()); ++i) {
    QTreeWidgetItem* item = list_->topLevelItem(i);
    const graph::Problem& p = problems[size_t(i)];
    const graph::Node* n = g.find(p.node);
    same = item->data(0, kNodeRole).toLongLong() == p.node && item->text(1) == toQString(p.message) &&
           item->text(0) == (n ? toQString(n->name) : tr("(graph)"));
  }
  if (same && !summary_->text().isEmpty()) return;
  list_->clear();
  for (const graph::Problem& p : problems) {
    const graph::Node* n = g.find(p.node);
    auto* item = new QTreeWidgetItem(list_, {n ? toQString(n->name) : tr("(graph)"), toQString(p.message)});
    item->setData(0, kNodeRole, qlonglong(p.node));
    item->setToolTip(0, item->text(0));
    item->setToolTip(1, toQString(p.message));
    item->setForeground(0, QColor(0xe0, 0x52, 0x52));
  }
  // The node column fits its names up to kMaxNodeColumn px (longer names are elided; the
  // full name is the tooltip), so that a long name never pushes the problem text away.
  list_->resizeColumnToContents(0);
  list_->setColumnWidth(0, std::min(list_->columnWidth(0), kMaxNodeColumn));
  summary_->setText(problems.empty() ? tr("No problems in the graph.")
                                     : tr("%n problem(s)", nullptr, int(problems.size())));
}

}  // namespace kiln::studio
