#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# ResNet-18 (torchvision, 224x224, random seeded weights) int8 vs f32 in Kiln, batch 1 and 32,
# both sides of each ratio from one run (issue 17's "ResNet-18 >= 2.5x"), and the same int8 model
# in onnxruntime. bench_int8 imports the torchvision export (tests/onnx/make_torch_models.py),
# quantizes it (min-max on 4 random batches, Kiln's int8 model) and prints
#   - Kiln's int8 model (engine/quant/int8_model.h) against the f32 graph module, and
#   - its QDQ export (export_qdq.h) against the f32 export, both in Kiln's ONNX executor as
#     `kiln run` loads them (FuseQdq, FuseAddQuantize: which layers run on the int8 kernels),
# then onnxruntime (Python's where it imports, else onnxruntime-node from KILN_NPM_DIR:
# tests/bench/ort_select.sh) times the same f32 and QDQ files at the same thread count.
# A benchmark, not a test: run it on a quiet machine (it takes a few minutes on 2 threads).
#
#   tests/bench/int8_resnet18.sh [-t THREADS] [-b "1 32"] [-k BUILD_BIN_DIR] [-w DIR]
#
# -t: threads of every side (default 2), -b: batch sizes (default "1 32"), -k: where bench_int8 is
# (default build/bin), -w: keep the work files (models, inputs) there.
set -euo pipefail
here=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
cd "$here/../.."

threads=2 batches="1 32" bin=build/bin work=
while getopts "t:b:k:w:h" opt; do
  case $opt in
    t) threads=$OPTARG ;; b) batches=$OPTARG ;; k) bin=$OPTARG ;; w) work=$OPTARG ;;
    *) sed -n '3,17s/^# \{0,1\}//p' "$0"; exit 2 ;;
  esac
done
[[ -x $bin/bench_int8 ]] || { echo "bench_int8: $bin/bench_int8 is missing; build it (cmake --build build --target bench_int8)"; exit 1; }
if [[ -z $work ]]; then work=$(mktemp -d); trap 'rm -rf "$work"' EXIT; fi
mkdir -p "$work"
export OMP_NUM_THREADS=$threads
# Kiln's OpenMP threads sleep between kernels as onnxruntime's do, unless the caller chose.
[[ -n ${OMP_WAIT_POLICY:-} ]] || export OMP_WAIT_POLICY=passive

/usr/bin/python3 tests/onnx/make_torch_models.py "$work" resnet18 >/dev/null
model=$work/resnet18/model.onnx
declare -A kiln_qdq
for b in $batches; do
  "$bin/bench_int8" "$model" "$b" "$threads" "$work/resnet18_qdq.onnx" | tee "$work/kiln-$b.txt"
  kiln_qdq[$b]=$(awk '/QDQ ONNX/ {print $3}' "$work/kiln-$b.txt")
  /usr/bin/python3 -c "import numpy as np; np.random.seed(0); np.save('$work/x$b.npy', np.random.randn($b, 3, 224, 224).astype(np.float32))"
done

source "$here/ort_select.sh"
select_ort "$here/ort_time.py" "$here/ort_time.js" ${PYTHON:-python3 /usr/bin/python3}
echo "$ort_name, CPU provider, all optimizations, $threads threads (median ms of 20 runs after one):"
for b in $batches; do
  f32=$("${ort[@]}" "$model" "$work/x$b.npy" "$threads" 20 "$work/ort-f32-$b.npy" | awk '{print $1}')
  i8=$("${ort[@]}" "$work/resnet18_qdq.onnx" "$work/x$b.npy" "$threads" 20 "$work/ort-i8-$b.npy" | awk '{print $1}')
  awk -v b="$b" -v f="$f32" -v q="$i8" -v k="${kiln_qdq[$b]}" 'BEGIN {
    printf "  batch %-3d f32 %9.3f ms  int8 QDQ %9.3f ms  (int8 speed-up %.2fx)\n", b, f, q, f / q
    printf "            Kiln int8 QDQ %9.3f ms: Kiln vs onnxruntime int8 %.2fx (> 1: Kiln faster)\n", k, q / k }'
done
