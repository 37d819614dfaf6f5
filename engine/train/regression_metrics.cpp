#include "engine/train/regression_metrics.h"

#include <cmath>

#include "engine/core/error.h"

namespace kiln::train {

RegressionMetrics regression_metrics(const std::vector<double>& predicted, const std::vector<double>& actual) {
  KILN_CHECK(predicted.size() == actual.size(), ValueError, "regression_metrics: ", predicted.size(),
             " predictions for ", actual.size(), " actual values");
  KILN_CHECK(!actual.empty(), ValueError, "regression_metrics: no samples");
  const double n = static_cast<double>(actual.size());
  double mean = 0;
  for (double a : actual) mean += a;
  mean /= n;
  double abs_sum = 0, ss_res = 0, ss_tot = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    const double e = predicted[i] - actual[i];
    abs_sum += std::abs(e);
    ss_res += e * e;
    ss_tot += (actual[i] - mean) * (actual[i] - mean);
  }
  RegressionMetrics m;
  m.count = static_cast<int64_t>(actual.size());
  m.mae = abs_sum / n;
  m.rmse = std::sqrt(ss_res / n);
  m.r2 = ss_tot > 0 ? 1 - ss_res / ss_tot : std::isnan(ss_res) ? ss_res : ss_res == 0 ? 1.0 : 0.0;
  return m;
}

}  // namespace kiln::train
