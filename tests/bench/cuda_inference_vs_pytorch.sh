#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Batch-1 inference on the GPU, Kiln vs PyTorch side by side in one run: torchvision resnet18 and
# mobilenet_v2 (1x3x224x224) and a 2-layer TransformerEncoder (2x10x32), exported to ONNX by
# tests/onnx/make_torch_models.py. Kiln: `kiln run --repeat` (the second run of a shape is recorded
# as a CUDA graph and replayed), with --no-cuda-graph, and on the host CPU (all cores). PyTorch
# (pytorch_inference_bench.py): eager and the forward captured by torch.cuda.graph; TF32 off on
# both sides. Each figure is the median latency with the input copied in and the output copied
# back; ratio = PyTorch graph / Kiln (> 1: Kiln is faster). A benchmark, not a test.
#
#   tests/bench/cuda_inference_vs_pytorch.sh [-b build-dir] [-d cuda:0] [-n runs]
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/../.."
build=build dev=cuda:0 runs=300
while getopts "b:d:n:h" opt; do
  case $opt in
    b) build=$OPTARG ;; d) dev=$OPTARG ;; n) runs=$OPTARG ;;
    *) sed -n '3,11s/^# \{0,1\}//p' "$0"; exit 2 ;;
  esac
done
kiln=$build/bin/kiln
[[ -x $kiln ]] || { echo "$kiln is missing: build the target kiln"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 tests/onnx/make_torch_models.py "$tmp" resnet18 mobilenet_v2 transformer >/dev/null
median() { # model, device, extra flags
  "$kiln" run "$tmp/$1/model.onnx" --input "$tmp/$1/input.npy" --out-dir "$tmp/out" --device "$2" --repeat "$runs" ${3:-} |
    sed -n 's/^latency: median \([0-9.]*\) ms.*/\1/p'
}
field() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"; }
printf '%-14s %10s %12s %10s %12s %12s %8s\n' "ms, batch 1" kiln "kiln eager" "kiln cpu" "torch eager" "torch graph" ratio
for m in resnet18 mobilenet_v2 transformer; do
  k=$(median "$m" "$dev") ke=$(median "$m" "$dev" --no-cuda-graph) kc=$(median "$m" cpu)
  p=$(python3 tests/bench/pytorch_inference_bench.py "$tmp" "$m" --runs "$runs" | tail -n1)
  pe=$(field "$p" eager_ms) pg=$(field "$p" graph_ms)
  printf '%-14s %10s %12s %10s %12s %12s %8s\n' "$m" "$k" "$ke" "$kc" "$pe" "$pg" "$(python3 -c "print(f'{$pg/$k:.2f}')")"
done
