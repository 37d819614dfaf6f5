// MainWindow's transfer-learning actions (Edit menu, canvas context menu): frozen layers
// and a new classifier head, through GraphDocument's undoable edits (engine/graph/transfer.h).
#include <QAction>
#include <QInputDialog>
#include <QMenu>
#include <QStatusBar>

#include "app/studio/main_window.h"
#include "app/studio/training_job.h"
#include "widgets/graph/graph_canvas.h"
#include "widgets/graph/graph_document.h"
#include "widgets/training/log_panel.h"

namespace kiln::studio {

void MainWindow::createTransferActions(QMenu* edit) {
  edit->addSeparator();
  QAction* freeze = edit->addAction(tr("&Freeze Up to Selected Node"));
  freeze->setToolTip(tr("Freeze the selected node and every node it depends on (transfer learning)"));
  connect(freeze, &QAction::triggered, this, [this] {
    const QList<graph::NodeId> nodes = canvas_->selectedNodes();
    if (nodes.size() == 1) document_->freezeUpTo(nodes.front());
    else statusBar()->showMessage(tr("Select one node to freeze it and every node before it"), 6000);
  });
  edit->addAction(tr("U&nfreeze All"), document_, &GraphDocument::unfreezeAll);
  QAction* head = edit->addAction(tr("Replace Classifier &Head…"));
  connect(head, &QAction::triggered, this, [this] { replaceClassifierHead(); });
  connect(canvas_, &GraphCanvas::replaceHeadRequested, this, [this] { replaceClassifierHead(); });
}

bool MainWindow::replaceClassifierHead(int64_t classes) {
  if (classes <= 0) {
    int64_t dataset_classes = kFashionMnistClasses;  // the dataset's, after its class filter
    try {
      dataset_classes = datasetSettings().num_classes();
    } catch (const std::exception&) {  // an invalid filter: the Dataset panel reports it
    }
    bool ok = false;
    const int n = QInputDialog::getInt(this, tr("Replace classifier head"),
                                       tr("Classes (outputs of the new last Linear layer):"),
                                       int(dataset_classes), 1, 1000000, 1, &ok);
    if (!ok) return false;
    classes = n;
  }
  QString reason;
  const graph::NodeId id = document_->replaceHead(classes, &reason);
  if (id < 0) {
    showError(tr("Cannot replace the classifier head"), reason);
    return false;
  }
  // The imported weights of the old head no longer apply (a fresh nn.Linear initialization).
  const std::string prefix = document_->graph().node(id).name + ".";
  std::erase_if(importedState_, [&](const auto& kv) { return kv.first.starts_with(prefix); });
  log_->info(tr("new classifier head %1 with %2 outputs, freshly initialized")
                 .arg(toQString(document_->graph().node(id).name))
                 .arg(classes));
  return true;
}

}  // namespace kiln::studio
