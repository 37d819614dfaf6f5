// Issue 16, the Studio side: text datasets. The Dataset panel reads a generated folder of class
// subfolders of .txt files (with an empty and a binary file) and a JSON-lines file, and shows the
// tokenizer, samples with their tokens and the token-length histogram, with the texts that the max
// length truncates; a CSV without its text column is the reader's message. The window fits the
// text templates to the data (Input [max_length] i64, the Embedding's vocabulary) and trains one
// in the Studio, whose evaluation names the classes and lists misclassified texts with their
// tokens. kiln-studio --headless trains both text templates on the folder.
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QSpinBox>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QUndoStack>
#include <QtTest>

#include "tests/gui/headless_studio.h"
#include "tests/gui/test_files.h"
#include "app/studio/main_window.h"
#include "projects/project.h"
#include "widgets/graph/graph_document.h"
#include "widgets/project/dataset_panel.h"
#include "widgets/training/cell_samples.h"
#include "widgets/training/evaluation_view.h"
#include "widgets/training/training_panel.h"

using namespace kiln::studio;
using kiln::studio::test::writeFile;

namespace {

// root/pos and root/neg: `per_class` short reviews each, told apart by their words; every fifth
// is long (30 words), so a small max length truncates it.
void writeReviews(const QString& root, int per_class) {
  const char* words[2][4] = {{"bad", "awful", "dull", "boring"}, {"good", "great", "lovely", "fun"}};
  for (int c = 0; c < 2; ++c) {
    const QString dir = root + (c ? "/pos" : "/neg");
    QVERIFY(QDir().mkpath(dir));
    for (int i = 0; i < per_class; ++i) {
      QByteArray text = QByteArray("the film was ") + words[c][i % 4] + " and " + words[c][(i + 1) % 4] + " number " +
                        QByteArray::number(i) + "\n";
      if (i % 5 == 0)
        for (int k = 0; k < 6; ++k) text += QByteArray("and ") + words[c][k % 4] + " again ";
      writeFile(QString("%1/%2.txt").arg(dir).arg(i), text);
    }
  }
}

bool waitLoaded(DatasetPanel& panel) {
  return QTest::qWaitFor([&] { return panel.isLoaded() || !panel.errorText().isEmpty(); }, 60000);
}

DatasetSettings textSource(const QString& path, int64_t max_length = 16) {
  DatasetSettings s;
  s.name = "text";
  s.path = path.toStdString();
  s.max_length = max_length;
  return s;
}

using kiln::test::studio;

}  // namespace

