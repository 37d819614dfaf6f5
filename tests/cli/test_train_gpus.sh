#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Data-parallel `kiln train` (issue 21): the launcher `--gpus N` and the rank `--distributed`
# (app/cli/train_launch.h, app/cli/train_distributed.h). Registered with ctest (label engine) by
# tests/CMakeLists.txt, one test per case:
#
#   tests/cli/test_train_gpus.sh path/to/kiln CASE
#
# Cases without a GPU (each fails before any data is read, in a second or two):
#   help      `kiln train --help` documents --gpus, --distributed, --timeout and the variables
#   usage     --gpus 0 / -1 / x, --gpus with --distributed or --device, --timeout alone or 0, and
#             --device other than cuda:LOCAL_RANK under --distributed: exit 2, one line
#   no_cuda   --gpus one more than the machine's CUDA devices: exit 2 at once, "this machine has no
#             CUDA device (cuda: <the registry's reason>)" or "has N CUDA devices (cuda:0, ...)"
#   env       --distributed with WORLD_SIZE missing, RANK=3 with WORLD_SIZE=2, MASTER_PORT=0, RANK=x:
#             exit 1, the message names the variable
#   device    --distributed with LOCAL_RANK naming a CUDA device the machine lacks (cuda:0 without
#             CUDA): exit 1, "rank 0: LOCAL_RANK=N picks cuda:N: ..." with the registry's reason
# Cases on GPUs (exit 77, skipped, without enough CUDA devices or without Fashion-MNIST in
# KILN_TEST_DATA_DIR, else /usr/share/datasets/fashion-mnist; a failure without the data under
# KILN_REQUIRE_TEST_DEPS=1):
#   one_gpu   --gpus 1 (a world of one, real NCCL) for 20 steps of the MLP: the data-parallel line,
#             the run's files, and the same per-step losses as the run without --gpus on cuda:0
#             (averaging over one rank changes nothing; the MLP is cuBLAS only, deterministic)
#   two_gpus  --gpus 2: one progress (rank 0 speaks), 20 steps of 64 per GPU, 128 in all
#   kill_rank --gpus 2, rank 1 killed with SIGKILL after the first checkpoint: the launcher names
#             it ("rank 1 was killed by SIGKILL"), ends rank 0 and exits 137 within seconds; the
#             checkpoint is whole
set -uo pipefail
kiln=$1 case=$2
source "$(dirname "$0")/../common/cli_harness.sh"  # $work, fail, run, contains, one_line, missing_dep
unset MASTER_ADDR MASTER_PORT RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE
data=${KILN_TEST_DATA_DIR:-/usr/share/datasets/fashion-mnist}

# The CUDA devices `kiln devices` lists, and the registry's reason when there are none.
devices=$("$kiln" devices 2>&1)
cuda_count=$(grep -c '^ *cuda:[0-9]' <<<"$devices")
cuda_why=$(sed -n 's/^unavailable: cuda: //p' <<<"$devices" | head -n1)
# A rank's environment of a world of one on this machine; `rank_env LOCAL_RANK kiln ARGS...`.
rank_env() { local local_rank=$1; shift; MASTER_ADDR=127.0.0.1 MASTER_PORT=29533 RANK=0 WORLD_SIZE=1 LOCAL_RANK=$local_rank "$@"; }

need_gpus() { # N
  ((cuda_count >= $1)) || { echo "SKIP: $case needs $1 CUDA device(s), this machine has $cuda_count ${cuda_why:+($cuda_why)}"; exit 77; }
  [[ -d $data ]] || missing_dep dataset-fashion-mnist "no Fashion-MNIST in $data (set KILN_TEST_DATA_DIR)"
}
small=(--model mlp --epochs 1 --batch-size 64 --limit-batches 20 --lr 0.001 --scheduler none --seed 3 --data-dir "$data")

case $case in
help)
  run 0 train --help
  for needle in "--gpus N" "--distributed" "--timeout SECONDS" "(default: 600)" MASTER_ADDR LOCAL_RANK \
                "per GPU" NCCL_NVLS_ENABLE=0; do
    contains "$out" "$needle" "kiln train --help"
  done
  ;;
