// PropertyEditor: widgets generated from AttrSpec, edits as undo steps, rejected
// values explained and reverted.
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QSpinBox>
#include <QTest>
#include <QWheelEvent>

#include "engine/graph/op_schema.h"
#include "test_graph_util.h"
#include "widgets/graph/property_editor.h"

using namespace kiln;
using namespace kiln::studio;
using namespace kiln::studio::testing;

namespace {
// Replaces a line edit's or spin box's text as a user would and presses Enter.
void typeInto(QWidget* w, const QString& text) {
  w->setFocus();
  QTest::keyClick(w, Qt::Key_A, Qt::ControlModifier);
  QTest::keyClick(w, Qt::Key_Backspace);
  QTest::keyClicks(w, text);
  QTest::keyClick(w, Qt::Key_Return);
}

graph::AttrValue attr(const GraphDocument& doc, graph::NodeId id, const char* name) {
  return doc.graph().node(id).attrs.at(name);
}
}  // namespace

class TestGraphPropertyEditor : public QObject {
  Q_OBJECT

  // Input [1, 28, 28] -> Conv2d -> Dropout, editor shown on the Conv2d.
  struct Fixture {
    GraphDocument doc;
    PropertyEditor editor{&doc};
    graph::NodeId input = -1, conv = -1, dropout = -1;
    Fixture() {
      graph::Graph g;
      input = g.add_node("Input", "input");
      conv = g.add_node("Conv2d", "conv1");
      dropout = g.add_node("Dropout", "drop");
      g.connect({input, 0}, {conv, 0});
      g.connect({conv, 0}, {dropout, 0});
      doc.setGraph(g);
      editor.resize(400, 700);
      editor.show();
      QVERIFY(QTest::qWaitForWindowExposed(&editor));
      editor.setNode(conv);
    }
  };

 private slots:
  void widgetsFollowTheAttributeTypes() {
    Fixture f;
    auto* channels = qobject_cast<QSpinBox*>(f.editor.editor("out_channels"));
    QVERIFY(channels);
    QCOMPARE(channels->value(), 32);
    QCOMPARE(channels->minimum(), 1);  // AttrSpec min
    QVERIFY(!channels->toolTip().isEmpty());
    auto* kernel = qobject_cast<QLineEdit*>(f.editor.editor("kernel_size"));
    QVERIFY(kernel);
    QCOMPARE(kernel->text(), QString("3, 3"));
    QVERIFY(qobject_cast<QCheckBox*>(f.editor.editor("bias"))->isChecked());
    QCOMPARE(f.editor.nameEdit()->text(), QString("conv1"));
    QVERIFY2(f.editor.outputsText().contains("f32[N, 32, 26, 26]"), qPrintable(f.editor.outputsText()));
    f.editor.setNode(f.dropout);
    auto* p = qobject_cast<QDoubleSpinBox*>(f.editor.editor("p"));
    QVERIFY(p);
    QCOMPARE(p->value(), 0.5);
    QCOMPARE(p->maximum(), 1.0);
    f.editor.setNode(f.input);
    auto* dtype = qobject_cast<QComboBox*>(f.editor.editor("dtype"));
    QVERIFY(dtype);
    QCOMPARE(dtype->currentText(), QString("f32"));
    QVERIFY(dtype->count() >= 2);
    f.editor.setSelection({f.input, f.conv});  // two selected: nothing shown
    QCOMPARE(f.editor.node(), graph::NodeId(-1));
    QVERIFY(!f.editor.editor("dtype"));
  }

  void editsChangeTheGraphAndAreUndoable() {
    Fixture f;
    const std::string before = json(f.doc);
    typeInto(f.editor.editor("out_channels"), "64");
    QCOMPARE(std::get<int64_t>(attr(f.doc, f.conv, "out_channels")), int64_t(64));
    QVERIFY(f.editor.outputsText().contains("f32[N, 64, 26, 26]"));
    typeInto(f.editor.editor("kernel_size"), "5, 5");
    QCOMPARE(std::get<std::vector<int64_t>>(attr(f.doc, f.conv, "kernel_size")), (std::vector<int64_t>{5, 5}));
    f.editor.editor("bias")->setFocus();
    QTest::keyClick(f.editor.editor("bias"), Qt::Key_Space);  // toggles the check box
    QCOMPARE(std::get<bool>(attr(f.doc, f.conv, "bias")), false);
    typeInto(f.editor.nameEdit(), "stem");
    QCOMPARE(f.doc.graph().node(f.conv).name, std::string("stem"));
    QCOMPARE(f.doc.undoStack()->count(), 4);
    f.doc.undoStack()->undo();
    f.doc.undoStack()->undo();
    // The editor shows the restored values.
    QVERIFY(qobject_cast<QCheckBox*>(f.editor.editor("bias"))->isChecked());
    QCOMPARE(f.editor.nameEdit()->text(), QString("conv1"));
    f.doc.undoStack()->undo();
    f.doc.undoStack()->undo();
    QCOMPARE(json(f.doc), before);
    QCOMPARE(qobject_cast<QSpinBox*>(f.editor.editor("out_channels"))->value(), 32);
    QCOMPARE(qobject_cast<QLineEdit*>(f.editor.editor("kernel_size"))->text(), QString("3, 3"));
  }

