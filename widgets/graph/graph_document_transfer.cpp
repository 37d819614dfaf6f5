// GraphDocument's transfer-learning edits: frozen nodes and a new classifier head. The
// graph changes come from engine/graph/transfer.h; each edit is one ReplaceGraphCommand.
#include <set>

#include "engine/graph/transfer.h"
#include "widgets/graph/graph_commands.h"
#include "widgets/graph/graph_document.h"

namespace kiln::studio {

void GraphDocument::setTrainable(const QList<graph::NodeId>& ids, bool on) {
  if (refuseEdit(nullptr)) return;
  graph::Graph after = graph_;
  int changed = 0;
  QString name;
  for (graph::NodeId id : ids)
    if (after.contains(id) && after.node(id).trainable != on) {
      after.set_trainable(id, on);
      name = toQString(after.node(id).name);
      ++changed;
    }
  if (!changed) return;
  const QString text = changed == 1 ? (on ? tr("Unfreeze %1").arg(name) : tr("Freeze %1").arg(name))
                                    : (on ? tr("Unfreeze %n node(s)", nullptr, changed)
                                          : tr("Freeze %n node(s)", nullptr, changed));
  stack_.push(new ReplaceGraphCommand(this, text, graph_, std::move(after)));
}

void GraphDocument::freezeUpTo(graph::NodeId node) {
  if (!graph_.contains(node)) return;
  std::set<graph::NodeId> seen{node};
  std::vector<graph::NodeId> pending{node};
  while (!pending.empty()) {
    const graph::NodeId id = pending.back();
    pending.pop_back();
    for (const graph::Edge& e : graph_.edges())
      if (e.to.node == id && seen.insert(e.from.node).second) pending.push_back(e.from.node);
  }
  setTrainable(QList<graph::NodeId>(seen.begin(), seen.end()), false);
}

void GraphDocument::unfreezeAll() {
  QList<graph::NodeId> all;
  for (const graph::Node& n : graph_.nodes()) all << n.id;
  setTrainable(all, true);
}

graph::NodeId GraphDocument::replaceHead(int64_t outFeatures, QString* reason) {
  if (refuseEdit(reason)) return -1;
  graph::Graph after = graph_;
  graph::NodeId head = -1;
  try {
    head = graph::replace_head(after, outFeatures);
  } catch (const std::exception& e) {
    if (reason) *reason = QString::fromStdString(e.what());
    return -1;
  }
  const QString text = tr("Replace head %1 (%2 outputs)").arg(toQString(after.node(head).name)).arg(outFeatures);
  stack_.push(new ReplaceGraphCommand(this, text, graph_, std::move(after)));
  return head;
}

int64_t GraphDocument::frozenParameters() const {
  int64_t total = 0;
  for (const graph::Node& n : graph_.nodes()) {
    if (n.trainable) continue;
    auto info = analysis_.nodes.find(n.id);
    if (info != analysis_.nodes.end()) total += info->second.parameters;
  }
  return total;
}

}  // namespace kiln::studio
