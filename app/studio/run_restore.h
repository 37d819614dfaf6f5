// Showing a stored run again: its curves in LivePlots and its evaluation in the
// EvaluationView, as they were when it ended (Studio reopening a project).
#pragma once
#include <QString>
#include <cstdint>

#include "projects/project.h"
#include "widgets/training/evaluation_view.h"

namespace kiln::studio {

class LivePlots;

// The view's form of a stored evaluation; images are grey (Format_Grayscale8),
// image_height x image_width, or null images when none were stored; the predictions with
// imageDir = Fashion-MNIST's default directory (empty without predictions).
EvaluationResult toEvaluationResult(const projects::Evaluation&);

// Clears `plots` and `evaluation`, then loads run `run`'s step and epoch metrics and its
// stored evaluation. Returns false with the reason in *error (the views stay cleared)
// when the project cannot be read or holds a damaged evaluation.
bool showStoredRun(const projects::Project&, int64_t run, LivePlots* plots, EvaluationView* evaluation,
                   QString* error = nullptr);

}  // namespace kiln::studio
