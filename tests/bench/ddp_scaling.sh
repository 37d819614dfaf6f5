#!/usr/bin/env bash
# Data-parallel scaling on the GPUs of this machine (issue 21's Must reach): for each case, the
# training throughput of one GPU alone, then of W ranks (one process per GPU, gradients averaged
# through NCCL by distributed::Reducer), and the per-GPU efficiency = mean rank images/s / alone.
# The anchor is the same program on one GPU, in the same run. A benchmark, not a test.
#   tests/bench/ddp_scaling.sh [BUILD_DIR] [W]      (W: default all GPUs; W = 1 measures the
#                                                    Reducer's and NCCL's own cost on one GPU)
set -euo pipefail
build=${1:-build}
bench=$build/bin/bench_cuda_train
[[ -x $bench ]] || { echo "ddp_scaling.sh: $bench is not built" >&2; exit 1; }
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
world=${2:-$gpus}
((world >= 1 && world <= gpus)) || { echo "ddp_scaling.sh: W=$world, but this machine has $gpus GPU(s)" >&2; exit 1; }
export NCCL_NVLS_ENABLE=0  # NVLink multicast stays off
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
ips() { sed -n 's/.*"images_per_second": \([0-9.]*\).*/\1/p'; }

# case: model precision batch steps
cases=("cnn f32 128 400" "resnet18 bf16 256 60")
printf '%-10s %-5s %6s %4s %14s %16s %11s\n' model prec batch W "1 GPU img/s" "per-GPU img/s" efficiency
for c in "${cases[@]}"; do
  read -r model precision batch steps <<<"$c"
  args=(train --model "$model" --precision "$precision" --batch "$batch" --steps "$steps")
  alone=$("$bench" "${args[@]}" --device cuda:0 | ips)
  port=$(free_port)
  dir=$(mktemp -d)
  for ((r = 0; r < world; ++r)); do
    MASTER_ADDR=127.0.0.1 MASTER_PORT=$port RANK=$r LOCAL_RANK=$r WORLD_SIZE=$world \
      "$bench" "${args[@]}" --ddp > "$dir/rank$r.json" &
  done
  wait
  per_gpu=$(cat "$dir"/rank*.json | ips | awk '{s += $1; n++} END {printf "%.1f", s / n}')
  rm -rf "$dir"
  printf '%-10s %-5s %6s %4s %14.1f %16.1f %10.1f%%\n' "$model" "$precision" "$batch" "$world" "$alone" "$per_gpu" \
    "$(awk -v a="$alone" -v b="$per_gpu" 'BEGIN {print 100 * b / a}')"
done
