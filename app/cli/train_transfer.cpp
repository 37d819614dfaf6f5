#include "app/cli/train_transfer.h"

#include <cstdio>
#include <filesystem>

#include "engine/data/class_filter.h"
#include "app/cli/datasets.h"
#include "app/cli/image_data.h"
#include "app/cli/table_data.h"
#include "app/cli/train_config.h"
#include "app/cli/train_graph.h"
#include "engine/core/error.h"
#include "engine/graph/transfer.h"
#ifdef KILN_HAVE_ONNX
#include "engine/onnx/graph_import.h"
#include "engine/onnx/model.h"
#endif

namespace kiln::cli {

void add_transfer_flags(ArgParser& p) {
  p.flag("classes", "LIST", "", "train and test on these classes only, relabelled 0..k-1: 0-4, 0,2,5 or 0-2,7\n"
                                "(the run records them; kiln eval tests on the same classes)")
      .flag("train-subset", "N", "0", "train on a random N-sample subset of the training split (seeded by --seed;\n"
                                      "after --classes; the test split stays whole; 0: all)")
      .flag("onnx", "FILE", "", "train the model of an ONNX file, imported as a graph (its weights are the start)")
      .flag("replace-head", "N", "", "with --graph or --onnx: the last Linear layer before the output gets N outputs\n"
                                     "and fresh weights (a new classifier head)")
      .flag("freeze-until", "NODE", "", "with --graph or --onnx: freeze NODE and every node before it (their weights\n"
                                        "stay; their batch norms use the running statistics)")
      .toggle("freeze-all-but-head", "with --graph or --onnx: freeze every node but the last Linear layer");
}

void read_transfer_flags(const Args& args, TrainConfig& c) {
  const std::string dataset = args.str("dataset");
  const bool csv = is_csv_dataset(dataset), folder = is_image_dataset(dataset);
  if (args.given("classes")) {
    if (csv || folder) args.fail("--classes applies to fashion-mnist, not " + std::string(csv ? "csv:FILE" : "image folders"));
    c.classes = args.str("classes");
    if (c.classes.empty()) args.fail("--classes needs classes, e.g. 0-4 or 0,2,5");
    try {  // checked here, before any graph or data is read
      data::parse_classes(c.classes, static_cast<int64_t>(class_names(args.str("dataset")).size()));
    } catch (const ValueError& e) {
      args.fail(e.what());
    }
  }
  if (args.given("train-subset")) {
    if (csv || folder)
      args.fail("--train-subset applies to fashion-mnist, not " + std::string(csv ? "csv:FILE" : "image folders"));
    c.train_subset = args.integer("train-subset", 1);
  }
  if (args.given("onnx")) {
    if (args.given("model") || args.given("graph"))
      args.fail(std::string("--onnx and --") + (args.given("model") ? "model" : "graph") +
                " are exclusive (the ONNX model is the model)");
#ifndef KILN_HAVE_ONNX
    args.fail("--onnx needs Kiln built with ONNX support (KILN_ONNX)");
#endif
    c.onnx = args.str("onnx");
    if (c.onnx.empty()) args.fail("--onnx needs an ONNX file");
    c.model = "graph-" + std::filesystem::path(c.onnx).stem().string();
  }
  const bool network = args.given("graph") || args.given("onnx");
  if (args.given("replace-head")) {
    if (!network) args.fail("--replace-head needs --graph or --onnx (a reference --model has a fixed head)");
    c.replace_head = args.integer("replace-head", 1);
  }
  if (args.given("freeze-until") && args.given("freeze-all-but-head"))
    args.fail("--freeze-until and --freeze-all-but-head are exclusive");
  if (args.given("freeze-until")) {
    if (!network) args.fail("--freeze-until needs --graph or --onnx");
    c.freeze_until = args.str("freeze-until");
    if (c.freeze_until.empty()) args.fail("--freeze-until needs a node name");
  }
  if (args.given("freeze-all-but-head")) {
    if (!network) args.fail("--freeze-all-but-head needs --graph or --onnx");
    c.freeze_all_but_head = true;
  }
}

std::optional<graph::Graph> transfer_graph(const TrainConfig& c, bool quiet) {
  std::optional<graph::Graph> g;
  std::string source = c.graph;
  if (!c.graph.empty()) {
    g = load_checked_graph(c.graph);
  } else if (!c.onnx.empty()) {
#ifdef KILN_HAVE_ONNX
    KILN_CHECK(!std::filesystem::is_directory(c.onnx), IoError, c.onnx, " is a directory, not an ONNX file");
    onnx::ImportedGraph ig = onnx::import_graph(onnx::load_model(c.onnx));
    if (!quiet)
      for (const std::string& w : ig.warnings) std::fprintf(stderr, "kiln: %s: %s\n", c.onnx.c_str(), w.c_str());
    g = std::move(ig.graph);
    source = c.onnx;
    check_trainable_graph(*g, source);
#endif
  }
  if (!g) return g;
  try {
    if (c.replace_head > 0) {
      const graph::NodeId head = graph::replace_head(*g, c.replace_head);
      if (!quiet)
        std::fprintf(stderr, "new head: '%s' (Linear) with %lld outputs, freshly initialized\n",
                     g->node(head).name.c_str(), static_cast<long long>(c.replace_head));
    }
    if (!c.freeze_until.empty()) graph::freeze_until(*g, c.freeze_until);
    if (c.freeze_all_but_head) graph::freeze_all_but(*g, graph::find_head(*g));
  } catch (const ValueError& e) {
    throw ValueError(source + ": " + e.what());
  }
  check_trainable_graph(*g, source);
  std::string frozen;
  int count = 0;
  for (const graph::Node& n : g->nodes())
    if (!n.trainable && n.op != "Input" && n.op != "Output") {
      if (count++) frozen += ", ";
      frozen += n.name;
    }
  if (count && !quiet) std::fprintf(stderr, "frozen: %d nodes (%s)\n", count, frozen.c_str());
  return g;
}

std::vector<int64_t> filter_splits(const TrainConfig& c, int64_t num_classes,
                                   std::shared_ptr<const data::Dataset>& train_set,
                                   std::shared_ptr<const data::Dataset>& test_set) {
  std::vector<int64_t> classes;
  if (!c.classes.empty()) {
    classes = data::parse_classes(c.classes, num_classes);
    train_set = std::make_shared<data::ClassFilter>(train_set, classes);
    test_set = std::make_shared<data::ClassFilter>(test_set, classes);
  } else {
    for (int64_t k = 0; k < num_classes; ++k) classes.push_back(k);
  }
  if (c.train_subset > 0) {
    KILN_CHECK(c.train_subset <= train_set->size(), ValueError, "--train-subset ", c.train_subset,
               " is more than the ", train_set->size(), " training samples", c.classes.empty() ? "" : " of --classes ",
               c.classes);
    train_set = random_subset(train_set, c.train_subset, c.seed);
  }
  return classes;
}

}  // namespace kiln::cli
