#include "widgets/training/classification_report.h"

#include "engine/core/error.h"

namespace kiln::studio {

namespace {
void check(const std::vector<int64_t>& confusion, int classes) {
  KILN_CHECK(classes > 0 && confusion.size() == static_cast<size_t>(classes) * static_cast<size_t>(classes), ValueError,
             "classification report: a confusion matrix of ", confusion.size(), " cells for ", classes, " classes");
  for (int64_t n : confusion) KILN_CHECK(n >= 0, ValueError, "classification report: a negative count ", n);
}
double ratio(double a, double b) { return b > 0 ? a / b : 0.0; }
}  // namespace

ClassificationReport classification_report(const std::vector<int64_t>& confusion, int classes) {
  check(confusion, classes);
  const size_t c = static_cast<size_t>(classes);
  ClassificationReport r;
  r.classes.resize(c);
  int64_t total = 0, correct = 0, averaged = 0, present = 0;
  for (size_t k = 0; k < c; ++k) {
    int64_t row = 0, column = 0;
    for (size_t j = 0; j < c; ++j) {
      row += confusion[k * c + j];
      column += confusion[j * c + k];
    }
    const double tp = static_cast<double>(confusion[k * c + k]);
    ClassMetrics& m = r.classes[k];
    m.precision = ratio(tp, static_cast<double>(column));
    m.recall = ratio(tp, static_cast<double>(row));
    m.f1 = ratio(2 * m.precision * m.recall, m.precision + m.recall);
    m.support = row;
    total += row;
    correct += confusion[k * c + k];
    if (row == 0 && column == 0) continue;  // neither a true nor a predicted label: not averaged
    ++present;
    averaged += row;
    r.macro.precision += m.precision;
    r.macro.recall += m.recall;
    r.macro.f1 += m.f1;
    const double w = static_cast<double>(row);
    r.weighted.precision += w * m.precision;
    r.weighted.recall += w * m.recall;
    r.weighted.f1 += w * m.f1;
  }
  for (double* v : {&r.macro.precision, &r.macro.recall, &r.macro.f1}) *v = ratio(*v, static_cast<double>(present));
  for (double* v : {&r.weighted.precision, &r.weighted.recall, &r.weighted.f1})
    *v = ratio(*v, static_cast<double>(averaged));
  r.macro.support = r.weighted.support = averaged;
  r.accuracy = ratio(static_cast<double>(correct), static_cast<double>(total));
  return r;
}

double normalized_cell(const std::vector<int64_t>& confusion, int classes, int truth, int predicted, Normalization n) {
  check(confusion, classes);
  KILN_CHECK(truth >= 0 && truth < classes && predicted >= 0 && predicted < classes, IndexError,
             "confusion matrix: no cell (", truth, ", ", predicted, ") in ", classes, " classes");
  const size_t c = static_cast<size_t>(classes);
  const double cell = static_cast<double>(confusion[static_cast<size_t>(truth) * c + static_cast<size_t>(predicted)]);
  if (n == Normalization::Counts) return cell;
  int64_t sum = 0;
  for (size_t j = 0; j < c; ++j)
    sum += n == Normalization::ByRow ? confusion[static_cast<size_t>(truth) * c + j]
                                     : confusion[j * c + static_cast<size_t>(predicted)];
  return ratio(cell, static_cast<double>(sum));
}

}  // namespace kiln::studio
