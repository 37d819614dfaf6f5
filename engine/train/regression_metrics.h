// Regression metrics of a test pass: mean absolute error, root mean squared error and the
// coefficient of determination R², with scikit-learn's definitions (sklearn.metrics
// mean_absolute_error, mean_squared_error(squared=False), r2_score).
#pragma once
#include <cstdint>
#include <vector>

namespace kiln::train {

struct RegressionMetrics {
  int64_t count = 0;
  double mae = 0;   // mean |predicted - actual|, in the label's unit
  double rmse = 0;  // sqrt(mean (predicted - actual)²), in the label's unit
  // 1 - SS_res / SS_tot with SS_tot = sum (actual - mean(actual))²: 1 is perfect, 0 predicts no
  // better than the mean, negative is worse. Constant actual values (SS_tot = 0): 1 when every
  // prediction is exact, else 0 (r2_score's force_finite=True).
  double r2 = 0;
};

// ValueError when the two differ in length or are empty. A NaN prediction makes every metric NaN.
RegressionMetrics regression_metrics(const std::vector<double>& predicted, const std::vector<double>& actual);

}  // namespace kiln::train
