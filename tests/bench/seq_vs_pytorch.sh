#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Sequence-model training, Kiln vs PyTorch on the same device, side by side in one run: an LSTM
# (2 layers, hidden 256) and a TransformerEncoderLayer (d 256, 4 heads, feed-forward 2048) on
# random sequences [64, 128, 256], Adam, the train step's mean time (kiln bench --model lstm|
# transformer; tests/bench/pytorch_seq_bench.py). Prints ms per step and PyTorch / Kiln (> 1:
# Kiln faster). A benchmark, not a test.
#
#   tests/bench/seq_vs_pytorch.sh [-b build-dir] [-d cpu|cuda:0] [-t threads] [-s steps]
set -euo pipefail
# PyTorch's OpenMP threads wait as kiln's do (app/omp_wait.h), unless the caller chose.
[[ -n ${GOMP_SPINCOUNT:-}${OMP_WAIT_POLICY:-} ]] || export GOMP_SPINCOUNT=1000
cd "$(dirname "$(readlink -f "$0")")/../.."
build=build dev=cpu threads=2 steps=10
while getopts "b:d:t:s:h" opt; do
  case $opt in
    b) build=$OPTARG ;; d) dev=$OPTARG ;; t) threads=$OPTARG ;; s) steps=$OPTARG ;;
    *) sed -n '3,9s/^# \{0,1\}//p' "$0"; exit 2 ;;
  esac
done
kiln=$build/bin/kiln
[[ -x $kiln ]] || { echo "$kiln is missing: build the target kiln"; exit 1; }
py=${PYTHON:-/usr/bin/python3}
json=$(mktemp); trap 'rm -f "$json"' EXIT
printf '%-12s %-8s %12s %12s %8s\n' model device "kiln ms" "pytorch ms" ratio
for model in lstm transformer; do
  OMP_NUM_THREADS=$threads "$kiln" bench --model $model --devices "$dev" --batch-size 64 --steps "$steps" --warmup 2 \
    --threads "$threads" --json "$json" >/dev/null
  k=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["results"][0]["train_step_ms"])' "$json")
  p=$(OMP_NUM_THREADS=$threads "$py" tests/bench/pytorch_seq_bench.py --model $model --device "$dev" --steps "$steps" \
      --warmup 2 --threads "$threads" | tail -n1)
  pm=$("$py" -c 'import json,sys; print(json.loads(sys.argv[1])["train_step_ms"])' "$p")
  printf '%-12s %-8s %12.1f %12.1f %8s\n' $model "$dev" "$k" "$pm" "$("$py" -c "print(f'{$pm/$k:.2f}')")"
done
