// `kiln bench --graph FILE | --onnx FILE | --project FILE`: the user's own model compared across
// devices and precisions (engine/graph/device_compare.h), printed and written in kiln bench's
// JSON / CSV shape.
#pragma once
#include <string>

#include "app/cli/args.h"
#include "engine/graph/graph.h"

namespace kiln::cli {

// Runs the comparison for bench_command once it has parsed `args` (which holds graph, onnx or
// project). Returns the exit status: 0, 1 when a row failed, 130 when interrupted.
int bench_graph(const Args& args);

// The graph of --graph, --onnx or --project, checked: UsageError (exit 2) when not exactly one of
// them is given (or --model is too), when the graph has no Input node or cannot run (naming the
// nodes); IoError / ValueError when the file cannot be read. `source` gets the path.
graph::Graph load_bench_graph(const Args& args, std::string& source);

// `kiln bench --graph FILE --profile [--device D] [--precision P]` (bench_profile.cpp): the per-layer
// profile of a training step (engine/graph/layer_profile.h) printed as a table sorted by total
// time, written as JSON with --json FILE, and stored in the project with --project FILE (schema 12;
// ProjectError when it cannot be written). UsageError for an unknown device or a flag that
// belongs to the comparison (--devices, --precisions, --csv). Returns 0, or 130 when interrupted.
int bench_profile(const Args& args);

}  // namespace kiln::cli
