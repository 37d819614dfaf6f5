// LayerPalette: every op of graph::OpRegistry::global(), grouped by category, with a
// search box filtering by name and description. Double-click (or Enter) emits
// layerActivated(op); dragging an op carries it as mime "application/x-kiln-op"
// (the op name in UTF-8) for GraphCanvas to drop.
#pragma once
#include <QLineEdit>
#include <QTreeWidget>
#include <QWidget>

namespace kiln::studio {

class LayerPalette : public QWidget {
  Q_OBJECT
 public:
  explicit LayerPalette(QWidget* parent = nullptr);
  QLineEdit* searchBox() const { return search_; }
  QTreeWidget* tree() const { return tree_; }
  // The tree item of an op (nullptr when unknown), for tests and keyboard navigation.
  QTreeWidgetItem* itemForOp(const QString& op) const;
  // Shows only ops whose name or description contains `text` (case-insensitive).
  void setFilter(const QString& text);

 signals:
  void layerActivated(QString op);

 private:
  QLineEdit* search_;
  QTreeWidget* tree_;
};

}  // namespace kiln::studio
