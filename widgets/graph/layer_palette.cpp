#include "widgets/graph/layer_palette.h"

#include <QMimeData>
#include <QVBoxLayout>
#include <map>

#include "engine/graph/op_schema.h"
#include "widgets/graph/graph_canvas.h"

namespace kiln::studio {

namespace {
constexpr int kOpRole = Qt::UserRole + 1;  // the op name on op items; empty on categories

// A tree whose drags carry the op name as kOpMimeType.
class OpTree : public QTreeWidget {
 public:
  using QTreeWidget::QTreeWidget;

 protected:
  QStringList mimeTypes() const override { return {kOpMimeType}; }
  QMimeData* mimeData(const QList<QTreeWidgetItem*>& items) const override {
    for (QTreeWidgetItem* item : items) {
      const QString op = item->data(0, kOpRole).toString();
      if (op.isEmpty()) continue;
      auto* mime = new QMimeData;
      mime->setData(kOpMimeType, op.toUtf8());
      mime->setText(op);
      return mime;
    }
    return nullptr;
  }
};
}  // namespace

LayerPalette::LayerPalette(QWidget* parent) : QWidget(parent) {
  search_ = new QLineEdit(this);
  search_->setPlaceholderText(tr("Search layers…"));
  search_->setClearButtonEnabled(true);
  tree_ = new OpTree(this);
  tree_->setHeaderHidden(true);
  tree_->setDragEnabled(true);
  tree_->setDragDropMode(QAbstractItemView::DragOnly);
  tree_->setDefaultDropAction(Qt::CopyAction);  // never a move: the palette keeps its items
  tree_->setSelectionMode(QAbstractItemView::SingleSelection);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(2, 2, 2, 2);
  layout->addWidget(search_);
  layout->addWidget(tree_);

  std::map<std::string, QTreeWidgetItem*> categories;  // all() is sorted by category, then name
  for (const graph::OpSchema* op : graph::OpRegistry::global().all()) {
    QTreeWidgetItem*& category = categories[op->category];
    if (!category) {
      category = new QTreeWidgetItem(tree_, {QString::fromStdString(op->category)});
      category->setFlags(Qt::ItemIsEnabled);
      QFont font = category->font(0);
      font.setBold(true);
      category->setFont(0, font);
    }
    auto* item = new QTreeWidgetItem(category, {QString::fromStdString(op->name)});
    item->setData(0, kOpRole, QString::fromStdString(op->name));
    item->setToolTip(0, QStringLiteral("<b>%1</b><br>%2")
                            .arg(QString::fromStdString(op->name),
                                 QString::fromStdString(op->description).toHtmlEscaped()));
    item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemIsDragEnabled);
  }
  tree_->expandAll();

  connect(search_, &QLineEdit::textChanged, this, &LayerPalette::setFilter);
  connect(tree_, &QTreeWidget::itemActivated, this, [this](QTreeWidgetItem* item) {
    const QString op = item->data(0, kOpRole).toString();
    if (!op.isEmpty()) emit layerActivated(op);
  });
  // Enter in the search box adds the only (or first) match.
  connect(search_, &QLineEdit::returnPressed, this, [this] {
    for (int c = 0; c < tree_->topLevelItemCount(); ++c) {
      QTreeWidgetItem* category = tree_->topLevelItem(c);
      for (int i = 0; i < category->childCount(); ++i)
        if (!category->child(i)->isHidden()) {
          emit layerActivated(category->child(i)->data(0, kOpRole).toString());
          return;
        }
    }
  });
}

QTreeWidgetItem* LayerPalette::itemForOp(const QString& op) const {
  for (int c = 0; c < tree_->topLevelItemCount(); ++c) {
    QTreeWidgetItem* category = tree_->topLevelItem(c);
    for (int i = 0; i < category->childCount(); ++i)
      if (category->child(i)->data(0, kOpRole).toString() == op) return category->child(i);
  }
  return nullptr;
}

void LayerPalette::setFilter(const QString& text) {
  const QString needle = text.trimmed();
  const auto* registry = &graph::OpRegistry::global();
  for (int c = 0; c < tree_->topLevelItemCount(); ++c) {
    QTreeWidgetItem* category = tree_->topLevelItem(c);
    bool any = false;
    for (int i = 0; i < category->childCount(); ++i) {
      QTreeWidgetItem* item = category->child(i);
      const QString op = item->data(0, kOpRole).toString();
      const graph::OpSchema* schema = registry->find(op.toStdString());
      const bool match = needle.isEmpty() || op.contains(needle, Qt::CaseInsensitive) ||
                         (schema && QString::fromStdString(schema->description)
                                        .contains(needle, Qt::CaseInsensitive));
      item->setHidden(!match);
      any = any || match;
    }
    category->setHidden(!any);
    category->setExpanded(true);
  }
  if (search_->text() != text) search_->setText(text);
}

}  // namespace kiln::studio
