#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# `kiln bench` output checks (ctest backend-ops.bench.*): bench_cli_test.sh KILN CASE
#   unique     a device named twice (cpu,cpu,all) is measured once
#   csv        the CSV parses as RFC 4180 (CRLF rows, quoted fields) and agrees with the JSON;
#              on lavapipe the device name "llvmpipe (LLVM ..., 256 bits)" holds a comma
#   peak       every device row reports its backend's peak memory (bytes > 0, not n/a)
#   interrupt  SIGINT mid-run: exit 130, the partial row printed and written, marked interrupted
#   no_cpu     without a CPU row the speedup is n/a (JSON null), not 0.00x (needs a Vulkan device)
#   train_f16  `kiln train --device vulkan:0 --precision f16` (autocast, loss scaling) trains and
#              evaluates a few batches (needs a Vulkan device and Fashion-MNIST)
# Exits 77 (skipped) without python3, Fashion-MNIST or vulkan:0, or fails for one of them under
# KILN_REQUIRE_TEST_DEPS=1 (tests/common/test_deps.sh); without the Vulkan plugin, a skip.
set -uo pipefail
kiln=$1 case=$2
source "$(dirname "$0")/../common/test_deps.sh"  # missing_dep
command -v python3 >/dev/null || missing_dep python3 "no python3"
need_vulkan() {  # vulkan:0: lavapipe (mesa-vulkan-drivers) wherever the Vulkan plugin is built
  local devices; devices=$("$kiln" devices 2>&1)
  grep -q '^vulkan:0 ' <<<"$devices" && return
  grep -q '^unavailable: vulkan: not built' <<<"$devices" && { echo "SKIPPED: the Vulkan plugin is not built"; exit 77; }
  missing_dep mesa-vulkan-drivers "no vulkan:0 ($(grep '^unavailable: vulkan' <<<"$devices"))"
}
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
export OMP_NUM_THREADS=2
quick=(--model mlp --steps 2 --warmup 1 --batch-size 8 --json "$work/b.json" --csv "$work/b.csv")
fail() { echo "FAIL: $*"; exit 1; }

case $case in
  unique)
    "$kiln" bench "${quick[@]}" --devices cpu,cpu,all >"$work/out" 2>&1 || { cat "$work/out"; fail "bench failed"; }
    python3 - "$work/b.json" <<'PY' || fail "a device appears twice"
import json, sys
devs = [r["device"] for r in json.load(open(sys.argv[1]))["results"]]
print("devices:", devs)
sys.exit(0 if devs.count("cpu") == 1 and len(devs) == len(set(devs)) else 1)
PY
    [[ $(grep -c '^cpu ' "$work/out") == 1 ]] || fail "the table shows cpu more than once"
    ;;
  csv)
    "$kiln" bench "${quick[@]}" --devices all >"$work/out" 2>&1 || { cat "$work/out"; fail "bench failed"; }
    python3 - "$work/b.json" "$work/b.csv" <<'PY' || fail "the CSV is not RFC 4180 or disagrees with the JSON"
import csv, json, sys
data = open(sys.argv[2], newline="").read()
assert data.endswith("\r\n") and "\n" not in data.replace("\r\n", ""), "rows must end with CRLF"
rows = list(csv.reader(data.splitlines(), strict=True))
head, body = rows[0], rows[1:]
results = json.load(open(sys.argv[1]))["results"]
assert len(body) == len(results), (len(body), len(results))
for row, res in zip(body, results):
    assert len(row) == len(head) == 11, row
    rec = dict(zip(head, row))
    for key in ("device", "name", "kind", "error"):
        assert rec[key] == res[key], (key, rec[key], res[key])
    print("row:", rec["device"], repr(rec["name"]))
PY
    ;;
  peak)
    "$kiln" bench "${quick[@]}" --devices all >"$work/out" 2>&1 || { cat "$work/out"; fail "bench failed"; }
    cat "$work/out"
    python3 - "$work/b.json" <<'PY' || fail "a device did not report its peak memory"
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    assert isinstance(r["peak_memory_bytes"], int) and r["peak_memory_bytes"] > 0, r
PY
    ! grep -q ' n/a ' "$work/out" || fail "the table shows n/a for a backend that tracks memory"
    ;;
  interrupt)
    "$kiln" bench --model mlp --devices cpu,all --steps 100000000 --warmup 0 \
      --batch-size 8 --json "$work/b.json" --csv "$work/b.csv" >"$work/out" 2>&1 &
    pid=$!
    # Ctrl-C a second after the CPU's steps began (a loaded machine may take seconds to start).
    for _ in $(seq 600); do
      grep -q "^  cpu (" "$work/out" && break
      kill -0 $pid 2>/dev/null || break
      sleep 0.1
    done
    sleep 1
    kill -INT $pid 2>/dev/null
    wait $pid
    rc=$?
    cat "$work/out"
    [[ $rc == 130 ]] || fail "exit status $rc, expected 130"
    grep -q "interrupted" "$work/out" || fail "the table does not say interrupted"
    python3 - "$work/b.json" "$work/b.csv" <<'PY' || fail "the partial results were not written"
import csv, json, sys
j = json.load(open(sys.argv[1]))
assert j["interrupted"] is True
r = j["results"]
assert len(r) == 1 and r[0]["device"] == "cpu" and r[0]["interrupted"] is True, r
assert r[0]["train_step_ms"] > 0, "completed steps must be timed"
rows = list(csv.reader(open(sys.argv[2], newline="")))
assert len(rows) == 2 and rows[1][9] == "true", rows
PY
    ;;
  no_cpu)
    need_vulkan
    "$kiln" bench "${quick[@]}" --devices vulkan:0 >"$work/out" 2>&1 || { cat "$work/out"; fail "bench failed"; }
    cat "$work/out"
    grep -qE '^vulkan:0 .* n/a *$' "$work/out" || fail "the speedup column is not n/a"
    python3 - "$work/b.json" "$work/b.csv" <<'PY' || fail "the files do not say n/a"
import csv, json, sys
r = json.load(open(sys.argv[1]))["results"][0]
assert r["train_speedup_vs_cpu"] is None, r
rows = list(csv.reader(open(sys.argv[2], newline="")))
assert rows[1][8] == "n/a", rows
PY
    ;;
  train_f16)
    need_vulkan
    data=/usr/share/datasets/fashion-mnist
    [[ -e $data/train-images-idx3-ubyte.gz || -e $data/train-images-idx3-ubyte ]] ||
      missing_dep dataset-fashion-mnist "no Fashion-MNIST in $data"
    "$kiln" train --model mlp --device vulkan:0 --precision f16 --epochs 1 --batch-size 32 --limit-batches 6 \
      --data-dir "$data" --out "$work/run" >"$work/out" 2>&1 || { cat "$work/out"; fail "f16 training failed"; }
    cat "$work/out"
    grep -q "f16 loss scaling" "$work/out" || fail "no loss scaling report"
    python3 - "$work/run/summary.json" <<'PY' || fail "the summary lacks f16 or a finite loss"
import json, math, sys
s = json.load(open(sys.argv[1]))
print({k: s[k] for k in s if k in ("precision", "test_loss", "test_accuracy")})
assert s.get("precision") == "f16", s.get("precision")
assert math.isfinite(float(s["test_loss"])), s["test_loss"]
PY
    ;;
  *) fail "unknown case $case" ;;
esac
echo "PASS: $case"
