#include "app/studio/sweep_schedule.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace kiln::studio::sweep {

LaneQueue::LaneQueue(std::vector<std::string> lanes, std::vector<int64_t> queue)
    : lanes_(std::move(lanes)), queue_(queue.begin(), queue.end()), busy_(lanes_.size()) {
  if (lanes_.empty()) throw std::invalid_argument("a sweep needs at least one device lane");
}

std::vector<std::pair<int, int64_t>> LaneQueue::assign() {
  std::vector<std::pair<int, int64_t>> out;
  for (size_t i = 0; i < lanes_.size() && !queue_.empty(); ++i) {
    if (busy_[i]) continue;
    busy_[i] = queue_.front();
    queue_.pop_front();
    out.emplace_back(static_cast<int>(i), *busy_[i]);
  }
  return out;
}

void LaneQueue::release(int lane) {
  auto& slot = busy_.at(static_cast<size_t>(lane));
  if (!slot) throw std::logic_error("lane " + std::to_string(lane) + " (" + device(lane) + ") has no trial to release");
  slot.reset();
}

bool LaneQueue::idle() const {
  return std::none_of(busy_.begin(), busy_.end(), [](const auto& b) { return b.has_value(); });
}

namespace {

// The best of v[0..k) with NaN as worst (NaN only when all are NaN).
double best_of(const std::vector<double>& v, size_t k, bool maximize) {
  double best = NAN;
  for (size_t i = 0; i < k; ++i) {
    if (std::isnan(v[i])) continue;
    if (std::isnan(best) || (maximize ? v[i] > best : v[i] < best)) best = v[i];
  }
  return best;
}

}  // namespace

MedianDecision median_rule(const std::vector<std::vector<double>>& finished, const std::vector<double>& current,
                           bool maximize, int min_finished) {
  MedianDecision d;
  const size_t k = current.size();
  if (k == 0) return d;
  std::vector<double> bests;
  for (const auto& f : finished)
    if (f.size() >= k) bests.push_back(best_of(f, k, maximize));
  d.compared = static_cast<int>(bests.size());
  d.best = best_of(current, k, maximize);
  if (d.compared < std::max(1, min_finished)) return d;
  // NaN ranks worst: below every number when maximizing, above when minimizing.
  const double worst = maximize ? -INFINITY : INFINITY;
  for (double& b : bests)
    if (std::isnan(b)) b = worst;
  std::sort(bests.begin(), bests.end());
  const size_t n = bests.size();
  d.median = n % 2 ? bests[n / 2] : (bests[n / 2 - 1] + bests[n / 2]) / 2;
  const double mine = std::isnan(d.best) ? worst : d.best;
  d.prune = maximize ? mine < d.median : mine > d.median;
  return d;
}

}  // namespace kiln::studio::sweep