class TestStudioTextData : public QObject {
  Q_OBJECT
 private slots:
  void panelShowsTokensAndLengths() {
    QTemporaryDir dir;
    const QString root = dir.filePath("reviews");
    writeReviews(root, 20);
    writeFile(root + "/neg/empty.txt", QByteArray());
    writeFile(root + "/pos/zip.txt", QByteArray("PK\x03\x04\x00\x00", 6));
    DatasetPanel panel;
    panel.setSettings(textSource(root));
    QVERIFY(waitLoaded(panel));
    QVERIFY2(panel.isLoaded(), qPrintable(panel.errorText()));
    const DatasetSummary& s = panel.summary();
    QCOMPARE(s.kind, QString("text"));
    QCOMPARE(s.class_names, QStringList({"neg", "pos"}));
    QCOMPARE(s.class_counts, std::vector<int64_t>({20, 20}));
    QCOMPARE(s.sample_shape, std::vector<int64_t>({16}));
    QCOMPARE(s.skipped.size(), 2);
    QVERIFY2(panel.statusLabel()->text().contains("empty.txt: empty file"), qPrintable(panel.statusLabel()->text()));
    QVERIFY2(panel.statusLabel()->text().contains("zip.txt: binary file"), qPrintable(panel.statusLabel()->text()));
    QVERIFY(s.vocab_size > 10);
    // Samples with their tokens: the words, lowercased, as the model sees them.
    QVERIFY(panel.textPreview()->isVisibleTo(&panel));
    const QTableWidget* t = panel.textPreview()->sampleTable();
    QVERIFY(t->rowCount() > 0);
    QVERIFY(QStringList({"neg", "pos"}).contains(t->item(0, 0)->text()));
    QVERIFY2(t->item(0, 1)->text().startsWith("the film was"), qPrintable(t->item(0, 1)->text()));
    QVERIFY2(t->item(0, 2)->text().startsWith("the film was"), qPrintable(t->item(0, 2)->text()));
    // The histogram: 8 long texts of 26 tokens (bin 16-31) are over the max length 16.
    QCOMPARE(s.text.texts, int64_t(40));
    QCOMPARE(s.text.truncated, int64_t(8));
    QCOMPARE(s.text.longest, int64_t(26));
    QCOMPARE(panel.textPreview()->histogram()->binLabel(5), QString::fromUtf8("16\u201331"));
    QCOMPARE(s.text.bins.back(), int64_t(8));
    QVERIFY2(panel.textPreview()->figuresLabel()->text().contains("8 of 40 texts"),
             qPrintable(panel.textPreview()->figuresLabel()->text()));
    QVERIFY(panel.textPreview()->histogram()->minimumSizeHint().height() > 0);
    // A longer max length truncates none; characters as tokens: the vocabulary is the letters.
    DatasetSettings longer = panel.settings();
    longer.max_length = 64;
    longer.tokenizer = "char";
    panel.setSettings(longer);
    QVERIFY(waitLoaded(panel));
    QVERIFY2(panel.isLoaded(), qPrintable(panel.errorText()));
    QCOMPARE(panel.tokenizerCombo()->currentData().toString(), QString("char"));
    QCOMPARE(panel.maxLengthSpin()->value(), 64);
    QVERIFY(panel.summary().vocab_size < 40);
    QVERIFY2(panel.summary().text.tokenizer.startsWith("char"), qPrintable(panel.summary().text.tokenizer));
    // The choice is what the project stores.
    const DatasetSettings back = DatasetSettings::from_json(panel.settings().to_json());
    QCOMPARE(back, panel.settings());
    QCOMPARE(back.source(3).tokenizer.kind, std::string("char"));
    QCOMPARE(back.source(3).max_length, int64_t(64));
  }

  void jsonLinesAndBadTables() {
    QTemporaryDir dir;
    QByteArray lines;
    for (int i = 0; i < 30; ++i)
      lines += QByteArray("{\"body\": \"") + (i % 2 ? "great fun" : "dull and slow") + " " + QByteArray::number(i) +
               "\", \"y\": \"" + (i % 2 ? "good" : "bad") + "\"}\n";
    writeFile(dir.filePath("r.jsonl"), lines);
    DatasetPanel panel;
    DatasetSettings s = textSource(dir.filePath("r.jsonl"));
    s.text_column = "body";
    s.label = "y";
    panel.setSettings(s);
    QVERIFY(waitLoaded(panel));
    QVERIFY2(panel.isLoaded(), qPrintable(panel.errorText()));
    QCOMPARE(panel.summary().class_names, QStringList({"bad", "good"}));
    QCOMPARE(panel.textColumnEdit()->text(), QString("body"));
    // A table without the text column: the reader's message names the file and line 1.
    writeFile(dir.filePath("t.csv"), "review,label\ngood,1\nbad,0\n");
    panel.setSettings(textSource(dir.filePath("t.csv")));
    QVERIFY(waitLoaded(panel));
    QVERIFY(!panel.isLoaded());
    QVERIFY2(panel.errorText().contains("t.csv:1: no column 'text'"), qPrintable(panel.errorText()));
    QVERIFY(!panel.textPreview()->isVisibleTo(&panel));
    // One class.
    writeFile(dir.filePath("one.csv"), "text,label\ngood,1\nfine,1\n");
    panel.setSettings(textSource(dir.filePath("one.csv")));
    QVERIFY(waitLoaded(panel));
    QVERIFY2(panel.errorText().contains("only one class ('1')"), qPrintable(panel.errorText()));
    QCOMPARE(panel.settings().path, dir.filePath("one.csv").toStdString());  // kept
  }

