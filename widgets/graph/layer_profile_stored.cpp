// LayerProfilePanel: the stored profiles (layer_profile_panel.h) — listed, shown, two side by side.
#include <QDateTime>
#include <algorithm>

#include "widgets/graph/layer_profile_panel.h"

namespace kiln::studio {

namespace {

// "#3 cpu": how a stored profile is named in the summary and the side-by-side headers.
QString shortName(const LayerProfilePanel::StoredProfile& p) {
  return QStringLiteral("#%1 %2").arg(p.id).arg(QString::fromStdString(p.profile.device));
}

}  // namespace

QString LayerProfilePanel::storedLabel(const StoredProfile& p) {
  const QDateTime t = QDateTime::fromString(p.createdAt, Qt::ISODateWithMs);
  const QString when = t.isValid() ? t.toLocalTime().toString("yyyy-MM-dd HH:mm") : p.createdAt;
  return tr("#%1 · %2 · %3 · batch %4 · %5")
      .arg(p.id)
      .arg(QString::fromStdString(p.profile.device), QString::fromStdString(p.profile.precision))
      .arg(p.profile.batch)
      .arg(when);
}

const LayerProfilePanel::StoredProfile* LayerProfilePanel::stored(qint64 id) const {
  for (const StoredProfile& p : storedProfiles_)
    if (p.id == id) return &p;
  return nullptr;
}

void LayerProfilePanel::setStoredProfiles(const std::vector<StoredProfile>& profiles) {
  storedProfiles_ = profiles;
  fillStoredCombos();
  if (shownStored_ != 0 && !stored(shownStored_)) clearProfile();
  updateButtons();
}

void LayerProfilePanel::fillStoredCombos() {
  for (QComboBox* c : {stored_, storedOther_}) {
    const qint64 keep = c->currentData().toLongLong();
    c->clear();
    c->addItem(storedProfiles_.empty() ? tr("none stored") : tr("—"), qint64(0));
    for (const StoredProfile& p : storedProfiles_) {
      c->addItem(storedLabel(p), p.id);
      c->setItemData(c->count() - 1, storedLabel(p), Qt::ToolTipRole);  // whole, where the combo is narrow
    }
    const int i = c->findData(keep);
    c->setCurrentIndex(i >= 0 ? i : 0);
  }
}

bool LayerProfilePanel::showStored(qint64 id, qint64 otherId) {
  const StoredProfile* a = stored(id);
  const StoredProfile* b = otherId != 0 ? stored(otherId) : nullptr;
  if (worker_ || !a || (otherId != 0 && !b)) return false;
  clearProfile();
  std::vector<Result> results{{shortName(*a), a->profile, {}}};
  if (b) results.push_back({shortName(*b), b->profile, {}});
  profiled_ = doc_->graph();  // an edit of the graph clears it, as a fresh profile
  shown_ = true;
  show(results);
  summary_->setText((b ? tr("Stored profiles %1 vs %2").arg(storedLabel(*a), storedLabel(*b))
                       : tr("Stored profile %1").arg(storedLabel(*a))) +
                    "\n" + summary_->text());
  shownStored_ = id;
  stored_->setCurrentIndex(stored_->findData(id));
  storedOther_->setCurrentIndex(std::max(0, storedOther_->findData(otherId)));
  updateButtons();
  return true;
}

void LayerProfilePanel::onStoredPicked() {
  const qint64 id = stored_->currentData().toLongLong(), other = storedOther_->currentData().toLongLong();
  if (id != 0) {
    showStored(id, other);
  } else if (shownStored_ != 0) {
    clearProfile();
    storedOther_->setCurrentIndex(storedOther_->findData(other));
  }
  updateButtons();
}

}  // namespace kiln::studio
