#include "widgets/graph/property_editor.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QEvent>
#include <QKeyEvent>
#include <QFormLayout>
#include <QRegularExpressionValidator>
#include <QScrollArea>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QVBoxLayout>
#include <climits>
#include <cmath>

#include "engine/graph/op_schema.h"
#include "widgets/graph/graph_items.h"
#include "widgets/graph/onnx_attribute_rows.h"

namespace kiln::studio {

namespace {
// A QDoubleSpinBox that shows values in their shortest form (1e-05, 0.1) instead of
// a fixed number of decimals, so eps = 1e-5 and momentum = 0.1 both read naturally.
class FloatSpinBox : public QDoubleSpinBox {
 public:
  using QDoubleSpinBox::QDoubleSpinBox;
  QString textFromValue(double v) const override { return QString::number(v, 'g', 12); }
  double valueFromText(const QString& text) const override { return text.toDouble(); }
  QValidator::State validate(QString& text, int&) const override {
    bool ok = false;
    text.toDouble(&ok);
    if (ok) return QValidator::Acceptable;
    static const QRegularExpression partial(R"(^[-+]?\d*\.?\d*([eE][-+]?\d*)?$)");
    return partial.match(text).hasMatch() ? QValidator::Intermediate : QValidator::Invalid;
  }
};

QString typesText(const graph::OpSchema* schema, const std::vector<graph::TensorType>& types,
                  bool inputs) {
  QStringList parts;
  for (size_t i = 0; i < types.size(); ++i) {
    const std::string port = !schema ? "" : inputs ? schema->input_name(int(i)) : schema->output_name(int(i));
    parts << QStringLiteral("%1: %2").arg(toQString(port), toQString(types[i].str()));
  }
  return parts.isEmpty() ? QObject::tr("none") : parts.join("\n");
}
}  // namespace

std::optional<std::vector<int64_t>> parseInts(const QString& text) {
  QString t = text.trimmed();
  if (t.startsWith('[') && t.endsWith(']')) t = t.mid(1, t.size() - 2);
  std::vector<int64_t> values;
  if (t.trimmed().isEmpty()) return values;
  for (const QString& part : t.split(',')) {
    bool ok = false;
    const qlonglong v = part.trimmed().toLongLong(&ok);
    if (!ok) return std::nullopt;
    values.push_back(v);
  }
  return values;
}

QString formatInts(const std::vector<int64_t>& values) {
  QStringList parts;
  for (int64_t v : values) parts << QString::number(v);
  return parts.join(", ");
}

PropertyEditor::PropertyEditor(GraphDocument* document, QWidget* parent)
    : QWidget(parent), doc_(document) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  placeholder_ = new QLabel(tr("Select one node to see and edit its properties."), this);
  placeholder_->setWordWrap(true);
  placeholder_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  layout->addWidget(placeholder_);
  connect(doc_, &GraphDocument::changed, this, [this] {
    if (node_ >= 0 && !doc_->graph().contains(node_)) setNode(-1);
    else if (node_ >= 0 && doc_->graph().node(node_).op != builtOp_) rebuild();
    else refresh();
  });
}

QLabel* PropertyEditor::onnxRow(const QString& name) const {
  auto it = onnxRows_.find(name);
  return it == onnxRows_.end() ? nullptr : it->second;
}

QWidget* PropertyEditor::editor(const QString& attribute) const {
  auto it = editors_.find(toStd(attribute));
  return it == editors_.end() ? nullptr : it->second;
}

void PropertyEditor::setSelection(const QList<graph::NodeId>& nodes) {
  setNode(nodes.size() == 1 ? nodes.front() : -1);
}

void PropertyEditor::setNode(graph::NodeId id) {
  if (id >= 0 && !doc_->graph().contains(id)) id = -1;
  if (id == node_ && content_) return refresh();
  node_ = id;
  rebuild();
}

