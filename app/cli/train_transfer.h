// Transfer learning in `kiln train`: the flags --classes, --train-subset (the data) and
// --onnx, --replace-head, --freeze-until, --freeze-all-but-head (the network; engine/graph/
// transfer.h does the graph edits). docs/import-and-fine-tune.md shows the whole recipe.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/cli/args.h"
#include "engine/data/dataset.h"
#include "engine/graph/graph.h"

namespace kiln::cli {

struct TrainConfig;

void add_transfer_flags(ArgParser& p);
// Reads the flags into `c` (the model name of --onnx too); UsageError for a bad combination:
// --onnx with --graph or --model, the network edits without --graph or --onnx, both freeze
// flags, --classes or --train-subset with a csv: dataset, a --classes parse_classes refuses
// (engine/data/class_filter.h).
void read_transfer_flags(const Args& args, TrainConfig& c);

// The network of --graph or --onnx with --replace-head and the freeze flags applied, checked
// as load_checked_graph does (train_graph.h); nullopt for a reference --model. Errors: those
// of load_checked_graph and onnx::import_graph, and ValueError naming the node from
// graph::replace_head / graph::freeze_until (no Linear at the end, an unknown node name).
// Prints to stderr which nodes are frozen and which layer is the new head (unless quiet: the
// ranks > 0 of a data-parallel run).
std::optional<graph::Graph> transfer_graph(const TrainConfig& c, bool quiet = false);

// The training and test splits cut to --classes (relabelled 0..k-1) and the training split to
// --train-subset samples (seeded by --seed; the test split is never cut). `num_classes`: the
// data set's classes. Returns the kept classes (all of them without --classes); ValueError
// from parse_classes (engine/data/class_filter.h) for a bad --classes.
std::vector<int64_t> filter_splits(const TrainConfig& c, int64_t num_classes,
                                   std::shared_ptr<const data::Dataset>& train_set,
                                   std::shared_ptr<const data::Dataset>& test_set);

}  // namespace kiln::cli
