#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Batch-1 CPU inference, Kiln's ONNX executor vs onnxruntime, both sides in one run (issue 18):
# torchvision resnet18 / mobilenet_v3_small / efficientnet_b0 / convnext_tiny (224x224), a ViT-tiny
# (32x32, 2 layers), a 2-layer nn.TransformerEncoder (d 64) and a U-Net (128x128), exported with random seeded weights
# by export_bench_models.py. For each model and thread count: Kiln's median ms (`kiln run --repeat`,
# OMP_NUM_THREADS), onnxruntime's median ms (intra_op_num_threads, CPU provider, all graph
# optimizations), the ratio ORT/Kiln (> 1: Kiln is faster) and the largest output difference
# relative to the output's largest magnitude (max|kiln - ort| / max|ort|; "ok" when <= 1e-5).
# A benchmark, not a test: run it on a quiet machine.
#
#   tests/bench/onnx_vs_ort.sh [-t "2 16"] [-m "resnet18 ..."] [-r RUNS] [-k path/to/kiln] [-d MODEL_DIR]
#                              [-b path/to/older/kiln]
#
# -t: thread counts (default "2 $(nproc)"), -r: timed runs per side (default 30, after one
# warm-up), -d: reuse exported models there (default: export into a temporary folder), -b: also
# time another kiln binary (a build of an older commit) in the same run: a "base ms" column.
# onnxruntime: Python's (`import onnxruntime`: the GPU machine) when PYTHON has it, else the npm
# package onnxruntime-node from KILN_NPM_DIR (default ~/.local/share/kiln/npm; installer/
# quickstart.sh bench installs it). PYTHON: the interpreter with torch (default: the first of
# python3, /usr/bin/python3 that imports torch). Needs no network and no Qt (an engine-only
# build, cmake -DKILN_STUDIO=OFF, is enough).
set -euo pipefail
here=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
cd "$here/../.."

threads="2 $(nproc)" models="resnet18 mobilenet_v3_small efficientnet_b0 convnext_tiny vit_tiny transformer unet"
runs=30 kiln=build/bin/kiln model_dir= base=
while getopts "t:m:r:k:d:b:h" opt; do
  case $opt in
    t) threads=$OPTARG ;; m) models=$OPTARG ;; r) runs=$OPTARG ;; k) kiln=$OPTARG ;; d) model_dir=$OPTARG ;;
    b) base=$OPTARG ;;
    *) sed -n '3,22s/^# \{0,1\}//p' "$0"; exit 2 ;;
  esac
done
threads=$(tr ' ' '\n' <<<"$threads" | awk 'NF && !seen[$0]++' | tr '\n' ' ')
[[ -x $kiln ]] || { echo "kiln: $kiln is missing; build it first (cmake --preset default && cmake --build build --target kiln)"; exit 1; }

python=
for p in ${PYTHON:-python3 /usr/bin/python3}; do
  if "$p" -c 'import torch, numpy' 2>/dev/null; then python=$p; break; fi
done
[[ -n $python ]] || { echo "no python with torch and numpy (apt-get install python3-torch python3-torchvision)"; exit 1; }

source "$here/ort_select.sh"
select_ort "$here/ort_time.py" "$here/ort_time.js" "$python"

work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
if [[ -z $model_dir ]]; then
  model_dir=$work/models
  # shellcheck disable=SC2086
  "$python" "$here/export_bench_models.py" "$model_dir" $models 2>"$work/export.log" | grep -v '^exported' || true
fi

echo "batch-1 CPU inference, Kiln vs $ort_name, $runs runs after 1 warm-up; torch $("$python" -c 'import torch; print(torch.__version__)')"
echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-20s %7s %10s %10s %8s %10s%s\n' model threads "kiln ms" "ort ms" ort/kiln "max rel" "${base:+    base ms}"
status=0
for m in $models; do
  d=$model_dir/$m
  if [[ ! -f $d/model.onnx ]]; then
    printf '%-20s %s\n' "$m" "not exported: $(grep -m1 "FAILED $m" "$work/export.log" 2>/dev/null || echo "no $d/model.onnx")"
    status=1; continue
  fi
  for t in $threads; do
    out=$work/out-$m-$t
    if ! ort_line=$("${ort[@]}" "$d/model.onnx" "$d/input.npy" "$t" "$runs" "$work/ort-$m.npy" 2>"$work/ort.log"); then
      printf '%-20s %7s  onnxruntime failed: %s\n' "$m" "$t" "$(tail -n 1 "$work/ort.log")"; status=1; continue
    fi
    if ! kiln_out=$(OMP_NUM_THREADS=$t "$kiln" run "$d/model.onnx" --input "$d/input.npy" --device cpu \
                      --repeat "$runs" --out-dir "$out" 2>&1); then
      printf '%-20s %7s  kiln failed: %s\n' "$m" "$t" "$(tail -n 1 <<<"$kiln_out")"; status=1; continue
    fi
    kiln_ms=$(sed -nE 's/^latency: median ([0-9.]+) ms.*/\1/p' <<<"$kiln_out")
    read -r ort_ms _ <<<"$ort_line"
    base_ms=
    if [[ -n $base ]]; then
      base_ms=$(OMP_NUM_THREADS=$t "$base" run "$d/model.onnx" --input "$d/input.npy" --device cpu --repeat "$runs" \
                  --out-dir "$work/base-out" 2>&1 | sed -nE 's/^latency: median ([0-9.]+) ms.*/\1/p') || true
      base_ms=${base_ms:-failed}
    fi
    "$python" - "$m" "$t" "$kiln_ms" "$ort_ms" "$work/ort-$m.npy" "$out"/*.npy "$base_ms" <<'PYEOF' || status=1
import sys
import numpy as np
m, t, k, o = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
ref, got = np.load(sys.argv[5]).astype(np.float64), np.load(sys.argv[6]).astype(np.float64)
base = f"{sys.argv[7]:>11}" if sys.argv[7] else ""
rel = float(np.abs(got - ref).max() / max(np.abs(ref).max(), 1e-30)) if ref.shape == got.shape else float("inf")
print(f"{m:<20} {t:>7} {k:>10.3f} {o:>10.3f} {o / k:>8.2f} {rel:>10.1e}{base}{'' if rel <= 1e-5 else '  OUTPUT DIFFERS'}")
sys.exit(0 if rel <= 1e-5 else 1)
PYEOF
  done
done
exit $status
