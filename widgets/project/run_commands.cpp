#include "widgets/project/run_commands.h"

#include "widgets/project/runs_view.h"

namespace kiln::studio {

namespace {

// A run name as an undo command text: at most 40 characters.
QString short_name(const QString& name) { return name.size() <= 40 ? name : name.left(39) + QChar(0x2026); }

std::vector<std::string> to_std(const QStringList& list) {
  std::vector<std::string> out;
  for (const QString& s : list) out.push_back(s.toStdString());
  return out;
}

}  // namespace

void RunCommand::apply(const std::function<void()>& f) {
  if (pushedDone_) {
    pushedDone_ = false;
    view_->refresh();
    return;
  }
  try {
    if (!view_->project()) throw projects::ProjectError("no project is open");
    f();
  } catch (const std::exception& e) {
    emit view_->message(QString::fromUtf8(e.what()));
  }
  view_->refresh();
}

RenameRunCommand::RenameRunCommand(RunsView* view, int64_t run, const QString& before, const QString& after)
    : RunCommand(view), run_(run), before_(before), after_(after) {
  setText(QObject::tr("Rename run %1 to %2").arg(run).arg(short_name(after)));
}
void RenameRunCommand::redo() { apply([this] { view_->project()->rename_run(run_, after_.toStdString()); }); }
void RenameRunCommand::undo() { apply([this] { view_->project()->rename_run(run_, before_.toStdString()); }); }

TagRunCommand::TagRunCommand(RunsView* view, int64_t run, const QStringList& before, const QStringList& after)
    : RunCommand(view), run_(run), before_(before), after_(after) {
  setText(QObject::tr("Tag run %1 %2").arg(run).arg(short_name(after.join(", "))));
}
void TagRunCommand::redo() { apply([this] { view_->project()->set_run_tags(run_, to_std(after_)); }); }
void TagRunCommand::undo() { apply([this] { view_->project()->set_run_tags(run_, to_std(before_)); }); }

DeleteRunsCommand::DeleteRunsCommand(RunsView* view, const QList<int64_t>& runs, const QString& names)
    : RunCommand(view), runs_(runs) {
  setText(runs.size() == 1 ? QObject::tr("Delete run %1 (%2)").arg(runs.front()).arg(short_name(names))
                           : QObject::tr("Delete %1 runs").arg(runs.size()));
}
void DeleteRunsCommand::redo() {
  apply([this] {
    for (int64_t id : runs_) view_->project()->delete_run(id);
  });
}
void DeleteRunsCommand::undo() {
  apply([this] {
    for (int64_t id : runs_) view_->project()->restore_run(id);
  });
}

}  // namespace kiln::studio
