#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Kiln's CUDA backend vs PyTorch eager on the same GPU, side by side in one run:
# Fashion-MNIST-shaped CNN and MLP training (batch 128, Adam, f32, random data on the GPU)
# (and the CNN and the CIFAR ResNet-18 at batch 256 with bf16 mixed precision vs torch.autocast; Kiln's
# training step captured as a CUDA graph, and eager with --no-cuda-graph) and matmul 8192^3 (bf16, and f32 without TF32). Prints each figure and Kiln / PyTorch.
# A benchmark, not a test.
#
#   tests/bench/cuda_vs_pytorch.sh [-b build-dir] [-d cuda:0]
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/../.."
build=build dev=cuda:0
while getopts "b:d:h" opt; do
  case $opt in
    b) build=$OPTARG ;; d) dev=$OPTARG ;;
    *) sed -n '3,9s/^# \{0,1\}//p' "$0"; exit 2 ;;
  esac
done
kiln=$build/bin/bench_cuda_train
[[ -x $kiln ]] || { echo "$kiln is missing: build the target bench_cuda_train"; exit 1; }
py=tests/bench/pytorch_cuda_bench.py
field() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"; }
ratio() { python3 -c "print(f'{$1/$2:.2f}')"; }

printf '%-28s %14s %14s %8s\n' figure kiln pytorch ratio
run() { # label, unit field, kiln args, pytorch args
  local k p
  k=$("$kiln" $3 --device "$dev" | tail -n1) || { echo "$1: kiln failed"; return 1; }
  p=$(python3 "$py" $4 | tail -n1) || { echo "$1: pytorch failed"; return 1; }
  local kv pv
  kv=$(field "$k" "$2"); pv=$(field "$p" "$2")
  printf '%-28s %14.1f %14.1f %8s\n' "$1" "$kv" "$pv" "$(ratio "$kv" "$pv")"
}
run "cnn train f32 (img/s)" images_per_second "train --model cnn" "train --model cnn"
run "cnn f32 eager (img/s)" images_per_second "train --model cnn --no-cuda-graph" "train --model cnn"
run "cnn train bf16 (img/s)" images_per_second "train --model cnn --precision bf16" "train --model cnn --amp bf16"
run "resnet18 bf16 b256 (img/s)" images_per_second "train --model resnet18 --batch 256 --steps 60 --warmup 10 --precision bf16" \
    "train --model resnet18 --batch 256 --steps 60 --warmup 10 --amp bf16"
run "resnet18 bf16 eager" images_per_second "train --model resnet18 --batch 256 --steps 60 --warmup 10 --precision bf16 --no-cuda-graph" \
    "train --model resnet18 --batch 256 --steps 60 --warmup 10 --amp bf16"
run "mlp train f32 (img/s)" images_per_second "train --model mlp" "train --model mlp"
run "matmul bf16 8192 (TFLOP/s)" tflops "matmul --dtype bf16" "matmul --dtype bf16"
run "matmul f32 8192 (TFLOP/s)" tflops "matmul --dtype f32 --iters 5" "matmul --dtype f32 --iters 5"
# The captured step must give the eager loss curve (exit 1 otherwise).
"$kiln" train --model cnn --compare-graph 60 --warmup 10 --device "$dev" | tail -n1
