// Undoable edits of a project's runs (RunsView pushes them onto the window's undo stack):
// rename, tags, delete (soft: Project::delete_run, undone by restore_run with every
// metric, checkpoint and evaluation, until the project is closed and purged).
#pragma once
#include <QList>
#include <QStringList>
#include <QUndoCommand>
#include <cstdint>
#include <functional>

namespace kiln::studio {

class RunsView;

// Every run command has this id (QUndoCommand::id), so the window can tell them from the
// graph's edits: they change the project file at once and never make the graph "modified".
inline constexpr int kRunCommandId = 0x52554e;

class RunCommand : public QUndoCommand {
 public:
  int id() const override { return kRunCommandId; }

 protected:
  explicit RunCommand(RunsView* view) : view_(view) {}
  // RunsView makes the edit itself (a refused edit is never pushed), then pushes the
  // command: its first redo() only reloads the view. Later, runs f; a ProjectError goes to
  // the view's message signal (undo cannot fail loudly); then the view reloads.
  void apply(const std::function<void()>& f);
  RunsView* view_;
  bool pushedDone_ = true;
};

class RenameRunCommand : public RunCommand {
 public:
  RenameRunCommand(RunsView* view, int64_t run, const QString& before, const QString& after);
  void redo() override;
  void undo() override;

 private:
  int64_t run_;
  QString before_, after_;
};

class TagRunCommand : public RunCommand {
 public:
  TagRunCommand(RunsView* view, int64_t run, const QStringList& before, const QStringList& after);
  void redo() override;
  void undo() override;

 private:
  int64_t run_;
  QStringList before_, after_;
};

class DeleteRunsCommand : public RunCommand {
 public:
  DeleteRunsCommand(RunsView* view, const QList<int64_t>& runs, const QString& names);
  void redo() override;
  void undo() override;

 private:
  QList<int64_t> runs_;
};

}  // namespace kiln::studio
