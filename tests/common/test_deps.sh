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

# The npm registry's text datasets (installer/quickstart.sh test installs them with npm install
# --prefix into KILN_NPM_DIR, by default ~/.local/share/kiln/npm): the prefix, and
# require_npm_package PACKAGE, which skips (exit 77) or fails like missing_dep when
# PREFIX/node_modules/PACKAGE is missing.
kiln_npm_dir() { echo "${KILN_NPM_DIR:-${KILN_DATA_DIR:-$HOME/.local/share/kiln}/npm}"; }
require_npm_package() {
  local dir
  dir=$(kiln_npm_dir)
  [[ -f $dir/node_modules/$1/package.json ]] && return 0
  if [[ ${KILN_REQUIRE_TEST_DEPS:-} == 1 ]]; then
    echo "FAIL: npm package $1 is not in $dir, but installer/quickstart.sh test installs it (KILN_REQUIRE_TEST_DEPS=1)"
    exit 1
  fi
  echo "SKIP: npm package $1 is not in $dir (installer/quickstart.sh test installs it; set KILN_NPM_DIR for another prefix)"
  exit 77
}
