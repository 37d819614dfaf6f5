#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Everything the Vulkan backend is checked with on a GPU machine, in one run (for the
# device tool: configure + build + measure in one call), logs under OUT_DIR:
#  1. `kiln devices`; 2. conformance, test mode, on vulkan:0 (counts printed);
#  3. tests/bench/vulkan_vs_torch.sh (matmul f32 / f16 vs PyTorch CUDA, CNN vs the CPU);
#  4. `kiln train --precision f16` on vulkan:0 for a few hundred batches;
#  5. perf mode for matmul (f32, f16), binary and conv2d forward (device time); 6. grad mode.
#   tests/bench/vulkan_gpu_check.sh BUILD_DIR DATA_DIR OUT_DIR
set -uo pipefail
cd "$(dirname "$(readlink -f "$0")")/../.."
build=$1 data=$2 out=$3
mkdir -p "$out"
summary() { # log -> the googletest totals
  grep -E "^\[  (PASSED|SKIPPED|FAILED) +\]|tests? ran" "$1" | head -5
  grep -E "^\[  FAILED  \] " "$1" | head -20
}
echo "== kiln devices =="
"$build/bin/kiln" devices 2>&1 | tee "$out/devices.txt"
echo "== conformance: test =="
timeout 150 "$build/bin/kiln_backend_ops" --device=vulkan:0 --gtest_brief=1 >"$out/test.log" 2>&1
echo "exit $?"; summary "$out/test.log"; grep -m3 "cooperative" "$out/test.log"
echo "== vulkan_vs_torch.sh =="
timeout 120 bash tests/bench/vulkan_vs_torch.sh -b "$build" -d "$data" -n 200 2>&1 | tee "$out/bench.log"
echo "== kiln train --precision f16 =="
timeout 45 "$build/bin/kiln" train --model cnn --epochs 1 --batch-size 128 --device vulkan:0 --precision f16 \
  --data-dir "$data" --limit-batches 300 --out "$out/f16run" >"$out/f16train.log" 2>&1
echo "exit $?"; tail -4 "$out/f16train.log"
echo "== perf =="
timeout 60 "$build/bin/kiln_backend_ops" --device=vulkan:0 --mode=perf \
  --gtest_filter='*matmul*:*binary*:*conv2d_forward*' >"$out/perf.log" 2>&1
grep "^PERF" "$out/perf.log"
echo "== conformance: grad =="
timeout 40 "$build/bin/kiln_backend_ops" --device=vulkan:0 --mode=grad --gtest_brief=1 >"$out/grad.log" 2>&1
echo "exit $?"; summary "$out/grad.log"
