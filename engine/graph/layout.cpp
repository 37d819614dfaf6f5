#include "engine/graph/layout.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

namespace kiln::graph {

namespace {

// The layered drawing: real nodes 0..n-1 (graph order), dummies after them.
struct Layers {
  std::vector<std::vector<int>> order;          // per layer, vertices left to right
  std::vector<std::vector<int>> up, down;       // neighbours in the previous / next layer
  std::vector<int> layer;
};

// Depth-first search from each node in id order; edges to a node still on the stack go
// back and are left out, so what remains is acyclic.
std::vector<std::pair<int, int>> forward_edges(const Graph& g, const std::map<NodeId, int>& index) {
  const size_t n = g.nodes().size();
  std::vector<std::vector<int>> succ(n);
  for (const Edge& e : g.edges()) succ[static_cast<size_t>(index.at(e.from.node))].push_back(index.at(e.to.node));
  std::vector<int> state(n, 0);  // 0 new, 1 on stack, 2 done
  std::vector<std::pair<int, int>> kept;
  std::function<void(int)> visit = [&](int v) {
    state[static_cast<size_t>(v)] = 1;
    for (int w : succ[static_cast<size_t>(v)]) {
      if (state[static_cast<size_t>(w)] == 1) continue;  // back edge
      kept.emplace_back(v, w);
      if (state[static_cast<size_t>(w)] == 0) visit(w);
    }
    state[static_cast<size_t>(v)] = 2;
  };
  for (size_t v = 0; v < n; ++v)
    if (state[v] == 0) visit(static_cast<int>(v));
  return kept;
}

// Longest-path layering, then dummies on edges spanning several layers.
Layers make_layers(size_t n, const std::vector<std::pair<int, int>>& edges) {
  Layers L;
  L.layer.assign(n, 0);
  std::vector<int> indegree(n, 0);
  std::vector<std::vector<int>> succ(n);
  for (auto [u, v] : edges) ++indegree[static_cast<size_t>(v)], succ[static_cast<size_t>(u)].push_back(v);
  std::vector<int> ready;
  for (size_t v = 0; v < n; ++v)
    if (!indegree[v]) ready.push_back(static_cast<int>(v));
  for (size_t i = 0; i < ready.size(); ++i)
    for (int w : succ[static_cast<size_t>(ready[i])]) {
      L.layer[static_cast<size_t>(w)] = std::max(L.layer[static_cast<size_t>(w)], L.layer[static_cast<size_t>(ready[i])] + 1);
      if (--indegree[static_cast<size_t>(w)] == 0) ready.push_back(w);
    }
  L.up.assign(n, {}), L.down.assign(n, {});
  auto link = [&](int u, int v) { L.down[static_cast<size_t>(u)].push_back(v), L.up[static_cast<size_t>(v)].push_back(u); };
  for (auto [u, v] : edges) {
    int prev = u;
    for (int k = L.layer[static_cast<size_t>(u)] + 1; k < L.layer[static_cast<size_t>(v)]; ++k) {
      int d = static_cast<int>(L.layer.size());
      L.layer.push_back(k), L.up.emplace_back(), L.down.emplace_back();
      link(prev, d);
      prev = d;
    }
    link(prev, v);
  }
  int layers = 0;
  for (int l : L.layer) layers = std::max(layers, l + 1);
  L.order.assign(static_cast<size_t>(layers), {});
  for (size_t v = 0; v < L.layer.size(); ++v) L.order[static_cast<size_t>(L.layer[v])].push_back(static_cast<int>(v));
  return L;
}

// Crossings between layer k and k+1 (pairs of edges whose ends are in opposite order).
int64_t crossings(const Layers& L, const std::vector<int>& pos, size_t k) {
  std::vector<std::pair<int, int>> e;
  for (int u : L.order[k])
    for (int v : L.down[static_cast<size_t>(u)]) e.emplace_back(pos[static_cast<size_t>(u)], pos[static_cast<size_t>(v)]);
  int64_t c = 0;
  for (size_t i = 0; i < e.size(); ++i)
    for (size_t j = i + 1; j < e.size(); ++j)
      if ((e[i].first - e[j].first) * (e[i].second - e[j].second) < 0) ++c;
  return c;
}

// Barycentre heuristic (Sugiyama et al. 1981): sweeps down and up, keeping the order with
// the fewest crossings.
void reduce_crossings(Layers& L) {
  std::vector<int> pos(L.layer.size());
  auto index = [&] {
    for (auto& layer : L.order)
      for (size_t i = 0; i < layer.size(); ++i) pos[static_cast<size_t>(layer[i])] = static_cast<int>(i);
  };
  auto total = [&] {
    int64_t c = 0;
    for (size_t k = 0; k + 1 < L.order.size(); ++k) c += crossings(L, pos, k);
    return c;
  };
  index();
  auto best = L.order;
  int64_t best_c = total();
  for (int iter = 0; iter < 12 && best_c > 0; ++iter) {
    const bool downward = iter % 2 == 0;
    const size_t m = L.order.size();
    for (size_t step = 1; step < m; ++step) {
      const size_t k = downward ? step : m - 1 - step;
      auto& layer = L.order[k];
      std::vector<std::pair<double, int>> keyed;
      for (int v : layer) {
        const auto& nb = downward ? L.up[static_cast<size_t>(v)] : L.down[static_cast<size_t>(v)];
        double b = pos[static_cast<size_t>(v)];
        if (!nb.empty()) {
          b = 0;
          for (int u : nb) b += pos[static_cast<size_t>(u)];
          b /= static_cast<double>(nb.size());
        }
        keyed.emplace_back(b, v);
      }
      std::stable_sort(keyed.begin(), keyed.end(), [](auto& a, auto& b) { return a.first < b.first; });
      for (size_t i = 0; i < layer.size(); ++i) layer[i] = keyed[i].second;
      index();
    }
    int64_t c = total();
    if (c < best_c) best_c = c, best = L.order;
  }
  L.order = best;
}

// Least-squares placement of an ordered row at `want` with gaps >= sep: with
// y_i = x_i - i*sep the constraint is y non-decreasing, solved by pool-adjacent-violators.
std::vector<double> place_row(const std::vector<double>& want, double sep) {
  struct Block { double sum; int count; };
  std::vector<Block> blocks;
  for (size_t i = 0; i < want.size(); ++i) {
    blocks.push_back({want[i] - static_cast<double>(i) * sep, 1});
    while (blocks.size() > 1 && blocks[blocks.size() - 2].sum / blocks[blocks.size() - 2].count >
                                    blocks.back().sum / blocks.back().count) {
      Block b = blocks.back();
      blocks.pop_back();
      blocks.back().sum += b.sum, blocks.back().count += b.count;
    }
  }
  std::vector<double> x;
  for (const Block& b : blocks)
    for (int j = 0; j < b.count; ++j) x.push_back(b.sum / b.count + static_cast<double>(x.size()) * sep);
  return x;
}

}  // namespace

void auto_layout(Graph& g, const LayoutOptions& options) {
  const auto& nodes = g.nodes();
  if (nodes.empty()) return;
  std::map<NodeId, int> index;
  for (size_t i = 0; i < nodes.size(); ++i) index[nodes[i].id] = static_cast<int>(i);
  Layers L = make_layers(nodes.size(), forward_edges(g, index));
  reduce_crossings(L);

  const double sep = options.node_spacing;
  std::vector<double> across(L.layer.size(), 0);
  for (auto& layer : L.order)
    for (size_t i = 0; i < layer.size(); ++i) across[static_cast<size_t>(layer[i])] = static_cast<double>(i) * sep;
  for (int pass = 0; pass < 6; ++pass) {
    const bool downward = pass % 2 == 0;
    const size_t m = L.order.size();
    for (size_t step = 1; step < m; ++step) {
      const auto& layer = L.order[downward ? step : m - 1 - step];
      std::vector<double> want;
      for (int v : layer) {
        const auto& nb = downward ? L.up[static_cast<size_t>(v)] : L.down[static_cast<size_t>(v)];
        double w = across[static_cast<size_t>(v)];
        if (!nb.empty()) {
          w = 0;
          for (int u : nb) w += across[static_cast<size_t>(u)];
          w /= static_cast<double>(nb.size());
        }
        want.push_back(w);
      }
      std::vector<double> x = place_row(want, sep);
      for (size_t i = 0; i < layer.size(); ++i) across[static_cast<size_t>(layer[i])] = x[i];
    }
  }
  double lo = across[0];
  for (size_t v = 0; v < nodes.size(); ++v) lo = std::min(lo, across[v]);
  std::vector<std::pair<NodeId, std::pair<double, double>>> placed;
  for (size_t v = 0; v < nodes.size(); ++v) {
    const double a = std::round(across[v] - lo), l = L.layer[v] * options.layer_spacing;
    placed.push_back({nodes[v].id, options.top_down ? std::pair{a, l} : std::pair{l, a}});
  }
  for (const auto& [id, xy] : placed) g.set_position(id, xy.first, xy.second);
}

}  // namespace kiln::graph
