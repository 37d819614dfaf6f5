#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# CPU mixed precision, Kiln vs PyTorch: training images/s of the reference cnn and resnet18
# (CIFAR form) in f32 and in bf16 (`kiln bench --precision bf16`: matmul and conv in bf16
# through oneDNN, f32 master weights; PyTorch: torch.autocast("cpu", dtype=torch.bfloat16)),
# one random batch held in memory, batch 128, Adam, the same thread count on both sides.
# Prints images/s, Kiln's bf16 / f32 and Kiln bf16 / PyTorch bf16. A benchmark, not a test.
#
#   tests/bench/bf16_vs_pytorch.sh [-t THREADS] [-m "cnn resnet18"] [-s STEPS] [-k path/to/kiln]
#
# On a CPU without bf16 dot products (avx512_bf16 or AMX) Kiln says so and runs f32; the
# ONEDNN_VERBOSE=1 line printed first names the ISA oneDNN dispatches.
# PYTHON picks the interpreter (default: the first of python3, /usr/bin/python3 that has torch).
set -euo pipefail
# PyTorch's OpenMP threads wait as kiln's do (app/omp_wait.h), unless the caller chose.
[[ -n ${GOMP_SPINCOUNT:-}${OMP_WAIT_POLICY:-} ]] || export GOMP_SPINCOUNT=1000
cd "$(dirname "$(readlink -f "$0")")/../.."

threads=$(nproc) models="cnn resnet18" steps=20 kiln=build/bin/kiln
while getopts "t:m:s:k:h" opt; do
  case $opt in
    t) threads=$OPTARG ;; m) models=$OPTARG ;; s) steps=$OPTARG ;; k) kiln=$OPTARG ;;
    *) sed -n '3,13s/^# \{0,1\}//p' "$0"; exit 2 ;;
  esac
done
[[ -x $kiln ]] || { echo "kiln: $kiln is missing; build it first (cmake --build --preset default)"; exit 1; }
python=
for p in ${PYTHON:-python3 /usr/bin/python3}; do
  if "$p" -c 'import torch, torchvision' 2>/dev/null; then python=$p; break; fi
done
[[ -n $python ]] || { echo "python3-torch and python3-torchvision are not installed: apt-get install python3-torchvision"; exit 1; }
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
json() { "$python" -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["results"][0]["train_images_per_second"]))' "$1"; }

echo "bf16 training on the CPU, batch 128, Adam, $threads threads, $steps steps; load average $(cut -d' ' -f1-3 /proc/loadavg)"
ONEDNN_VERBOSE=1 "$kiln" bench --model cnn --devices cpu --threads "$threads" --steps 1 --warmup 0 --precision bf16 \
  2>&1 | grep -m1 'cpu,isa:' || true
declare -A res
status=0
for m in $models; do
  # the smaller figures of resnet18 come from fewer, longer steps
  s=$steps; [[ $m == resnet18 ]] && s=$(( (steps + 3) / 4 ))
  for p in f32 bf16; do
    echo "kiln: $m $p ..."
    if "$kiln" bench --model "$m" --devices cpu --threads "$threads" --steps "$s" --warmup 2 --precision "$p" \
         --json "$work/k.json" >"$work/k.log" 2>&1; then
      res[kiln,$m,$p]=$(json "$work/k.json")
    else
      res[kiln,$m,$p]=n/a; status=1; tail -n 5 "$work/k.log"
    fi
    grep -h 'precision' "$work/k.log" | grep -v '^kiln bench' || true
    echo "pytorch: $m $p ..."
    if OMP_NUM_THREADS=$threads "$python" tests/bench/pytorch_train.py --model "$m" --data random --precision "$p" \
         --threads "$threads" --steps "$s" --warmup 2 >"$work/p.log" 2>&1; then
      res[pt,$m,$p]=$("$python" -c 'import json,sys; print(round(json.loads(open(sys.argv[1]).read().splitlines()[-1])["images_per_second"]))' "$work/p.log")
    else
      res[pt,$m,$p]=n/a; status=1; tail -n 5 "$work/p.log"
    fi
  done
done

ratio() { [[ $1 =~ ^[0-9]+$ && $2 =~ ^[0-9]+$ && $2 -gt 0 ]] && "$python" -c "print(f'{$1/$2:.2f}')" || echo n/a; }
echo
printf '%-9s %10s %10s %12s %12s %16s %22s\n' model "kiln f32" "kiln bf16" "pytorch f32" "pytorch bf16" \
  "kiln bf16/f32" "kiln bf16/pytorch bf16"
for m in $models; do
  printf '%-9s %10s %10s %12s %12s %16s %22s\n' "$m" "${res[kiln,$m,f32]}" "${res[kiln,$m,bf16]}" "${res[pt,$m,f32]}" \
    "${res[pt,$m,bf16]}" "$(ratio "${res[kiln,$m,bf16]}" "${res[kiln,$m,f32]}")" \
    "$(ratio "${res[kiln,$m,bf16]}" "${res[pt,$m,bf16]}")"
done
echo "(images/s of training steps; random data)"
exit $status