void PropertyEditor::rebuild() {
  delete content_;
  content_ = nullptr;
  editors_.clear();
  onnxRows_.clear();
  trainable_ = nullptr;
  trainableLabel_ = nullptr;
  nameEdit_ = nullptr;
  op_ = inputs_ = outputs_ = params_ = problems_ = error_ = nullptr;
  builtOp_.clear();
  placeholder_->setVisible(node_ < 0);
  if (node_ < 0) return;

  const graph::Node& node = doc_->graph().node(node_);
  const graph::OpSchema& schema = graph::OpRegistry::global().get(node.op);
  builtOp_ = node.op;
  auto* scroll = new QScrollArea(this);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  auto* inner = new QWidget(scroll);
  auto* form = new QFormLayout(inner);
  form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);

  nameEdit_ = new QLineEdit(inner);
  nameEdit_->setValidator(new QRegularExpressionValidator(
      QRegularExpression(QStringLiteral("[A-Za-z_][A-Za-z0-9_]*")), nameEdit_));
  nameEdit_->setToolTip(tr("A unique identifier; it names the layer's parameters in the state_dict."));
  nameEdit_->installEventFilter(this);
  connect(nameEdit_, &QLineEdit::editingFinished, this, [this] {
    if (node_ < 0 || !nameEdit_) return;
    nameEdit_->setModified(false);  // committed: Ctrl+Z now undoes the rename in the graph
    // The field's own name again (focus leaving after a refused name reverted it): nothing
    // to commit, and the refusal stays shown.
    if (toStd(nameEdit_->text()) == doc_->graph().node(node_).name) return;
    QString reason;
    if (!doc_->renameNode(node_, nameEdit_->text(), &reason)) {
      showError(tr("name: %1").arg(reason));
      refresh();
    } else {
      showError({});
    }
  });
  form->addRow(tr("Name"), nameEdit_);
  op_ = new QLabel(inner);
  op_->setToolTip(toQString(schema.description));
  form->addRow(tr("Op"), op_);
  inputs_ = new QLabel(inner);
  outputs_ = new QLabel(inner);
  params_ = new QLabel(inner);
  for (QLabel* l : {inputs_, outputs_, params_}) l->setTextInteractionFlags(Qt::TextSelectableByMouse);
  form->addRow(tr("Inputs"), inputs_);
  form->addRow(tr("Outputs"), outputs_);
  form->addRow(tr("Parameters"), params_);
  trainable_ = new QCheckBox(tr("train these parameters"), inner);
  trainable_->setToolTip(tr("Unchecked: the layer is frozen (transfer learning): the optimizer leaves its "
                            "parameters as they are and its batch norms use their running statistics."));
  connect(trainable_, &QCheckBox::toggled, this, [this](bool on) {
    if (node_ >= 0) doc_->setTrainable({node_}, on);
  });
  trainableLabel_ = new QLabel(tr("Trainable"), inner);
  form->addRow(trainableLabel_, trainable_);
  const bool fallback = isOnnxFallback(node);
  for (const graph::AttrSpec& spec : schema.attributes) {
    if (fallback && isOnnxBookkeeping(spec.name)) continue;  // shown as rows below
    QWidget* w = makeEditor(spec);
    w->setParent(inner);
    if (qobject_cast<QAbstractSpinBox*>(w) || qobject_cast<QComboBox*>(w))
      w->setFocusPolicy(Qt::StrongFocus);  // not Qt::WheelFocus: a wheel must not grab it
    w->installEventFilter(this);  // the wheel and Ctrl+Z (see eventFilter)
    QString tip = toQString(spec.description);
    if (spec.min || spec.max)
      tip += tr(" (range %1 … %2)")
                 .arg(spec.min ? QString::number(*spec.min) : QStringLiteral("-∞"),
                      spec.max ? QString::number(*spec.max) : QStringLiteral("∞"));
    w->setToolTip(tip);
    QString labelText = toQString(spec.name);
    if (!spec.unit.empty() && (spec.type == graph::AttrType::Ints || spec.type == graph::AttrType::String))
      labelText += QStringLiteral(" (%1)").arg(toQString(spec.unit));  // no suffix on a line edit
    auto* label = new QLabel(labelText, inner);
    label->setToolTip(tip);
    form->addRow(label, w);
    editors_[spec.name] = w;
  }
  if (fallback)
    for (const auto& [name, value] : onnxAttributeRows(node)) {
      auto* label = new QLabel(value, inner);
      label->setWordWrap(true);
      label->setTextInteractionFlags(Qt::TextSelectableByMouse);
      form->addRow(name, label);
      onnxRows_[name] = label;
    }
  problems_ = new QLabel(inner);
  problems_->setWordWrap(true);
  problems_->setStyleSheet(QStringLiteral("color: #e05252;"));
  form->addRow(problems_);
  error_ = new QLabel(inner);
  error_->setWordWrap(true);
  error_->setStyleSheet(QStringLiteral("color: #e0a040;"));
  error_->hide();
  form->addRow(error_);
  scroll->setWidget(inner);
  content_ = scroll;
  layout()->addWidget(scroll);
  refresh();
}

