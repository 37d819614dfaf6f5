#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The transfer-learning figure of docs/import-and-fine-tune.md (issue 13, "Transfer learning"),
# by hand, not in ctest (a few minutes on a CPU):
#
#   tests/cli/transfer_figure.sh path/to/kiln [WORK_DIR] [EPOCHS] [LR]
#
# 1. The CNN template (projects/templates/fashion_mnist_cnn.json) with a 5-class head trained on
#    Fashion-MNIST classes 0-4 (30,000 images) for 3 epochs, exported to ONNX.
# 2. For seeds 0, 1, 2: (a) the ONNX model imported, its head replaced by a fresh 5-class Linear,
#    everything else frozen, trained on 1,000 images of classes 5-9; (b) the same network from
#    scratch on the same 1,000 images (the subset depends only on --seed); (c) as (a) but with
#    fc1 trained too (--freeze-until pool2: the convolutions frozen). Same optimizer
#    (Adam, lr LR (default 0.001), cosine schedule, batch 64) and EPOCHS epochs (default 10) for both.
#    The base run in WORK_DIR is reused when it is there.
# Prints the test accuracy on the 5,000 test images of classes 5-9 of each run and the means.
set -euo pipefail
kiln=$1 work=${2:-runs/transfer-figure} epochs=${3:-10} lr=${4:-0.001}
templates=$(cd "$(dirname "$0")/../../projects/templates" && pwd)
mkdir -p "$work"
acc() { /usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['test_accuracy'])" "$1/summary.json"; }

if [[ ! -f $work/base/summary.json ]]; then
  "$kiln" train --graph "$templates/fashion_mnist_cnn.json" --replace-head 5 --classes 0-4 --epochs 3 \
    --batch-size 64 --seed 0 --out "$work/base"
fi
"$kiln" export "$work/base/graph.json" --weights "$work/base/model.safetensors" --out "$work/base.onnx"
echo "base (classes 0-4): test accuracy $(acc "$work/base")"

common=(--replace-head 5 --classes 5-9 --train-subset 1000 --epochs "$epochs" --batch-size 64 --lr "$lr"
        --optimizer adam --scheduler cosine)
results=()
for seed in 0 1 2; do
  rm -rf "$work/transfer_$seed" "$work/scratch_$seed" "$work/fc1_$seed"
  "$kiln" train --onnx "$work/base.onnx" --freeze-all-but-head "${common[@]}" --seed "$seed" \
    --out "$work/transfer_$seed" 2>"$work/transfer_$seed.log" >/dev/null
  "$kiln" train --graph "$templates/fashion_mnist_cnn.json" "${common[@]}" --seed "$seed" \
    --out "$work/scratch_$seed" 2>"$work/scratch_$seed.log" >/dev/null
  "$kiln" train --onnx "$work/base.onnx" --freeze-until pool2 "${common[@]}" --seed "$seed" \
    --out "$work/fc1_$seed" 2>"$work/fc1_$seed.log" >/dev/null
  results+=("$seed $(acc "$work/transfer_$seed") $(acc "$work/fc1_$seed") $(acc "$work/scratch_$seed")")
done
printf '%s\n' "${results[@]}" | /usr/bin/python3 -c '
import statistics, sys
rows = [line.split() for line in sys.stdin]
print("| seed | (a) transfer: new head only | (c) transfer: fc1 + new head | (b) from scratch |")
print("|---|---|---|---|")
for r in rows: print(f"| {r[0]} | " + " | ".join(f"{100*float(v):.2f}%" for v in r[1:]) + " |")
cols = [[100*float(r[i]) for r in rows] for i in (1, 2, 3)]
print("| mean ± sd | " + " | ".join(f"{statistics.mean(c):.2f} ± {statistics.stdev(c):.2f}%" for c in cols) + " |")'
