// Runs the built kiln-studio as a separate process, for the GUI tests of its headless mode.
#pragma once
#include <QProcess>
#include <QString>
#include <QStringList>

namespace kiln::test {

// kiln-studio (KILN_BINARY_DIR/bin) with `args`; returns stdout + stderr, the exit code in
// `code` (-1 when it crashed or was killed after 4 minutes).
inline QString studio(const QStringList& args, int* code) {
  QProcess p;
  p.setProcessChannelMode(QProcess::MergedChannels);
  p.start(QStringLiteral(KILN_BINARY_DIR "/bin/kiln-studio"), args);
  if (!p.waitForFinished(240000)) p.kill();
  *code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
  return p.readAll();
}

}  // namespace kiln::test
