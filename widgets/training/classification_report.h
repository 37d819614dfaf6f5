// Per-class metrics of a confusion matrix, as scikit-learn's classification_report
// (sklearn.metrics.classification_report / precision_recall_fscore_support) defines them:
//   precision_c = TP_c / (TP_c + FP_c)    (the column of c: all predicted as c)
//   recall_c    = TP_c / (TP_c + FN_c)    (the row of c: all truly c)
//   f1_c        = 2 precision_c recall_c / (precision_c + recall_c)
//   support_c   = TP_c + FN_c             (images whose true label is c)
// A zero denominator gives 0 (scikit-learn's zero_division default, without its warning).
// "macro avg" is the unweighted mean over the classes, "weighted avg" the mean weighted by
// support; like classification_report without `labels`, both average over the classes that
// occur as a true or a predicted label (a class absent from both is listed with zeros but
// left out of the averages). Accuracy is the trace over the total.
#pragma once
#include <cstdint>
#include <vector>

namespace kiln::studio {

struct ClassMetrics {
  double precision = 0, recall = 0, f1 = 0;  // in [0, 1]
  int64_t support = 0;
};

struct ClassificationReport {
  std::vector<ClassMetrics> classes;  // by label, size C
  ClassMetrics macro, weighted;       // support: the total of the averaged classes
  double accuracy = 0;                // trace / total, 0 when the matrix is empty
};

// confusion: [truth * C + predicted] counts, size C * C (C = classes). ValueError when the
// size is not C * C or a count is negative.
ClassificationReport classification_report(const std::vector<int64_t>& confusion, int classes);

// How the confusion matrix is shown (sklearn.metrics.confusion_matrix's `normalize`):
// Counts (None), ByRow ('true': each row sums to 1, the diagonal is the recall) or
// ByColumn ('pred': each column sums to 1, the diagonal is the precision).
enum class Normalization { Counts, ByRow, ByColumn };
// The shown value of cell (truth, predicted): the count, or its fraction of the row or
// column (0 when that row or column is empty). Same preconditions as classification_report.
double normalized_cell(const std::vector<int64_t>& confusion, int classes, int truth, int predicted, Normalization n);

}  // namespace kiln::studio