usage)
  for bad in "--gpus 0" "--gpus -1" "--gpus x"; do
    run 2 train $bad --epochs 1
    contains "$err" "--gpus expects an integer >= 1" "train $bad"; one_line "$err" "stderr of $bad"
  done
  run 2 train --gpus 2 --distributed
  contains "$err" "--gpus and --distributed are exclusive" "--gpus with --distributed"; one_line "$err" "stderr"
  run 2 train --gpus 2 --device cuda:0
  contains "$err" "leave --device out" "--gpus with --device"; one_line "$err" "stderr"
  run 2 train --timeout 5
  contains "$err" "--timeout applies to --gpus and --distributed only" "--timeout alone"
  run 2 train --gpus 1 --timeout 0
  contains "$err" "--timeout expects a number in (0," "--timeout 0"
  # --distributed trains on cuda:LOCAL_RANK: another --device is a mistake, named with the rank
  MASTER_ADDR=127.0.0.1 MASTER_PORT=29533 RANK=1 WORLD_SIZE=2 LOCAL_RANK=1 run 2 train --distributed --device cuda:0
  contains "$err" "kiln train: rank 1: --device cuda:0: with --distributed each process trains on cuda:LOCAL_RANK (here LOCAL_RANK=1, cuda:1)" \
    "--distributed --device cuda:0 on LOCAL_RANK=1"
  one_line "$err" "stderr"
  ;;
no_cuda)
  want=$((cuda_count + 1))
  started=$(date +%s%N)
  run 2 train --gpus $want --epochs 1 --limit-batches 1 --out "$work/run"
  took_ms=$((($(date +%s%N) - started) / 1000000))
  if ((cuda_count == 0)); then
    contains "$err" "kiln train: --gpus $want: this machine has no CUDA device" "--gpus $want without CUDA"
    [[ -z $cuda_why ]] || contains "$err" "(cuda: $cuda_why)" "--gpus $want without CUDA (the registry's reason)"
  else
    contains "$err" "kiln train: --gpus $want: this machine has $cuda_count CUDA device" "--gpus $want"
    contains "$err" "cuda:$((cuda_count - 1)))" "--gpus $want (the devices listed)"
  fi
  one_line "$err" "stderr"
  [[ ! -e $work/run ]] || fail "--gpus $want wrote $work/run"
  ((took_ms < 5000)) || fail "--gpus $want took $took_ms ms to fail"
  ;;
env)
  MASTER_ADDR=127.0.0.1 MASTER_PORT=29533 RANK=0 LOCAL_RANK=0 run 1 train --distributed --epochs 1
  contains "$err" "WORLD_SIZE is not set" "--distributed without WORLD_SIZE"; one_line "$err" "stderr"
  MASTER_ADDR=127.0.0.1 MASTER_PORT=29533 RANK=3 WORLD_SIZE=2 LOCAL_RANK=0 run 1 train --distributed --epochs 1
  contains "$err" "RANK=3 is outside [0, WORLD_SIZE=2)" "--distributed with RANK=3 WORLD_SIZE=2"; one_line "$err" "stderr"
  MASTER_ADDR=127.0.0.1 MASTER_PORT=0 RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 run 1 train --distributed --epochs 1
  contains "$err" "MASTER_PORT=0 is outside 1..65535" "--distributed with MASTER_PORT=0"
  MASTER_ADDR=127.0.0.1 MASTER_PORT=29533 RANK=x WORLD_SIZE=2 LOCAL_RANK=0 run 1 train --distributed --epochs 1
  contains "$err" "RANK='x' is not an integer" "--distributed with RANK=x"
  ;;
device)
  # LOCAL_RANK names the first CUDA device this machine lacks (cuda:0 without CUDA).
  rank_env "$cuda_count" run 1 train --distributed --epochs 1 --limit-batches 1 --out "$work/run"
  contains "$err" "kiln: error: rank 0: LOCAL_RANK=$cuda_count picks cuda:$cuda_count: " "--distributed on a missing GPU"
  ((cuda_count > 0)) || contains "$err" "CUDA backend unavailable" "--distributed without CUDA"
  one_line "$err" "stderr"
  [[ ! -e $work/run ]] || fail "--distributed on a missing GPU wrote $work/run"
  ;;
