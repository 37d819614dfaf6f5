// PropertyEditor: the selected node's name (editable), op, inferred input/output
// types, parameter count and multiply-adds, problems, and one widget per attribute
// generated from its AttrSpec:
//   Int -> QSpinBox (range from min/max), Float -> QDoubleSpinBox, Bool -> QCheckBox,
//   Choice -> QComboBox, String -> QLineEdit, Ints -> QLineEdit ("3, 3");
// the unit is the suffix, the description the tooltip. A node kept as onnx.<op_type>
// shows its ONNX attributes as read-only rows (onnx_attribute_rows.h) instead of the
// import's JSON bookkeeping. A node with parameters has a "Trainable" check box
// (GraphDocument::setTrainable; unchecked: frozen). Edits go through
// GraphDocument::setAttribute / renameNode (undoable); a rejected value shows the
// reason in the editor and the widget reverts to the graph's value.
// Spin boxes and combo boxes take the mouse wheel only while they have keyboard focus
// (Qt::StrongFocus); an unfocused one passes the wheel on, so it scrolls the panel.
// Ctrl+Z in a focused text field (name, spin box, list) undoes the field's own typing while
// it is uncommitted (QLineEdit::isModified), and otherwise the graph's last edit (the
// window's Edit > Undo); Ctrl+Shift+Z / Ctrl+Y likewise for redo.
#pragma once
#include <QLabel>
#include <QLineEdit>
#include <QList>
#include <QWidget>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/graph/op_schema.h"
#include "widgets/graph/graph_document.h"

class QCheckBox;
class QFormLayout;
class QKeyEvent;

namespace kiln::studio {

class PropertyEditor : public QWidget {
  Q_OBJECT
 public:
  explicit PropertyEditor(GraphDocument* document, QWidget* parent = nullptr);
  graph::NodeId node() const { return node_; }
  // The editor widget of an attribute (nullptr when none), the name field and the
  // message line (for tests).
  QWidget* editor(const QString& attribute) const;
  QLineEdit* nameEdit() const { return nameEdit_; }
  QString errorText() const { return error_ ? error_->text() : QString(); }
  QString outputsText() const { return outputs_ ? outputs_->text() : QString(); }
  // The value label of an ONNX attribute row ("axes"), nullptr when none is shown.
  QLabel* onnxRow(const QString& name) const;
  // The "Trainable" check box; hidden for nodes without parameters.
  QCheckBox* trainableBox() const { return trainable_; }

 public slots:
  void setNode(graph::NodeId id);  // -1: nothing selected
  // Shows the node when exactly one is selected, nothing otherwise.
  void setSelection(const QList<kiln::graph::NodeId>& nodes);

 protected:
  // Ignores QEvent::Wheel on an unfocused spin box or combo box (it then reaches the
  // scroll area); everything else goes through unchanged.
  // Also lets QEvent::ShortcutOverride for Undo / Redo through to the window when the
  // field has nothing of its own to undo (fieldTakesShortcut).
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  static QLineEdit* textField(QObject* editor);  // the QLineEdit of a line edit or spin box
  static bool fieldTakesShortcut(QObject* editor, const QKeyEvent& key);
  void rebuild();
  void refresh();
  void commit(const std::string& name, const graph::AttrValue& value);
  void showError(const QString& text);
  QWidget* makeEditor(const graph::AttrSpec& spec);
  void setEditorValue(const graph::AttrSpec& spec, QWidget* editor, const graph::AttrValue& v);

  GraphDocument* doc_;
  graph::NodeId node_ = -1;
  std::string builtOp_;
  QWidget* content_ = nullptr;
  QLabel* placeholder_ = nullptr;
  QLineEdit* nameEdit_ = nullptr;
  QLabel* op_ = nullptr;
  QLabel* inputs_ = nullptr;
  QLabel* outputs_ = nullptr;
  QLabel* params_ = nullptr;
  QLabel* problems_ = nullptr;
  QLabel* error_ = nullptr;
  QCheckBox* trainable_ = nullptr;
  QLabel* trainableLabel_ = nullptr;
  std::map<std::string, QWidget*> editors_;
  std::map<QString, QLabel*> onnxRows_;
};

// "3, 3" -> {3, 3} (brackets and spaces allowed); nullopt when not a list of integers.
std::optional<std::vector<int64_t>> parseInts(const QString& text);
// {3, 3} -> "3, 3"
QString formatInts(const std::vector<int64_t>& values);

}  // namespace kiln::studio
