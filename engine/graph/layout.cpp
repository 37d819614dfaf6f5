#include "engine/graph/layout.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <tuple>

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

// Weighted least-squares placement of an ordered row at `want` with centre i at least
// offset[i] - offset[i-1] after centre i-1 (offset non-decreasing): with y_i = x_i - offset[i]
// the constraint is y non-decreasing, solved by pool-adjacent-violators (Barlow et al. 1972).
std::vector<double> place_row(const std::vector<double>& want, const std::vector<double>& weight,
                              const std::vector<double>& offset) {
  struct Block { double sum, weight; int count; };
  std::vector<Block> blocks;
  auto mean = [](const Block& b) { return b.sum / b.weight; };
  for (size_t i = 0; i < want.size(); ++i) {
    blocks.push_back({(want[i] - offset[i]) * weight[i], weight[i], 1});
    while (blocks.size() > 1 && mean(blocks[blocks.size() - 2]) > mean(blocks.back())) {
      Block b = blocks.back();
      blocks.pop_back();
      blocks.back().sum += b.sum, blocks.back().weight += b.weight, blocks.back().count += b.count;
    }
  }
  std::vector<double> x;
  for (const Block& b : blocks)
    for (int j = 0; j < b.count; ++j) x.push_back(mean(b) + offset[x.size()]);
  return x;
}

// Vertical alignment: main_child[v] is the down-neighbour that continues v's chain (the
// longest path to a sink, then the most real nodes on it, then the leftmost); v and w
// are aligned when main_child[v] == w and v is the up-neighbour of w with the most real
// nodes above it (then the leftmost). Returns aligned_up[w] (v or -1).
std::vector<int> align(const Layers& L, size_t real) {
  const size_t n = L.layer.size();
  std::vector<int> height(n, 0), real_height(n, 0), real_depth(n, 0), pos(n, 0);
  for (auto& layer : L.order)
    for (size_t i = 0; i < layer.size(); ++i) pos[static_cast<size_t>(layer[i])] = static_cast<int>(i);
  auto is_real = [&](int v) { return static_cast<size_t>(v) < real ? 1 : 0; };
  for (size_t k = L.order.size(); k-- > 0;)
    for (int v : L.order[k]) {
      for (int w : L.down[static_cast<size_t>(v)]) {
        height[static_cast<size_t>(v)] = std::max(height[static_cast<size_t>(v)], height[static_cast<size_t>(w)] + 1);
        real_height[static_cast<size_t>(v)] = std::max(real_height[static_cast<size_t>(v)], real_height[static_cast<size_t>(w)]);
      }
      real_height[static_cast<size_t>(v)] += is_real(v);
    }
  for (auto& layer : L.order)
    for (int v : layer) {
      for (int u : L.up[static_cast<size_t>(v)])
        real_depth[static_cast<size_t>(v)] = std::max(real_depth[static_cast<size_t>(v)], real_depth[static_cast<size_t>(u)]);
      real_depth[static_cast<size_t>(v)] += is_real(v);
    }
  // Lexicographic "better": larger a, then larger b, then smaller position.
  auto better = [&](int v, int w, const std::vector<int>& a, const std::vector<int>& b) {
    const auto key = [&](int x) { return std::tuple(a[static_cast<size_t>(x)], b[static_cast<size_t>(x)], -pos[static_cast<size_t>(x)]); };
    return key(v) > key(w);
  };
  std::vector<int> main_child(n, -1), aligned_up(n, -1);
  for (size_t v = 0; v < n; ++v)
    for (int w : L.down[v])
      if (main_child[v] < 0 || better(w, main_child[v], height, real_height)) main_child[v] = w;
  for (size_t w = 0; w < n; ++w)
    for (int v : L.up[w])
      if (main_child[static_cast<size_t>(v)] == static_cast<int>(w) &&
          (aligned_up[w] < 0 || better(v, aligned_up[w], real_depth, real_depth)))
        aligned_up[w] = v;
  return aligned_up;
}

}  // namespace

void auto_layout(Graph& g, const LayoutOptions& options) {
  const auto& nodes = g.nodes();
  if (nodes.empty()) return;
  std::map<NodeId, int> index;
  for (size_t i = 0; i < nodes.size(); ++i) index[nodes[i].id] = static_cast<int>(i);
  Layers L = make_layers(nodes.size(), forward_edges(g, index));
  reduce_crossings(L);
  const std::vector<int> aligned_up = align(L, nodes.size());
  std::vector<int> aligned_down(L.layer.size(), -1);
  for (size_t w = 0; w < aligned_up.size(); ++w)
    if (aligned_up[w] >= 0) aligned_down[static_cast<size_t>(aligned_up[w])] = static_cast<int>(w);

  // Half the room each vertex needs across the layer axis (dummies: one edge lane).
  const double sep = options.node_spacing;
  std::vector<double> half(L.layer.size(), sep / 8);
  for (size_t v = 0; v < nodes.size(); ++v)
    half[v] = std::max(sep / 2, options.node_size ? options.node_size(nodes[v]) / 2 + 16 : 0.0);
  std::vector<std::vector<double>> offsets;
  std::vector<double> across(L.layer.size(), 0);
  for (auto& layer : L.order) {
    std::vector<double> offset(layer.size(), 0);
    for (size_t i = 1; i < layer.size(); ++i)
      offset[i] = offset[i - 1] + half[static_cast<size_t>(layer[i - 1])] + half[static_cast<size_t>(layer[i])];
    for (size_t i = 0; i < layer.size(); ++i) across[static_cast<size_t>(layer[i])] = offset[i];
    offsets.push_back(std::move(offset));
  }
  // Alternate sweeps, the last one downward. An aligned vertex wants its partner's
  // coordinate with a weight that dwarfs the rest, so chains end up straight.
  constexpr double kAligned = 1e6;
  for (int pass = 0; pass < 7; ++pass) {
    const bool downward = pass % 2 == 0;
    const size_t m = L.order.size();
    for (size_t step = 1; step < m; ++step) {
      const size_t k = downward ? step : m - 1 - step;
      const auto& layer = L.order[k];
      std::vector<double> want, weight;
      for (int v : layer) {
        const int partner = (downward ? aligned_up : aligned_down)[static_cast<size_t>(v)];
        const auto& nb = downward ? L.up[static_cast<size_t>(v)] : L.down[static_cast<size_t>(v)];
        double w = across[static_cast<size_t>(v)];
        if (partner >= 0) {
          w = across[static_cast<size_t>(partner)];
        } else if (!nb.empty()) {
          w = 0;
          for (int u : nb) w += across[static_cast<size_t>(u)];
          w /= static_cast<double>(nb.size());
        }
        want.push_back(w);
        weight.push_back(partner >= 0 ? kAligned : 1);
      }
      std::vector<double> x = place_row(want, weight, offsets[k]);
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
