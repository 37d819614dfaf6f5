// NewSweepDialog: the Experiments dock's "New Sweep…" form. Parameter rows (NAME and VALUES, the
// syntax of `kiln sweep --param NAME=VALUES`: sweep_space.h's parser checks each row, there is no
// other), the search (grid or random), the trials, the random search's seed, the devices (a
// checkbox each: one lane per checked device), the objective and the median rule's start. Start
// hands the request to the starter; a refused request (a bad value, a parameter the graph does
// not have, a trial that does not fit) keeps the form open with the reason in its error line.
#pragma once
#include <QDialog>
#include <functional>
#include <string>
#include <vector>

#include "app/studio/sweep_plan.h"
#include "engine/graph/graph.h"

class QComboBox;
class QLabel;
class QListWidget;
class QPushButton;
class QSpinBox;
class QTableWidget;

namespace kiln::studio {

class NewSweepDialog : public QDialog {
  Q_OBJECT
 public:
  enum Column { NameCol, ValuesCol };
  // graph: its nodes' Int and Float attributes are offered as NODE.ATTRIBUTE names; devices:
  // one checkbox each ("cpu", "vulkan:0"), `checkedDevice` checked (else the first).
  NewSweepDialog(const graph::Graph& graph, const std::vector<std::string>& devices, const std::string& checkedDevice,
                 QWidget* parent = nullptr);
  // Called by Start with the request and the checked devices: "" when the sweep started (the
  // dialog closes), else the reason, shown in the form.
  using Starter = std::function<QString(const SweepRequest&, const std::vector<std::string>& devices)>;
  void setStarter(Starter starter) { starter_ = std::move(starter); }

  void setParams(const QStringList& params);  // "NAME=VALUES" rows, replacing the rows
  QStringList params() const;                 // the non-empty rows as "NAME=VALUES"
  SweepRequest request() const;
  std::vector<std::string> devices() const;   // checked, in list order

  QTableWidget* paramTable() const { return table_; }
  QComboBox* searchCombo() const { return search_; }
  QSpinBox* trialsSpin() const { return trials_; }
  QSpinBox* seedSpin() const { return seed_; }
  QListWidget* deviceList() const { return devices_; }
  QComboBox* objectiveCombo() const { return objective_; }
  QSpinBox* pruneSpin() const { return prune_; }
  QLabel* errorLabel() const { return error_; }
  QPushButton* startButton() const { return start_; }

 public slots:
  // Checks each row with sweep::parse_param, then calls the starter; the first problem is
  // shown in errorLabel() (its row selected) and the dialog stays open.
  void tryStart();

 private:
  void addRow(const QString& name, const QString& values);
  void showError(const QString& text, int row = -1);

  QStringList names_;  // the names offered in each row's combo
  QTableWidget* table_;
  QComboBox* search_;
  QSpinBox* trials_;
  QSpinBox* seed_;
  QListWidget* devices_;
  QComboBox* objective_;
  QSpinBox* prune_;
  QLabel* error_;
  QPushButton* start_;
  Starter starter_;
};

}  // namespace kiln::studio
