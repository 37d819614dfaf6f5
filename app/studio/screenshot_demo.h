// The hidden --screenshot-demo DIR mode (tests/gui/screenshots.sh): a scripted session
// in the real main window that saves PNGs — 01_cnn_template.png, 02_training.png,
// 03_evaluation.png, 04_runs_overlay.png, 05_dataset_panel.png, 06_training_panel.png and
// 07_imported_onnx.png (the trained CNN exported as cnn.onnx and imported) — into DIR, the
// pictures of README.md and docs/. The window fills the screen's available area, in the
// default dock arrangement for that size. Returns the exit status.
#pragma once
#include <QString>

namespace kiln::studio {
int runScreenshotDemo(const QString& dir);
}
