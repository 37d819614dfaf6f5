// RunsView editing (issue 15): inline rename and tags that persist, the filter field,
// Delete with undo (the run comes back with its metrics), the new columns sorted as
// numbers, and a 500-character name that stays elided inside the viewport.
#include <QHeaderView>
#include <QLineEdit>
#include <QTableView>
#include <QTemporaryDir>
#include <QUndoStack>
#include <QtTest>

#include "project_test_util.h"
#include "widgets/project/runs_view.h"

using namespace kiln::projects;
using kiln::studio::RunsModel;
using kiln::studio::RunsView;

class TestRunsEdit : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  QString file(const QString& name) const { return dir_.filePath(name); }

  // Finished runs with train sizes 9000, 10000, 500 (text order differs from numeric),
  // batch sizes 128, 64, 1024 and 20/300/1000 images/s.
  std::vector<int64_t> fill(Project& p) {
    const int train[] = {9000, 10000, 500}, batch[] = {128, 64, 1024};
    const double speed[] = {20, 300, 1000};
    std::vector<int64_t> ids;
    for (int r = 0; r < 3; ++r) {
      const std::string config = "{\"optimizer\":\"adam\",\"lr\":0.005,\"epochs\":1,\"batch_size\":" +
                                 std::to_string(batch[r]) + ",\"dataset\":{\"train_size\":" + std::to_string(train[r]) + "}}";
      const int64_t id = p.begin_run({"adam lr 0.005, 1 epoch(s)", config, r == 1 ? "cuda:0" : "cpu", 0});
      {
        MetricsWriter w(p.path(), id);
        for (int s = 1; s <= 4; ++s) w.step({s, 1, 1.0 / s, 0.005, speed[r], 0.1 * s});
        w.epoch({1, 0.5, 0.8, 0.6, 0.7 + 0.01 * r, 0.005, 1});
      }
      p.end_run(id, RunStatus::finished, "", "");
      ids.push_back(id);
    }
    return ids;
  }
  static QStringList column(const RunsView& view, int c) {
    QStringList cells;
    for (int r = 0; r < view.rowCount(); ++r) cells << view.cellText(r, c);
    return cells;
  }

 private slots:
  void defaultNamesAreUnique() {
    Project p = Project::create(file("names.kiln").toStdString());
    fill(p);
    RunsView view(&p);
    QCOMPARE(column(view, RunsModel::Name),
             (QStringList{"adam lr 0.005, 1 epoch(s)", "adam lr 0.005, 1 epoch(s) #2", "adam lr 0.005, 1 epoch(s) #3"}));
  }

  void renameInlineAndPersist() {
    const QString path = file("rename.kiln");
    std::vector<int64_t> ids;
    {
      Project p = Project::create(path.toStdString());
      ids = fill(p);
      RunsView view(&p);
      QUndoStack stack;
      view.setUndoStack(&stack);
      view.resize(1000, 500);
      view.show();
      QVERIFY(QTest::qWaitForWindowExposed(&view));
      // F2 on the Run cell opens an editor; typing and Enter renames the run.
      view.table()->setFocus();
      view.table()->setCurrentIndex(view.proxy()->index(1, RunsModel::Name));
      QTest::keyClick(view.table(), Qt::Key_F2);
      auto* editor = view.table()->viewport()->findChild<QLineEdit*>();
      QVERIFY(editor);
      editor->selectAll();
      QTest::keyClicks(editor, "  baseline  ");
      QTest::keyClick(editor, Qt::Key_Return);
      QTRY_COMPARE(view.cellText(1, RunsModel::Name), QString("baseline"));
      QCOMPARE(stack.count(), 1);
      stack.undo();
      QCOMPARE(view.cellText(1, RunsModel::Name), QString("adam lr 0.005, 1 epoch(s) #2"));
      stack.redo();
      QCOMPARE(view.cellText(1, RunsModel::Name), QString("baseline"));
      // A refused name (a line break) changes nothing and says why.
      QSignalSpy messages(&view, &RunsView::message);
      QString error;
      QVERIFY(!view.renameRun(ids[0], "two\nlines", &error));
      QVERIFY2(error.contains("line break"), qPrintable(error));
      QCOMPARE(messages.size(), 1);
      QCOMPARE(stack.count(), 1);
    }
    Project p = Project::open(path.toStdString());
    QCOMPARE(p.runs().at(1).name, std::string("baseline"));
  }

  // The name editor takes at most kMaxNameLength characters, and the project stores any name
  // it takes, however many UTF-8 bytes a character needs ("€" takes 3).
  void nameEditorHasALengthLimit() {
    Project p = Project::create(file("limit.kiln").toStdString());
    const auto ids = fill(p);
    RunsView view(&p);
    view.resize(1000, 500);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QVERIFY(RunsView::kMaxNameLength * 3 <= int(Project::kMaxRunNameBytes));
    auto rename = [&](const QString& typed) -> QString {
      view.table()->setFocus();
      view.table()->setCurrentIndex(view.proxy()->index(0, RunsModel::Name));
      QTest::keyClick(view.table(), Qt::Key_F2);
      auto* editor = view.table()->viewport()->findChild<QLineEdit*>();
      if (!editor) return "no editor";
      if (editor->maxLength() != RunsView::kMaxNameLength) return QString("maxLength %1").arg(editor->maxLength());
      editor->selectAll();
      editor->insert(typed);  // as a paste
      QTest::keyClick(editor, Qt::Key_Return);
      return {};
    };
    QString why = rename(QString(500, QChar('a')));
    QVERIFY2(why.isEmpty(), qPrintable(why));
    QTRY_COMPARE(view.cellText(0, RunsModel::Name), QString(RunsView::kMaxNameLength, QChar('a')));
    why = rename(QString(500, QChar(0x20AC)));
    QVERIFY2(why.isEmpty(), qPrintable(why));
    QTRY_VERIFY(column(view, RunsModel::Name).contains(QString(RunsView::kMaxNameLength, QChar(0x20AC))));  // sorted last
    QCOMPARE(p.runs().at(0).id, ids[0]);
    QCOMPARE(p.runs().at(0).name.size(), size_t(RunsView::kMaxNameLength) * 3);  // 999 bytes, stored
  }

  void tagsAndFilter() {
    const QString path = file("tags.kiln");
    Project p = Project::create(path.toStdString());
    const auto ids = fill(p);
    RunsView view(&p);
    // Tags through the model (as the delegate's editor commits them).
    QVERIFY(view.model()->setData(view.model()->index(0, RunsModel::Tags), " baseline, adam ,"));
    QTRY_COMPARE(view.cellText(0, RunsModel::Tags), QString("baseline, adam"));
    QVERIFY(view.setRunTags(ids[2], {"Baseline-2", "sweep"}));
    QCOMPARE(p.runs().at(0).tags, (std::vector<std::string>{"baseline", "adam"}));  // stored
    view.filterField()->setText("tag:baseline");
    QCOMPARE(view.rowCount(), 2);
    QCOMPARE(view.runAtRow(0), ids[0]);
    QCOMPARE(view.runAtRow(1), ids[2]);
    view.setFilterText("tag:baseline sweep");  // every word must match
    QCOMPARE(view.rowCount(), 1);
    view.setFilterText("CUDA");  // the device, any case
    QCOMPARE(view.rowCount(), 1);
    QCOMPARE(view.runAtRow(0), ids[1]);
    view.setFilterText("status:finished");
    QCOMPARE(view.rowCount(), 3);
    view.setFilterText("#3");  // the name
    QCOMPARE(view.rowCount(), 1);
    view.setFilterText("tag:nothing");
    QCOMPARE(view.rowCount(), 0);
    view.setFilterText("");
    QCOMPARE(view.rowCount(), 3);
    QString error;
    QVERIFY(!view.setRunTags(ids[0], {QString(300, 't')}, &error));
    QVERIFY2(error.contains("300 bytes"), qPrintable(error));
  }

  void deleteWithUndoRestoresMetrics() {
    Project p = Project::create(file("delete.kiln").toStdString());
    const auto ids = fill(p);
    RunsView view(&p);
    QUndoStack stack;
    view.setUndoStack(&stack);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.selectRuns({ids[1]});
    view.table()->setFocus();
    QTest::keyClick(view.table(), Qt::Key_Delete);
    QCOMPARE(view.rowCount(), 2);
    QCOMPARE(p.runs().size(), size_t(2));
    QCOMPARE(stack.count(), 1);
    QVERIFY(stack.undoText().contains("Delete run"));
    stack.undo();
    QCOMPARE(view.rowCount(), 3);
    QCOMPARE(p.step_metrics(ids[1]).size(), size_t(4));
    QCOMPARE(view.cellText(1, RunsModel::ImagesPerSecond), QString("300"));  // its metrics are back
    stack.redo();
    QCOMPARE(view.rowCount(), 2);
    QCOMPARE(p.purge_deleted_runs(), 1);
    QCOMPARE(p.step_metrics(ids[1]).size(), size_t(0));
  }

  void newColumnsSortNumerically() {
    Project p = Project::create(file("sort.kiln").toStdString());
    fill(p);
    RunsView view(&p);
    QCOMPARE(view.model()->headerData(RunsModel::TrainSize, Qt::Horizontal).toString(), QString("Train set"));
    QCOMPARE(view.model()->headerData(RunsModel::BatchSize, Qt::Horizontal).toString(), QString("Batch"));
    QCOMPARE(view.model()->headerData(RunsModel::ImagesPerSecond, Qt::Horizontal).toString(), QString("Images/s"));
    QCOMPARE(column(view, RunsModel::Device), (QStringList{"cpu", "cuda:0", "cpu"}));
    view.table()->sortByColumn(RunsModel::TrainSize, Qt::AscendingOrder);
    QCOMPARE(column(view, RunsModel::TrainSize), (QStringList{"500", "9000", "10000"}));
    view.table()->sortByColumn(RunsModel::BatchSize, Qt::DescendingOrder);
    QCOMPARE(column(view, RunsModel::BatchSize), (QStringList{"1024", "128", "64"}));
    view.table()->sortByColumn(RunsModel::ImagesPerSecond, Qt::AscendingOrder);
    QCOMPARE(column(view, RunsModel::ImagesPerSecond), (QStringList{"20", "300", "1000"}));
    view.table()->sortByColumn(RunsModel::Tags, Qt::AscendingOrder);  // text columns sort too
    view.table()->sortByColumn(RunsModel::Status, Qt::AscendingOrder);
    QCOMPARE(view.rowCount(), 3);
  }

  // A regression run has no accuracy: the test column shows R², the validation column nothing
  // (not "0.00 %"); a classification run beside it keeps its percentages.
  void regressionRunShowsRSquared() {
    Project p = Project::create(file("regression.kiln").toStdString());
    fill(p);
    const int64_t id = p.begin_run({"sgd lr 0.01, 1 epoch(s)",
                                    "{\"epochs\":1,\"dataset\":{\"name\":\"csv\",\"task\":\"regression\"}}", "cpu", 0});
    {
      MetricsWriter w(p.path(), id);
      w.epoch({1, 0.5, 0, 0.6, 0, 0.01, 1});
    }
    p.end_run(id, RunStatus::finished, "",
              "{\"val_accuracy\":0,\"test_mae\":0.25,\"test_rmse\":0.5,\"test_r2\":0.93125}");
    RunsView view(&p);
    QCOMPARE(view.rowCount(), 4);
    const QStringList test = column(view, RunsModel::TestAccuracy), val = column(view, RunsModel::ValAccuracy);
    const qsizetype row = test.indexOf("R² 0.9313");
    QVERIFY2(row >= 0, qPrintable(test.join(" | ")));
    QCOMPARE(val[row], QString());
    QCOMPARE(val.count("70.00 %") + val.count("71.00 %") + val.count("72.00 %"), qsizetype(3));
  }

  void longNameStaysInsideTheViewport() {
    Project p = Project::create(file("long.kiln").toStdString());
    const auto ids = fill(p);
    const QString name = QString("very long name ").repeated(34).left(499) + "!";  // 500 characters
    p.rename_run(ids[0], name.toStdString());
    p.set_run_tags(ids[0], {std::string(190, 'x'), std::string(190, 'y')});
    RunsView view(&p);
    view.resize(900, 500);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QTableView* t = view.table();
    QCOMPARE(view.cellText(0, RunsModel::Name), name);
    QCOMPARE(view.proxy()->index(0, RunsModel::Name).data(Qt::ToolTipRole).toString().section('\n', 0, 0),
             QString("#%1 %2").arg(ids[0]).arg(name));
    QVERIFY2(t->columnWidth(RunsModel::Name) <= RunsView::kMaxColumnWidth, qPrintable(QString::number(t->columnWidth(0))));
    QVERIFY(t->columnWidth(RunsModel::Name) < t->viewport()->width());
    QVERIFY(t->columnWidth(RunsModel::Tags) <= RunsView::kMaxOtherColumnWidth);
    QVERIFY2(view.width() <= 900 && view.minimumSizeHint().width() < 900,
             qPrintable(QString::number(view.minimumSizeHint().width())));
  }
};

QTEST_MAIN(TestRunsEdit)
#include "test_runs_edit.moc"
