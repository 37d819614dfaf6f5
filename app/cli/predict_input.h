// The inputs of `kiln predict` and `kiln explain`: the engine's (engine/data/predict_input.h), shared
// with Kiln Studio's Predict.
#pragma once
#include "app/cli/image_data.h"
#include "app/cli/table_data.h"
#include "engine/data/predict_input.h"

namespace kiln::cli {

using data::idx_image_run;
using data::ImageInput;
using data::list_image_inputs;
using data::read_image_input;
using data::read_table_input;
using data::TableInput;

}  // namespace kiln::cli
