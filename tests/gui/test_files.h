// Files the Studio's dataset tests write: image folders, arbitrary bytes and project files.
#pragma once
#include <QColor>
#include <QDir>
#include <QFile>
#include <QImage>
#include <QStringList>
#include <QtTest>

#include "projects/project.h"
#include "widgets/project/dataset_settings.h"

namespace kiln::studio::test {

// root/<class>/<i>.png: `per_class` 16 x 16 RGB images per class, each class its own colour and
// a white square whose place depends on the class and is off the centre (so a model can tell the
// classes apart, and a flip or a crop changes the picture).
inline void writeImageFolder(const QString& root, const QStringList& classes, int per_class) {
  for (int c = 0; c < classes.size(); ++c) {
    QVERIFY(QDir().mkpath(root + "/" + classes[c]));
    for (int i = 0; i < per_class; ++i) {
      QImage img(16, 16, QImage::Format_RGB888);
      img.fill(QColor(40 * c + 3 * i, 200 - 60 * c, 30 + 50 * c));
      for (int y = 0; y < 4; ++y)
        for (int x = 0; x < 4; ++x) img.setPixelColor(1 + 5 * (c % 3) + x, 1 + 4 * (c % 3) + y, Qt::white);
      QVERIFY(img.save(QString("%1/%2/%3.png").arg(root, classes[c]).arg(i)));
    }
  }
}

// `bytes` written to `path` (a test failure when the file cannot be opened).
inline void writeFile(const QString& path, const QByteArray& bytes) {
  QFile f(path);
  QVERIFY(f.open(QIODevice::WriteOnly));
  f.write(bytes);
}

// A new project file `file` whose graph is the template projects/templates/<templateName>.json
// (no graph when templateName is "") and whose dataset setting is `dataset`, as the Dataset
// panel stores it (a test failure when the template cannot be read).
inline void writeProject(const QString& file, const QString& templateName, const DatasetSettings& dataset) {
  auto p = kiln::projects::Project::create(file.toStdString());
  if (!templateName.isEmpty()) {
    QFile t(QStringLiteral(KILN_SOURCE_DIR "/projects/templates/%1.json").arg(templateName));
    QVERIFY2(t.open(QIODevice::ReadOnly), qPrintable(t.fileName()));
    p.save_graph(t.readAll().toStdString(), "test");
  }
  p.set_setting("dataset", dataset.to_json());
}

}  // namespace kiln::studio::test