  void floatAndChoiceEdits() {
    Fixture f;
    f.editor.setNode(f.dropout);
    typeInto(f.editor.editor("p"), "0.25");
    QCOMPARE(std::get<double>(attr(f.doc, f.dropout, "p")), 0.25);
    f.editor.setNode(f.input);
    auto* dtype = qobject_cast<QComboBox*>(f.editor.editor("dtype"));
    dtype->setFocus();
    QTest::keyClick(dtype, Qt::Key_Down);  // the next choice, as activated() by the user
    QCOMPARE(std::get<std::string>(attr(f.doc, f.input, "dtype")), dtype->currentText().toStdString());
    QVERIFY(std::get<std::string>(attr(f.doc, f.input, "dtype")) != "f32");
    QCOMPARE(f.doc.undoStack()->count(), 2);
  }

  void wheelChangesOnlyAFocusedEditor() {
    Fixture f;
    auto* channels = qobject_cast<QSpinBox*>(f.editor.editor("out_channels"));
    QVERIFY(channels);
    QCOMPARE(channels->focusPolicy(), Qt::StrongFocus);
    auto wheel = [&] {
      const QPointF pos(channels->width() / 2.0, channels->height() / 2.0);
      QWheelEvent e(pos, channels->mapToGlobal(pos), QPoint(), QPoint(0, 120), Qt::NoButton,
                    Qt::NoModifier, Qt::NoScrollPhase, false);
      QApplication::sendEvent(channels, &e);
    };
    const std::string before = json(f.doc);
    QVERIFY(!channels->hasFocus());
    wheel();  // a plain wheel over the panel: scrolls, edits nothing
    QCOMPARE(json(f.doc), before);
    QCOMPARE(channels->value(), 32);
    QCOMPARE(f.doc.undoStack()->count(), 0);
    // Once the user has clicked into (focused) the spin box, the wheel steps it.
    f.editor.activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(&f.editor));
    channels->setFocus();
    QVERIFY(channels->hasFocus());
    wheel();
    QCOMPARE(std::get<int64_t>(attr(f.doc, f.conv, "out_channels")), int64_t(33));
  }

  void rejectedValuesShowTheReasonAndRevert() {
    Fixture f;
    const std::string before = json(f.doc);
    auto* kernel = qobject_cast<QLineEdit*>(f.editor.editor("kernel_size"));
    typeInto(kernel, "3, 3, 3");  // kernel_size takes two integers
    QVERIFY2(f.editor.errorText().contains("kernel_size"), qPrintable(f.editor.errorText()));
    QCOMPARE(kernel->text(), QString("3, 3"));
    typeInto(kernel, "3,,3");  // not a list of integers
    QVERIFY2(f.editor.errorText().contains("not a list of integers"), qPrintable(f.editor.errorText()));
    QCOMPARE(kernel->text(), QString("3, 3"));
    typeInto(kernel, "0, 3");  // below the minimum of 1
    QVERIFY(!f.editor.errorText().isEmpty());
    QCOMPARE(kernel->text(), QString("3, 3"));
    typeInto(f.editor.nameEdit(), "drop");  // taken by the Dropout
    QVERIFY2(f.editor.errorText().contains("name"), qPrintable(f.editor.errorText()));
    QCOMPARE(f.editor.nameEdit()->text(), QString("conv1"));
    QCOMPARE(json(f.doc), before);
    QCOMPARE(f.doc.undoStack()->count(), 0);
    typeInto(f.editor.editor("out_channels"), "8");  // a good edit clears the message
    QVERIFY(f.editor.errorText().isEmpty());
  }

  void showsTheNodesProblemsAndFollowsDeletion() {
    Fixture f;
    typeInto(f.editor.editor("in_channels"), "3");  // the Input gives 1 channel
    QVERIFY(!f.doc.analysis().problems_of(f.conv).empty());
    QVERIFY(f.editor.outputsText().contains("not inferred"));
    f.doc.removeNodes({f.conv});
    QCOMPARE(f.editor.node(), graph::NodeId(-1));
    f.doc.undoStack()->undo();
    f.editor.setNode(f.conv);
    QCOMPARE(qobject_cast<QSpinBox*>(f.editor.editor("in_channels"))->value(), 3);
  }
};

QTEST_MAIN(TestGraphPropertyEditor)
#include "test_graph_property_editor.moc"