  // The window fits the LSTM template to the texts and trains it; the evaluation names the
  // classes and lists the misclassified texts with their tokens.
  void windowTrainsTextTemplate() {
    QTemporaryDir dir;
    const QString root = dir.filePath("reviews");
    writeReviews(root, 30);
    MainWindow w;
    w.setSilent(true);
    QVERIFY(w.newProjectFile(dir.filePath("t.kiln"), "text_classifier_lstm"));
    auto* panel = w.findChild<DatasetPanel*>();
    emit panel->chosen();
    DatasetSettings s = textSource(root, 24);
    s.validation_fraction = 0.1;
    panel->setSettings(s);
    QVERIFY(waitLoaded(*panel));
    QVERIFY2(panel->isLoaded(), qPrintable(panel->errorText()));
    QVERIFY(QTest::qWaitFor([&] { return w.document()->undoStack()->count() > 0; }, 5000));
    const auto& g = w.document()->graph();
    QCOMPARE(std::get<std::vector<int64_t>>(g.find_by_name("tokens")->attrs.at("shape")), std::vector<int64_t>({24}));
    QCOMPARE(std::get<int64_t>(g.find_by_name("embedding")->attrs.at("num_embeddings")), panel->summary().vocab_size);
    TrainingConfig c;
    c.epochs = 3;
    c.batch_size = 8;
    c.lr = 0.01;
    c.device = "cpu";
    w.trainingPanel()->setConfig(c);
    QVERIFY2(w.startTraining(), qPrintable(w.lastError()));
    QTRY_VERIFY_WITH_TIMEOUT(!w.session()->isRunning(), 120000);
    QVERIFY2(w.lastError().isEmpty(), qPrintable(w.lastError()));
    EvaluationView* ev = w.evaluationView();
    QVERIFY2(ev->summaryText().contains("on 12 texts"), qPrintable(ev->summaryText()));
    QCOMPARE(ev->confusionTable()->rowCount(), 2);
    QCOMPARE(ev->confusionTable()->horizontalHeaderItem(1)->text(), QString("pos"));
    // A clicked cell lists its texts with the tokens in the tooltip.
    ev->showCell(0, 0);
    const QTableWidget* cell = ev->cellSamples()->table();
    QCOMPARE(cell->columnCount(), 5);
    QVERIFY(cell->rowCount() > 0);
    QVERIFY2(cell->item(0, 4)->text().startsWith("the film was"), qPrintable(cell->item(0, 4)->text()));
    QVERIFY2(cell->item(0, 4)->toolTip().contains("tokens: the film was"), qPrintable(cell->item(0, 4)->toolTip()));
    QVERIFY2(ev->cellSamples()->message().contains("test text"), qPrintable(ev->cellSamples()->message()));
    // The project keeps the evaluation with the class names.
    auto p = kiln::projects::Project::open(dir.filePath("t.kiln").toStdString());
    const auto runs = p.runs();
    QCOMPARE(runs.size(), size_t(1));
    const auto e = p.evaluation(runs[0].id);
    QVERIFY(e.has_value());
    QCOMPARE(e->class_names, std::vector<std::string>({"neg", "pos"}));
    QCOMPARE(e->count, int64_t(12));
    // ... and its texts: the project reopened in another window lists them in a clicked cell.
    QCOMPARE(e->texts.size(), size_t(12));
    QVERIFY2(e->texts[0].origin.find("reviews") != std::string::npos, e->texts[0].origin.c_str());
    QVERIFY2(e->texts[0].text.starts_with("the film was"), e->texts[0].text.c_str());
    MainWindow reopened;
    reopened.setSilent(true);
    QVERIFY(reopened.openProject(dir.filePath("t.kiln")));
    EvaluationView* stored = reopened.evaluationView();
    QVERIFY2(stored->summaryText().contains("on 12 texts"), qPrintable(stored->summaryText()));
    stored->showCell(0, 0);
    QVERIFY(stored->cellSamples()->table()->rowCount() > 0);
    QVERIFY2(stored->cellSamples()->table()->item(0, 4)->text().startsWith("the film was"),
             qPrintable(stored->cellSamples()->table()->item(0, 4)->text()));
  }