one_gpu)
  need_gpus 1
  run 0 train "${small[@]}" --device cuda:0 --out "$work/single"
  run 0 train "${small[@]}" --gpus 1 --out "$work/dp"
  contains "$err" "data parallel: 1 GPU (NCCL " "--gpus 1"
  contains "$err" "), batch 64 per GPU, 64 in all" "--gpus 1"
  contains "$out" "test accuracy" "--gpus 1: the final line"
  for f in model.safetensors metrics.csv summary.json checkpoint; do
    [[ -e $work/dp/$f ]] || fail "--gpus 1 did not write $f"
  done
  contains "$(cat "$work/dp/summary.json")" '"world_size": 1' "summary.json"
  single=$(grep ',batch,' "$work/single/metrics.csv" | cut -d, -f1-6)  # epoch,step,kind,loss,accuracy,lr
  dp=$(grep ',batch,' "$work/dp/metrics.csv" | cut -d, -f1-6)
  [[ $(wc -l <<<"$dp") == 20 ]] || fail "--gpus 1 trained $(wc -l <<<"$dp") steps, expected 20"
  [[ $single == "$dp" ]] || fail "a world of one differs from the single-GPU run: $(diff <(echo "$single") <(echo "$dp") | head -6)"
  ;;
two_gpus)
  need_gpus 2
  run 0 train "${small[@]}" --gpus 2 --out "$work/dp"
  contains "$err" "data parallel: 2 GPUs (NCCL " "--gpus 2"
  contains "$err" "), batch 64 per GPU, 128 in all" "--gpus 2"
  [[ $err != *"rank 1"* ]] || fail "rank 1 printed: $err"
  [[ $(grep -c "test accuracy" <<<"$out") == 1 ]] || fail "--gpus 2 printed the result more than once: $out"
  steps=$(grep -c ',batch,' "$work/dp/metrics.csv")
  ((steps == 20)) || fail "--gpus 2 trained $steps steps, expected 20 (--limit-batches per GPU)"
  contains "$(cat "$work/dp/summary.json")" '"world_size": 2' "summary.json"
  ;;
kill_rank)
  need_gpus 2
  "$kiln" train --model mlp --epochs 50 --batch-size 64 --seed 3 --data-dir "$data" --checkpoint-every 20 \
    --gpus 2 --out "$work/run" >/dev/null 2>"$work/err" &
  launcher=$!
  for _ in $(seq 600); do  # up to 60 s for the first checkpoint
    [[ -f $work/run/checkpoint/trainer.json ]] && break
    kill -0 $launcher 2>/dev/null || break
    sleep 0.1
  done
  [[ -f $work/run/checkpoint/trainer.json ]] || { fail "no checkpoint: $(cat "$work/err")"; kill $launcher; exit 1; }
  rank1= ranks=$(pgrep -P $launcher)
  for pid in $ranks; do
    tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx 'RANK=1' && rank1=$pid
  done
  [[ -n $rank1 ]] || { fail "no process with RANK=1 under the launcher"; kill $launcher; exit 1; }
  started=$(date +%s)
  kill -9 "$rank1"
  wait $launcher; code=$?
  took=$(($(date +%s) - started))
  ((code == 137)) || fail "the launcher exited $code after rank 1's SIGKILL, expected 137"
  ((took <= 10)) || fail "the launcher took $took s to stop after rank 1 died"
  contains "$(cat "$work/err")" "kiln: rank 1 was killed by SIGKILL (Killed); stopping the other ranks" "the launcher's message"
  for pid in $ranks; do
    kill -0 "$pid" 2>/dev/null && fail "rank process $pid is still running"
  done
  python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$work/run/checkpoint/trainer.json" ||
    fail "the checkpoint's trainer.json is not whole"
  ;;
*)
  echo "unknown case $case"; exit 2 ;;
esac
[[ $failures == 0 ]] || exit 1
echo "ok: $case"
