// Helpers shared by the Kiln Studio GUI tests.
#pragma once
#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QString>

#include "app/studio/main_window.h"
#include "tests/common/test_deps.h"
#include "widgets/training/training_panel.h"

namespace kiln::studio::test {

// A small, quick training setup: 1 epoch of `images` Fashion-MNIST images.
inline void quickSettings(MainWindow& w, int64_t images = 1024, int epochs = 1) {
  DatasetSettings d;
  d.train_size = images;
  d.validation_size = images / 4;
  w.setDatasetSettings(d);
  w.setTestImages(images / 2);
  TrainingConfig c;
  c.epochs = epochs;
  c.batch_size = 64;
  c.device = "cpu";
  w.trainingPanel()->setConfig(c);
}

inline bool haveFashionMnist() { return QDir("/usr/share/datasets/fashion-mnist").exists(); }

}  // namespace kiln::studio::test