  // The misclassified list shows texts (not images) with both labels.
  void misclassifiedTextsAreListed() {
    EvaluationResult r;
    r.count = 3;
    r.accuracy = 1.0 / 3;
    r.classNames = {"ham", "spam"};
    r.confusion = {1, 1, 1, 0};
    r.misclassified = {{QImage(), 0, 1, 1}, {QImage(), 1, 0, 2}};
    r.texts = {"see you at lunch", "meeting at noon", "buy cheap pills"};
    r.textOrigins = {"a.txt", "b.txt", "c.txt"};
    r.textTokens = {"see you at lunch", "meeting at noon", "buy cheap pills"};
    EvaluationView v;
    v.setResult(r);
    QCOMPARE(v.misclassifiedList()->count(), 2);
    QCOMPARE(v.misclassifiedList()->item(0)->text(), QString::fromUtf8("ham \u2192 spam: meeting at noon"));
    QVERIFY(v.misclassifiedList()->item(1)->toolTip().contains("c.txt"));
    QVERIFY(v.misclassifiedList()->item(1)->toolTip().contains("tokens: buy cheap pills"));
    QVERIFY2(v.summaryText().contains("on 3 texts"), qPrintable(v.summaryText()));
  }

  // kiln-studio --headless trains both text templates; the output names the classes and lists
  // the misclassified texts; a bad --max-length is refused.
  void headlessTrainsTextTemplates() {
    QTemporaryDir dir;
    const QString root = dir.filePath("reviews");
    writeReviews(root, 30);
    for (const QString& name : {QString("text_classifier_lstm"), QString("small_transformer_classifier")}) {
      const QString project = dir.filePath(name + ".kiln");
      int code = 0;
      const QString out = studio({"--headless", "--new", project, "--template", name, "--dataset", "text:" + root,
                                  "--max-length", "24", "--train", "--epochs", "1"},
                                 &code);
      QVERIFY2(code == 0, qPrintable(out));
      QVERIFY2(out.contains("fitted to the dataset: Input 'tokens': shape"), qPrintable(out));
      QVERIFY2(out.contains("fitted to the dataset: Embedding 'embedding': num_embeddings 20000 ->"), qPrintable(out));
      QVERIFY2(out.contains("confusion matrix (rows: true class, columns: predicted):\n  neg: "), qPrintable(out));
      QVERIFY2(out.contains("\n  pos: "), qPrintable(out));
      QVERIFY2(out.contains("test texts"), qPrintable(out));
      auto p = kiln::projects::Project::open(project.toStdString());
      const auto runs = p.runs();
      QCOMPARE(runs.size(), size_t(1));
      QCOMPARE(runs[0].status, kiln::projects::RunStatus::finished);
      const auto e = p.evaluation(runs[0].id);
      QVERIFY(e.has_value());
      QCOMPARE(e->class_names, std::vector<std::string>({"neg", "pos"}));
      QCOMPARE(DatasetSettings::from_json(*p.setting("dataset")).max_length, int64_t(24));
    }
    int code = 0;
    const QString out = studio({"--headless", "--project", dir.filePath("text_classifier_lstm.kiln"), "--dataset",
                                "text:" + root, "--tokenizer", "bytes", "--train"},
                               &code);
    QCOMPARE(code, 2);  // a command-line mistake
    QVERIFY2(out.contains("--tokenizer must be word, char or sentencepiece, got 'bytes'"), qPrintable(out));
  }
};

QTEST_MAIN(TestStudioTextData)
#include "test_studio_textdata.moc"
