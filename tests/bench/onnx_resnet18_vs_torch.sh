#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# ResNet-18 (torchvision, random weights) batch-1 224x224 CPU inference latency: PyTorch eager
# (Debian's python3-torch, torch.no_grad, eval) against `kiln run --repeat` on the same ONNX
# export (make_torch_models.py, opset 17), same thread count. Prints both medians and the ratio
# kiln / torch (< 1: Kiln is faster). A benchmark program, not a test: run it on a quiet machine.
# Usage: onnx_resnet18_vs_torch.sh KILN [RUNS=30] [THREADS=all cores]
set -eu
# PyTorch's OpenMP threads wait as kiln's do (app/omp_wait.h), unless the caller chose.
[[ -n ${GOMP_SPINCOUNT:-}${OMP_WAIT_POLICY:-} ]] || export GOMP_SPINCOUNT=1000
KILN=$1
RUNS=${2:-30}
THREADS=${3:-$(nproc)}
PY=/usr/bin/python3
HERE=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export OMP_NUM_THREADS=$THREADS
"$PY" "$HERE/../onnx/make_torch_models.py" "$TMP" resnet18 >/dev/null
torch_ms=$("$PY" - "$TMP/resnet18/input.npy" "$RUNS" "$THREADS" <<'PYEOF'
import sys, time
import numpy as np
import torch, torchvision
torch.set_num_threads(int(sys.argv[3]))
model = torchvision.models.resnet18(weights=None).eval()
x = torch.from_numpy(np.load(sys.argv[1]))
runs = int(sys.argv[2])
with torch.no_grad():
    model(x)
    ms = []
    for _ in range(runs):
        t0 = time.perf_counter()
        model(x)
        ms.append((time.perf_counter() - t0) * 1e3)
ms.sort()
print(f"{ms[len(ms) // 2]:.3f} {ms[0]:.3f}")
PYEOF
)
out=$("$KILN" run "$TMP/resnet18/model.onnx" --input "$TMP/resnet18/input.npy" --out-dir "$TMP/out" --device cpu --repeat "$RUNS")
kiln_line=$(grep "^latency:" <<<"$out")
kiln_ms=$(sed -E 's/latency: median ([0-9.]+) ms.*/\1/' <<<"$kiln_line")
kiln_min=$(sed -E 's/.*min ([0-9.]+) ms.*/\1/' <<<"$kiln_line")
read -r t_med t_min <<<"$torch_ms"
echo "resnet18 batch 1, 224x224, cpu, $THREADS threads, $RUNS runs after 1 warm-up"
echo "pytorch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)'): median $t_med ms, min $t_min ms"
echo "kiln:    median $kiln_ms ms, min $kiln_min ms"
"$PY" -c "print(f'ratio kiln/pytorch (median): {float(\"$kiln_ms\") / float(\"$t_med\"):.2f}')"
