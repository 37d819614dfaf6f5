#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# `kiln train` with the captured CUDA training step (engine/train/captured_step.h) against
# the same run eager (--no-cuda-graph): same seed, the CNN on Fashion-MNIST, 2 epochs of the
# whole training set (468 full batches of 128 and one partial batch of 96 per epoch, which
# runs eagerly between replays). Requires epoch losses within 1 %, per batch losses within
# LOSS_TOL, the same learning rate at every batch, the same optimizer step count of every
# parameter in the checkpoint (2 * 469), and "CUDA graph: replaying" from the captured run.
# The two runs are not bitwise equal (cuDNN's convolution backward sums in no fixed order),
# so they drift apart slowly: on an H200 (2026-11-30) the largest per-batch difference was
# 0.027 with cosine and 0.088 with onecycle (peak lr 0.002), epoch losses within 1 %; a
# replay that kept the recorded lr (onecycle's first rate, 1/25 of the peak) would fail the
# epoch check. The exact check of
# replayed Adam/AdamW/SGD against eager steps is tests/engine/test_captured_step.cpp
# (an MLP, cuBLAS only: losses within 1e-4). Registered with ctest by
# tests/CMakeLists.txt, one test per scheduler:
#
#   tests/cli/test_cuda_graph.sh path/to/kiln cosine|onecycle|help
#
# help (no device needed): `kiln train --help` documents --no-cuda-graph and KILN_CUDA_GRAPH.
# Exit 77 (skipped) without a CUDA device or without the data set (KILN_TEST_DATA_DIR, else
# /usr/share/datasets/fashion-mnist; a failure without it under KILN_REQUIRE_TEST_DEPS=1).
set -uo pipefail
kiln=$1 scheduler=$2
source "$(dirname "$0")/../common/test_deps.sh"  # missing_dep
data=${KILN_TEST_DATA_DIR:-/usr/share/datasets/fashion-mnist}
LOSS_TOL=${LOSS_TOL:-0.25}
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
unset KILN_DEVICE KILN_CUDA_GRAPH

if [[ $scheduler == help ]]; then
  help=$("$kiln" train --help) || { echo "FAIL: kiln train --help exited $?"; exit 1; }
  for needle in --no-cuda-graph KILN_CUDA_GRAPH=0; do
    [[ $help == *"$needle"* ]] || { echo "FAIL: kiln train --help does not mention $needle"; exit 1; }
  done
  exit 0
fi

devices=$("$kiln" devices 2>&1)
if ! grep -q '^ *cuda:0' <<<"$devices"; then
  echo "SKIP: no CUDA device cuda:0 ($(grep -i cuda <<<"$devices" | head -1))"; exit 77
fi
[[ -d $data ]] || missing_dep dataset-fashion-mnist "no Fashion-MNIST in $data (set KILN_TEST_DATA_DIR)"

train() { # OUT_DIR EXTRA_FLAGS...
  local out=$1; shift
  "$kiln" train --device cuda:0 --model cnn --epochs 2 --batch-size 128 --lr 0.002 --scheduler "$scheduler" \
    --seed 3 --data-dir "$data" --out "$out" "$@" >"$out.out" 2>"$out.err" ||
    { echo "FAIL: kiln train $* exited $?: $(cat "$out.err")"; exit 1; }
}
train "$work/eager" --no-cuda-graph
train "$work/graph"
grep -q "CUDA graph: turned off" "$work/eager.err" || { echo "FAIL: the eager run does not say so: $(cat "$work/eager.err")"; exit 1; }
grep -q "CUDA graph: replaying" "$work/graph.err" || { echo "FAIL: the captured run did not replay: $(cat "$work/graph.err")"; exit 1; }

python3 - "$work/eager" "$work/graph" "$LOSS_TOL" <<'PY'
import csv, json, struct, sys
eager, graph, tol = sys.argv[1], sys.argv[2], float(sys.argv[3])

def rows(run, kind):
    with open(run + "/metrics.csv") as f:
        return [r for r in csv.DictReader(f) if r["kind"] == kind]

def steps(run):
    with open(run + "/checkpoint/optimizer.safetensors", "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        meta = json.loads(f.read(n)).get("__metadata__", {})
    return {k: float(v) for k, v in meta.items() if k.endswith(".step")}

fail = []
a, b = rows(eager, "batch"), rows(graph, "batch")
if len(a) != len(b) or len(a) != 2 * 469:
    fail.append(f"batch rows: eager {len(a)}, captured {len(b)}, expected {2 * 469}")
worst = max((abs(float(x["loss"]) - float(y["loss"])) for x, y in zip(a, b)), default=float("nan"))
lr_diff = max((abs(float(x["lr"]) - float(y["lr"])) for x, y in zip(a, b)), default=0.0)
if not worst <= tol:
    fail.append(f"largest per-batch loss difference {worst:.3g} > {tol}")
if lr_diff > 1e-12:
    fail.append(f"learning rates differ by {lr_diff:.3g}")
for x, y in zip(rows(eager, "train"), rows(graph, "train")):
    le, lg = float(x["loss"]), float(y["loss"])
    if abs(le - lg) > 0.01 * abs(le):
        fail.append(f"epoch {x['epoch']} train loss eager {le:.5f}, captured {lg:.5f}")
se, sg = steps(eager), steps(graph)
if not se or se != sg or set(se.values()) != {2.0 * 469}:
    fail.append(f"optimizer step counts differ or are not {2 * 469}: eager {sorted(set(se.values()))} "
                f"({len(se)} params), captured {sorted(set(sg.values()))} ({len(sg)} params)")
print(f"{len(a)} batches; largest per-batch loss difference {worst:.3g}; "
      f"final batch loss eager {float(a[-1]['loss']):.5f} captured {float(b[-1]['loss']):.5f}; "
      f"step counts {sorted(set(sg.values()))}")
for f in fail:
    print("FAIL:", f)
sys.exit(1 if fail else 0)
PY
status=$?
for run in eager graph; do
  python3 -c "import json,sys; s=json.load(open(sys.argv[1])); print(sys.argv[2], round(s['images_per_second']), 'images/s,', 'cuda_graph:', s['cuda_graph'])" \
    "$work/$run/summary.json" "$run"
done
exit $status
