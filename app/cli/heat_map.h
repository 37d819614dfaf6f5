// The picture `kiln explain` writes: a heat map over the image the model saw.
#pragma once
#include <string>

#include "engine/core/tensor.h"

namespace kiln::cli {

// Writes `image` f32 [C, H, W] (C 1 or 3, R G B; shown min-max scaled, as the model saw it after
// preprocessing) with `map` f32 [H, W] over it, scaled to [0, 1] by its maximum, as OpenCV's JET
// colour map (blue 0 to red 1) at opacity 0.5, enlarged by a whole factor (nearest neighbour) so
// that the longer side is at least 256 pixels, as the PNG (or any format OpenCV writes, by the
// extension) `path`. IoError naming path when it cannot be written; ShapeError for shapes that do
// not fit; ValueError for a build without OpenCV.
void write_heat_overlay(const Tensor& image, const Tensor& map, const std::string& path);

}  // namespace kiln::cli
