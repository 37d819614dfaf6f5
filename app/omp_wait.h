// How long an idle OpenMP thread of Kiln's programs (kiln, kiln-studio) waits actively.
//
// GNU libgomp, which runs the CPU backend's kernels and oneDNN's, lets an idle thread spin up to
// GOMP_SPINCOUNT times before it sleeps: 300,000 by default (milliseconds of spinning), cut to 100
// only when its own threads outnumber the CPUs (libgomp manual, "GOMP_SPINCOUNT"). A spinning thread holds
// its core while the training thread does serial work between kernels, so wherever anything else
// wants that core (a DataLoader worker decoding images, the Studio's UI thread, another process)
// the kernels wait for the scheduler. On a 2-core machine that made a CNN's training step from an
// image folder ~35% slower than from the same images in memory, and a second busy process made
// steps 3-14x slower. With 1,000 spins neither happens; a quiet 16-core machine trains the reference
// CNN as fast as with 300,000 and the MLP's sub-millisecond steps up to ~14% slower (the figures
// are in issue 14's note of 2026-12-03). GOMP_SPINCOUNT=300000 restores libgomp's default.
//
// libgomp reads the variable once, when it is loaded, before main(): so use_short_omp_spin()
// executes the program again (its path from /proc/self/exe, same arguments) with
// GOMP_SPINCOUNT=1000 when the user set neither GOMP_SPINCOUNT nor OMP_WAIT_POLICY; a user's
// setting is kept as given. Call it first thing in main(), before any thread starts. Where exec
// fails (no /proc) the program runs on with libgomp's default.
#pragma once
#include <cstdlib>
#include <string>

#include <unistd.h>

namespace kiln::app {

inline constexpr const char* kOmpSpinCount = "1000";

inline void use_short_omp_spin(char** argv) {
  if (std::getenv("GOMP_SPINCOUNT") != nullptr || std::getenv("OMP_WAIT_POLICY") != nullptr) return;
  if (setenv("GOMP_SPINCOUNT", kOmpSpinCount, 1) != 0) return;
  // The program's own path, so that ps and top show its name (not "exe"); /proc/self/exe where
  // it cannot be read (or the file was replaced since).
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n > 0) {
    self[n] = '\0';
    execv(self, argv);
  }
  execv("/proc/self/exe", argv);
  unsetenv("GOMP_SPINCOUNT");  // exec failed: libgomp (already loaded) uses its default
}

// What the OpenMP threads of this process do when idle, for `kiln devices`:
// "GOMP_SPINCOUNT=1000" or "OMP_WAIT_POLICY=passive", or libgomp's default.
inline std::string omp_wait_setting() {
  std::string s;
  for (const char* name : {"GOMP_SPINCOUNT", "OMP_WAIT_POLICY"})
    if (const char* v = std::getenv(name)) s += (s.empty() ? "" : ", ") + std::string(name) + "=" + v;
  return s.empty() ? "libgomp's default (GOMP_SPINCOUNT=300000)" : s;
}

}  // namespace kiln::app
