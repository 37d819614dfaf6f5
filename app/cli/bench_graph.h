// `kiln bench --graph FILE | --onnx FILE | --project FILE`: the user's own model compared across
// devices and precisions (engine/graph/device_compare.h), printed and written in kiln bench's
// JSON / CSV shape.
#pragma once
#include <string>

#include "app/cli/args.h"

namespace kiln::cli {

// Runs the comparison for bench_command once it has parsed `args` (which holds graph, onnx or
// project). Returns the exit status: 0, 1 when a row failed, 130 when interrupted.
int bench_graph(const Args& args);

}  // namespace kiln::cli
