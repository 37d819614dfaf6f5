// Test dependencies that installer/quickstart.sh installs (Fashion-MNIST, libonnx-testdata,
// python3 with torch / torchvision / numpy, a Vulkan device through mesa-vulkan-drivers where
// the Vulkan plugin is built, hipcc + libamdhip64-dev for the HIP plugin, util-linux): a test
// that lacks one is skipped, naming the package, unless KILN_REQUIRE_TEST_DEPS=1 (set by
// `installer/quickstart.sh test`, i.e. in CI), where it fails instead. Skips for hardware
// (no CUDA device, no AMD GPU) or a device's support table are not dependency skips.
// One line per call site, for GoogleTest and for Qt Test:
//   KILN_SKIP_UNLESS_DEP(fs::exists(dir), "libonnx-testdata", "no ONNX test data in " + dir);
//   KILN_QSKIP_UNLESS_DEP(QDir(d).exists(), "dataset-fashion-mnist", "no Fashion-MNIST in " + d);
// (the shell tests source tests/common/test_deps.sh, which also has require_npm_package for the
// npm registry's text datasets in KILN_NPM_DIR; make_torch_models.py has its own copy).
#pragma once
#include <cstdlib>
#include <cstring>
#include <string>

namespace kiln::test {

inline bool require_test_deps() {
  const char* v = std::getenv("KILN_REQUIRE_TEST_DEPS");
  return v && std::strcmp(v, "1") == 0;
}

// The skip or failure message for `what` (what is missing), caused by `package` not being installed.
inline std::string missing_dep_message(const std::string& package, const std::string& what) {
  if (require_test_deps())
    return package + " is not installed, but installer/quickstart.sh installs it (KILN_REQUIRE_TEST_DEPS=1): " + what;
  return what + " (Debian package " + package + " is not installed)";
}

}  // namespace kiln::test

// GoogleTest: returns from the test with a skip, or with a fatal failure under KILN_REQUIRE_TEST_DEPS=1.
#define KILN_SKIP_UNLESS_DEP(cond, package, what)                           \
  switch (0)                                                                \
  case 0:                                                                   \
  default:                                                                  \
    if (cond) {                                                             \
    } else if (::kiln::test::require_test_deps())                           \
      GTEST_FAIL() << ::kiln::test::missing_dep_message(package, what);     \
    else                                                                    \
      GTEST_SKIP() << ::kiln::test::missing_dep_message(package, what)

// Qt Test: QSKIP, or QFAIL under KILN_REQUIRE_TEST_DEPS=1.
#define KILN_QSKIP_UNLESS_DEP(cond, package, what)                                          \
  do {                                                                                      \
    if (!(cond)) {                                                                          \
      const std::string kiln_dep_message_ = ::kiln::test::missing_dep_message(package, what); \
      if (::kiln::test::require_test_deps()) QFAIL(kiln_dep_message_.c_str());              \
      QSKIP(kiln_dep_message_.c_str());                                                     \
    }                                                                                       \
  } while (false)
