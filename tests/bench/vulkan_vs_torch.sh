#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The Vulkan backend against PyTorch CUDA on the same GPU, in one run (a benchmark: it
# prints figures and ratios, it asserts nothing):
#  1. f32 matmul 4096^3: Kiln's Vulkan backend (bench_vulkan_matmul) vs torch.matmul on
#     CUDA with TF32 off; prints both GFLOP/s and the ratio (target >= 0.5).
#  1b. f16 matmul 4096^3 (f32 accumulation; tensor cores through cooperative matrices
#     where the device has them) vs torch.matmul on f16 CUDA tensors.
#  2. Fashion-MNIST CNN training (batch 128, Adam) on vulkan:0 vs the CPU backend on 2
#     threads (the development machine's cores) and on all cores: steady-state steps
#     (`kiln bench`) and one epoch of `kiln train` (data loading, start-up included);
#     images/s and the ratio vulkan / cpu-2-threads (target >= 5).
#   tests/bench/vulkan_vs_torch.sh [-b BUILD_DIR] [-d DATA_DIR] [-n BATCHES (469: an epoch)]
set -uo pipefail
cd "$(dirname "$(readlink -f "$0")")/../.."
build=build data=/usr/share/datasets/fashion-mnist batches=469
while getopts "b:d:n:h" opt; do
  case $opt in
    b) build=$OPTARG ;; d) data=$OPTARG ;; n) batches=$OPTARG ;;
    *) sed -n '3,12s/^# \{0,1\}//p' "$0"; exit 2 ;;
  esac
done
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }

echo "== matmul f32 4096^3 =="
vk=0
for bk in 8 16; do  # the fast kernel's K-slice depth (KILN_VK_GEMM_BK); the better one counts
  echo "K slices of $bk:"
  KILN_VK_GEMM_BK=$bk "$build/bin/bench_vulkan_matmul" 4096 vulkan:0 20 | tee "$work/vk.txt"
  g=$(sed -n 's/^RESULT vulkan_matmul_gflops=//p' "$work/vk.txt")
  [[ -n $g ]] && vk=$(python3 -c "print(max($vk, $g))")
done
torch=$(python3 - <<'PY'
import time, torch
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
n = 4096
a = torch.rand(n, n, device="cuda") * 2 - 1
b = torch.rand(n, n, device="cuda") * 2 - 1
for _ in range(3): c = a @ b
torch.cuda.synchronize()
runs = 20
t = time.perf_counter()
for _ in range(runs): c = a @ b
torch.cuda.synchronize()
s = (time.perf_counter() - t) / runs
print(f"{2 * n**3 / s / 1e9:.1f}")
PY
)
echo "pytorch cuda matmul f32 (TF32 off): $torch GFLOP/s"
[[ -n $vk && -n $torch ]] && python3 -c "print(f'ratio vulkan / pytorch: {$vk / $torch:.3f} (target >= 0.5)')"

echo "== matmul f16 4096^3 =="
"$build/bin/bench_vulkan_matmul" 4096 vulkan:0 20 f16 | tee "$work/vk16.txt"
vk16=$(sed -n 's/^RESULT vulkan_matmul_gflops=//p' "$work/vk16.txt")
torch16=$(python3 - <<'PY'
import time, torch
n = 4096
a = (torch.rand(n, n, device="cuda") * 2 - 1).half()
b = (torch.rand(n, n, device="cuda") * 2 - 1).half()
for _ in range(3): c = a @ b
torch.cuda.synchronize()
runs = 20
t = time.perf_counter()
for _ in range(runs): c = a @ b
torch.cuda.synchronize()
s = (time.perf_counter() - t) / runs
print(f"{2 * n**3 / s / 1e9:.1f}")
PY
)
echo "pytorch cuda matmul f16: $torch16 GFLOP/s"
[[ -n $vk16 && -n $torch16 ]] && python3 -c "print(f'ratio vulkan f16 / pytorch f16: {$vk16 / $torch16:.3f}')"
echo "f32 matmul with KILN_ALLOW_F16_MATMUL=1 (operands rounded to f16, tensor cores):"
KILN_ALLOW_F16_MATMUL=1 "$build/bin/bench_vulkan_matmul" 4096 vulkan:0 20 f32

echo "== Fashion-MNIST CNN training steps, batch 128, Adam (kiln bench, steady state) =="
"$build/bin/kiln" bench --model cnn --devices vulkan:0 --steps 100 --warmup 10 --json "$work/bvk.json"
OMP_NUM_THREADS=2 "$build/bin/kiln" bench --model cnn --devices cpu --threads 2 --steps 20 --warmup 3 --json "$work/bcpu.json"
python3 - "$work/bvk.json" "$work/bcpu.json" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))["results"][0]; c = json.load(open(sys.argv[2]))["results"][0]
print(f"steady-state train: vulkan {v['train_images_per_second']:.0f} images/s, cpu 2 threads "
      f"{c['train_images_per_second']:.0f} images/s, ratio {v['train_images_per_second'] / c['train_images_per_second']:.2f} (target >= 5)")
PY
echo "== Fashion-MNIST CNN training, batch 128, Adam, $batches batches of kiln train =="
train() { # device threads -> images/s
  OMP_NUM_THREADS=$2 "$build/bin/kiln" train --model cnn --epochs 1 --batch-size 128 --device "$1" --data-dir "$data" \
      --limit-batches "$3" --threads "$2" --out "$work/run-$1-$2" >"$work/log-$1-$2" 2>&1 \
    && field "$work/run-$1-$2/summary.json" images_per_second || { tail -5 "$work/log-$1-$2" >&2; echo n/a; }
}
ips_vk=$(train vulkan:0 "$(nproc)" "$batches")
ips_cpu2=$(train cpu 2 $((batches / 4)))
ips_cpu=$(train cpu "$(nproc)" $((batches / 2)))
echo "vulkan:0: $ips_vk images/s"
echo "cpu, 2 threads: $ips_cpu2 images/s"
echo "cpu, $(nproc) threads: $ips_cpu images/s"
python3 -c "print(f'ratio vulkan / cpu-2-threads: {float(\"$ips_vk\") / float(\"$ips_cpu2\"):.2f} (target >= 5); vulkan / cpu-all: {float(\"$ips_vk\") / float(\"$ips_cpu\"):.2f}')" 2>/dev/null || true