QWidget* PropertyEditor::makeEditor(const graph::AttrSpec& spec) {
  const QString suffix = spec.unit.empty() ? QString() : " " + toQString(spec.unit);
  const std::string name = spec.name;
  switch (spec.type) {
    case graph::AttrType::Int: {
      auto* box = new QSpinBox;
      box->setRange(spec.min ? int(std::max<double>(*spec.min, INT_MIN)) : INT_MIN,
                    spec.max ? int(std::min<double>(*spec.max, INT_MAX)) : INT_MAX);
      box->setSuffix(suffix);
      box->setKeyboardTracking(false);
      connect(box, &QSpinBox::valueChanged, this, [this, name](int v) { commit(name, int64_t(v)); });
      return box;
    }
    case graph::AttrType::Float: {
      auto* box = new FloatSpinBox;
      box->setDecimals(15);
      box->setRange(spec.min ? *spec.min : -1e12, spec.max ? *spec.max : 1e12);
      box->setSingleStep(spec.max && spec.min && *spec.max - *spec.min <= 1 ? 0.05 : 0.1);
      box->setSuffix(suffix);
      box->setKeyboardTracking(false);
      connect(box, &QDoubleSpinBox::valueChanged, this, [this, name](double v) { commit(name, v); });
      return box;
    }
    case graph::AttrType::Bool: {
      auto* box = new QCheckBox;
      connect(box, &QCheckBox::toggled, this, [this, name](bool v) { commit(name, v); });
      return box;
    }
    case graph::AttrType::Choice: {
      auto* box = new QComboBox;
      for (const std::string& c : spec.choices) box->addItem(toQString(c));
      connect(box, &QComboBox::activated, this, [this, name, box](int) {
        commit(name, toStd(box->currentText()));
      });
      return box;
    }
    case graph::AttrType::String:
    case graph::AttrType::Ints: {
      auto* edit = new QLineEdit;
      const bool ints = spec.type == graph::AttrType::Ints;
      if (ints) {
        edit->setValidator(new QRegularExpressionValidator(
            QRegularExpression(QStringLiteral(R"([\s\d,\-\[\]]*)")), edit));
        edit->setPlaceholderText(QStringLiteral("3, 3"));
      }
      connect(edit, &QLineEdit::editingFinished, this, [this, name, edit, ints] {
        edit->setModified(false);
        if (!ints) return commit(name, toStd(edit->text()));
        const auto values = parseInts(edit->text());
        if (!values) {
          const QString text = edit->text();  // long input shortened to "first…last"
          showError(tr("%1: '%2' is not a list of integers such as \"3, 3\"")
                        .arg(toQString(name), text.size() > 60 ? text.left(40) + QChar(0x2026) + text.right(10) : text));
          return refresh();
        }
        commit(name, *values);
      });
      return edit;
    }
  }
  return new QLabel(tr("unsupported attribute type"));
}

void PropertyEditor::setEditorValue(const graph::AttrSpec& spec, QWidget* w, const graph::AttrValue& v) {
  const QSignalBlocker block(w);
  switch (spec.type) {
    case graph::AttrType::Int:
      if (auto* p = std::get_if<int64_t>(&v)) static_cast<QSpinBox*>(w)->setValue(int(*p));
      break;
    case graph::AttrType::Float:
      if (auto* p = std::get_if<double>(&v)) static_cast<QDoubleSpinBox*>(w)->setValue(*p);
      break;
    case graph::AttrType::Bool:
      if (auto* p = std::get_if<bool>(&v)) static_cast<QCheckBox*>(w)->setChecked(*p);
      break;
    case graph::AttrType::Choice:
      if (auto* p = std::get_if<std::string>(&v)) static_cast<QComboBox*>(w)->setCurrentText(toQString(*p));
      break;
    case graph::AttrType::String:
      if (auto* p = std::get_if<std::string>(&v)) static_cast<QLineEdit*>(w)->setText(toQString(*p));
      break;
    case graph::AttrType::Ints:
      if (auto* p = std::get_if<std::vector<int64_t>>(&v)) static_cast<QLineEdit*>(w)->setText(formatInts(*p));
      break;
  }
}

