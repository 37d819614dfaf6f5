// The hidden --screenshot-demo DIR mode (tests/gui/screenshots.sh): a scripted session
// in the real main window that saves PNGs — 01_cnn_template.png, 02_training.png,
// 03_evaluation.png, 04_runs_overlay.png, 05_dataset_panel.png, 06_training_panel.png and
// 07_imported_onnx.png (the trained CNN exported as cnn.onnx and imported) — into DIR, the
// pictures of README.md and docs/. The window fills the screen's available area, in the
// default dock arrangement for that size. Returns the exit status.
//
// The hidden --screenshot-onnx FILE mode (with --screenshot-demo DIR): FILE imported with
// File > Import ONNX and the window saved as DIR/<base>.png (<base>: FILE's base name, or
// its folder's for a model.onnx), again with the Training tab in front as DIR/<base>_training.png,
// the graph fitted to the view as DIR/<base>_fit.png and a
// 70 % detail of the canvas as DIR/<base>_detail.png; for torchvision's resnet18 and
// mobilenet_v2 as tests/onnx/make_torch_models.py exports them (issue 15, finding 8).
#pragma once
#include <QString>

namespace kiln::studio {
int runScreenshotDemo(const QString& dir);
int runImportScreenshot(const QString& onnx, const QString& dir);
}
