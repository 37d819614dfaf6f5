# SPDX-License-Identifier: GPL-3.0-or-later
# Sourced by the `kiln` command-line test scripts (tests/engine/test_cli.sh, tests/cli/test_csv.sh)
# after they set kiln=PATH: a scratch folder $work removed at exit, two threads, no KILN_DEVICE,
# and the checks below, each counting into $failures (the script exits 1 when it is not 0).
source "$(dirname "${BASH_SOURCE[0]}")/test_deps.sh"  # missing_dep
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
unset KILN_DEVICE
failures=0

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
# run EXPECTED_STATUS ARGS...: runs kiln, keeps stdout/stderr in $out/$err, checks the status.
run() {
  local want=$1; shift
  "$kiln" "$@" >"$work/out" 2>"$work/err"
  status=$?
  out=$(cat "$work/out") err=$(cat "$work/err")
  [[ $status == "$want" ]] || fail "kiln $* exited $status, expected $want; stderr: $err"
}
contains() { # TEXT NEEDLE WHAT
  [[ $1 == *"$2"* ]] || fail "$3 lacks '$2': $1"
}
one_line() { # TEXT WHAT
  [[ $(printf '%s\n' "$1" | wc -l) == 1 ]] || fail "$2 is not one line: $1"
}