void PropertyEditor::refresh() {
  if (node_ < 0 || !content_ || !doc_->graph().contains(node_)) return;
  const graph::Node& node = doc_->graph().node(node_);
  const graph::OpSchema* schema = graph::OpRegistry::global().find(node.op);
  {
    const QSignalBlocker block(nameEdit_);
    // Also when equal but not being typed in: setText clears the field's own undo history,
    // so that after a graph undo Ctrl+Shift+Z redoes the graph, not old typing.
    if (nameEdit_->text() != toQString(node.name) || !nameEdit_->isModified()) nameEdit_->setText(toQString(node.name));
  }
  op_->setText(toQString(node.op));
  const auto& infos = doc_->analysis().nodes;
  auto info = infos.find(node_);
  if (info != infos.end()) {
    inputs_->setText(typesText(schema, info->second.inputs, true));
    outputs_->setText(typesText(schema, info->second.outputs, false));
    params_->setText(tr("%1 parameters%3\n%2 MACs per sample")
                         .arg(QLocale().toString(qlonglong(info->second.parameters)),
                              QLocale().toString(qlonglong(info->second.macs)),
                              node.trainable || !info->second.parameters ? QString() : tr(" (frozen)")));
  } else {
    const QString unknown = tr("? (not inferred)");
    inputs_->setText(unknown);
    outputs_->setText(unknown);
    params_->setText(unknown);
  }
  const bool withParameters = info != infos.end() && info->second.parameters > 0;
  trainable_->setVisible(withParameters);
  trainableLabel_->setVisible(withParameters);
  {
    const QSignalBlocker block(trainable_);
    trainable_->setChecked(node.trainable);
  }
  const std::vector<std::string> problems = doc_->analysis().problems_of(node_);
  QStringList lines;
  for (const std::string& p : problems) lines << "⚠ " + toQString(p);
  problems_->setText(lines.join("\n"));
  problems_->setVisible(!lines.isEmpty());
  if (!schema) return;
  for (const graph::AttrSpec& spec : schema->attributes) {
    auto e = editors_.find(spec.name);
    auto v = node.attrs.find(spec.name);
    if (e != editors_.end() && v != node.attrs.end()) setEditorValue(spec, e->second, v->second);
  }
}

void PropertyEditor::commit(const std::string& name, const graph::AttrValue& value) {
  if (node_ < 0) return;
  // The value the node has (focus leaving a field that a refusal reverted): nothing to
  // commit, and the refusal's message stays shown.
  const graph::Attributes& attrs = doc_->graph().node(node_).attrs;
  if (auto it = attrs.find(name); it != attrs.end() && it->second == value) return;
  QString reason;
  if (!doc_->setAttribute(node_, toQString(name), value, &reason)) {
    showError(tr("%1: %2").arg(toQString(name), reason));
    refresh();  // back to the graph's value
    return;
  }
  showError({});
}

QLineEdit* PropertyEditor::textField(QObject* editor) {
  if (auto* edit = qobject_cast<QLineEdit*>(editor)) return edit;
  if (auto* box = qobject_cast<QAbstractSpinBox*>(editor)) return box->findChild<QLineEdit*>();
  return nullptr;
}

bool PropertyEditor::fieldTakesShortcut(QObject* editor, const QKeyEvent& key) {
  QLineEdit* edit = textField(editor);
  if (!edit || edit->isReadOnly()) return false;
  if (key.matches(QKeySequence::Undo)) return edit->isModified() && edit->isUndoAvailable();
  if (key.matches(QKeySequence::Redo)) return edit->isRedoAvailable();
  return true;  // other shortcuts (copy, paste, select all) as the field decides
}

bool PropertyEditor::eventFilter(QObject* watched, QEvent* event) {
  if (event->type() == QEvent::ShortcutOverride) {
    const auto* key = static_cast<QKeyEvent*>(event);
    if ((key->matches(QKeySequence::Undo) || key->matches(QKeySequence::Redo)) && !fieldTakesShortcut(watched, *key)) {
      event->ignore();  // not for the field: the window's Undo / Redo (the graph's) runs
      return true;
    }
  }
  if (event->type() == QEvent::Wheel) {
    auto* w = qobject_cast<QWidget*>(watched);
    if (w && !w->hasFocus()) {
      event->ignore();  // not for the editor: the parent (the scroll area) gets it
      return true;
    }
  }
  return QWidget::eventFilter(watched, event);
}

void PropertyEditor::showError(const QString& text) {
  if (!error_) return;
  error_->setText(text);
  error_->setVisible(!text.isEmpty());
}

}  // namespace kiln::studio
