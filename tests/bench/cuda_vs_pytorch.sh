#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Kiln's CUDA backend vs PyTorch on the same GPU, side by side in one run, PyTorch both strong
# (channels_last, fused capturable Adam, the step captured as a CUDA graph) and eager:
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
    *) sed -n '3,10s/^# \{0,1\}//p' "$0"; exit 2 ;;
  esac
done
kiln=$build/bin/bench_cuda_train
[[ -x $kiln ]] || { echo "$kiln is missing: build the target bench_cuda_train"; exit 1; }
py=tests/bench/pytorch_cuda_bench.py
field() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"; }
ratio() { python3 -c "print(f'{$1/$2:.2f}')"; }

printf '%-30s %12s %12s %12s %9s %9s\n' figure kiln "pt strong" "pt eager" "/strong" "/eager"
# label, unit field, kiln args, pytorch args (both modes run; --strong: channels_last, fused capturable
# Adam, the step as a CUDA graph); KILN_ALLOW_TF32 and --tf32 set TF32 alike on both sides.
run() {
  local k s e kv sv ev
  k=$("$kiln" $3 --device "$dev" | tail -n1) || { echo "$1: kiln failed"; return 1; }
  s=$(python3 "$py" $4 --strong | tail -n1) || { echo "$1: pytorch --strong failed"; return 1; }
  e=$(python3 "$py" $4 | tail -n1) || { echo "$1: pytorch failed"; return 1; }
  kv=$(field "$k" "$2"); sv=$(field "$s" "$2"); ev=$(field "$e" "$2")
  printf '%-30s %12.1f %12.1f %12.1f %9s %9s\n' "$1" "$kv" "$sv" "$ev" "$(ratio "$kv" "$sv")" "$(ratio "$kv" "$ev")"
}
one() { # label, unit field, kiln args, pytorch args: one PyTorch column (matmul)
  local k p kv pv
  k=$("$kiln" $3 --device "$dev" | tail -n1) || { echo "$1: kiln failed"; return 1; }
  p=$(python3 "$py" $4 | tail -n1) || { echo "$1: pytorch failed"; return 1; }
  kv=$(field "$k" "$2"); pv=$(field "$p" "$2")
  printf '%-30s %12.1f %12s %12.1f %9s %9s\n' "$1" "$kv" - "$pv" - "$(ratio "$kv" "$pv")"
}
KILN_ALLOW_TF32=0 run "cnn f32 TF32 off (img/s)" images_per_second "train --model cnn" "train --model cnn --tf32 off"
KILN_ALLOW_TF32=1 run "cnn f32 TF32 on (img/s)" images_per_second "train --model cnn" "train --model cnn --tf32 on"
run "cnn f32 kiln eager (img/s)" images_per_second "train --model cnn --no-cuda-graph" "train --model cnn --tf32 off"
run "cnn bf16 (img/s)" images_per_second "train --model cnn --precision bf16" "train --model cnn --amp bf16"
run "resnet18 bf16 b256 (img/s)" images_per_second "train --model resnet18 --batch 256 --steps 60 --warmup 10 --precision bf16" \
    "train --model resnet18 --batch 256 --steps 60 --warmup 10 --amp bf16"
run "resnet18 bf16 kiln eager" images_per_second "train --model resnet18 --batch 256 --steps 60 --warmup 10 --precision bf16 --no-cuda-graph" \
    "train --model resnet18 --batch 256 --steps 60 --warmup 10 --amp bf16"
run "mlp f32 (img/s)" images_per_second "train --model mlp" "train --model mlp --tf32 off"
one "matmul bf16 8192 (TFLOP/s)" tflops "matmul --dtype bf16" "matmul --dtype bf16"
KILN_ALLOW_TF32=0 one "matmul f32 8192 (TFLOP/s)" tflops "matmul --dtype f32 --iters 5" "matmul --dtype f32 --iters 5 --tf32 off"
# The captured step must give the eager loss curve (exit 1 otherwise).
"$kiln" train --model cnn --compare-graph 60 --warmup 10 --device "$dev" | tail -n1
