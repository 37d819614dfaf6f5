# Sourced by the shell tests: a dependency that installer/quickstart.sh installs is missing.
# missing_dep PACKAGE WHAT exits 77 (ctest: skipped), or 1 (failed) when KILN_REQUIRE_TEST_DEPS=1
# (set by `installer/quickstart.sh test`, i.e. in CI). See tests/common/test_deps.h.
missing_dep() {
  if [[ ${KILN_REQUIRE_TEST_DEPS:-} == 1 ]]; then
    echo "FAIL: $1 is not installed, but installer/quickstart.sh installs it (KILN_REQUIRE_TEST_DEPS=1): $2"
    exit 1
  fi
  echo "SKIP: $2 (Debian package $1 is not installed)"
  exit 77
}
