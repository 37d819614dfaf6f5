#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# `kiln train --checkpoint-every N` and `--resume` in the middle of an epoch, on a synthetic table
# (4000 rows of 4 features, 3 classes; 800 batches of 4 an epoch) on the CPU with two threads:
#   kill9:   a run killed with SIGKILL after its first mid-epoch checkpoint resumes from it, and its
#            per-step losses (metrics.csv) equal those of an uninterrupted run with the same seed
#   kill9_weighted: the same with --sampler weighted --class-weights balanced (the weighted draws of
#            the resumed epoch are those of the uninterrupted run)
#   sigint:  a run stopped with Ctrl-C (SIGINT) checkpoints where it stopped (exit 130): --resume
#            continues with the next batch, and the losses are the uninterrupted run's
#   corrupt: a truncated checkpoint file gives one error naming it; a checkpoint whose save was
#            killed between its renames (only checkpoint.old) is read with a message; a half-written
#            checkpoint.new is ignored
#   eval_sigint: Ctrl-C in the test-set evaluation after the last epoch (150000 rows, 95% of them
#            the test split, batches of 1) stops it within seconds (exit 130; it was ignored), with
#            the epoch's checkpoint and model.safetensors kept, which kiln eval reads
#   kill_saving: six runs that save a checkpoint every step, killed with SIGKILL at once; each
#            resume, and the last, which finishes the epoch, reads a whole checkpoint
# Registered with ctest (label engine) by tests/CMakeLists.txt:  tests/cli/test_resume.sh path/to/kiln CASE
set -uo pipefail
kiln=$1 case=$2
source "$(dirname "$0")/../common/cli_harness.sh"  # $work, fail, run, contains, one_line, missing_dep

/usr/bin/python3 - "$work/t.csv" <<'PY'
import random, sys
random.seed(0)
with open(sys.argv[1], "w") as f:
    f.write("a,b,c,d,label\n")
    for i in range(4000):
        k = i % 3
        f.write(",".join("%.4f" % random.gauss(k * (j + 1) * 0.3, 1.0) for j in range(4)) + ",k%d\n" % k)
PY
flags=(--dataset "csv:$work/t.csv" --batch-size 4 --lr 0.001 --scheduler none --seed 3 --device cpu --threads 2)
# scalar KEY DIR: a number of a checkpoint's trainer.json
scalar() { /usr/bin/python3 -c "import json,sys; print(int(json.load(open(sys.argv[2] + '/trainer.json'))['scalars'].get(sys.argv[1], 0)))" "$1" "$2"; }

[[ $case == kill9_weighted ]] && flags+=(--sampler weighted --class-weights balanced)

case $case in
kill9 | kill9_weighted | sigint)
  every=20; [[ $case == sigint ]] && every=0
  "$kiln" train "${flags[@]}" --epochs 50 --checkpoint-every $every --out "$work/killed" >/dev/null 2>"$work/killed.err" &
  pid=$!
  for _ in $(seq 600); do  # up to 30 s for the first checkpoint, or (sigint) 100 steps
    if [[ $case == sigint ]]; then
      (($(grep -c . "$work/killed/metrics.csv" 2>/dev/null || echo 0) > 100)) && break
    else
      [[ -f $work/killed/checkpoint/trainer.json || -f $work/killed/checkpoint.old/trainer.json ]] && break
    fi
    kill -0 $pid 2>/dev/null || break
    sleep 0.05
  done
  if [[ $case == sigint ]]; then
    kill -INT $pid 2>/dev/null; wait $pid; code=$?
    ((code == 130)) || fail "Ctrl-C: exit status $code, expected 130"
  else
    kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
  fi
  ckpt=$work/killed/checkpoint; [[ -d $ckpt ]] || ckpt=$work/killed/checkpoint.old
  [[ -f $ckpt/trainer.json ]] || { fail "no checkpoint after SIG${case^^}: $(cat "$work/killed.err")"; exit 1; }
  step=$(scalar step "$ckpt") epochs=$(scalar epoch "$ckpt") batch=$(scalar batch "$ckpt")
  echo "killed with a checkpoint at step $step (epoch $((epochs + 1)), batch $batch of 800)"
  ((batch > 0)) || fail "the checkpoint is not a mid-epoch one (batch $batch)"
  if [[ $case == sigint ]]; then
    contains "$(cat "$work/killed.err")" "the checkpoint of step $step (epoch $((epochs + 1))) is in" "the Ctrl-C message"
    rows=$(grep -c ",batch," "$work/killed/metrics.csv")
    ((rows == step)) || fail "Ctrl-C checkpointed at step $step, but $rows steps were trained"
  else
    ((step % 20 == 0)) || fail "the checkpoint's step $step is not a multiple of 20"
  fi
  total=$((epochs + 2))  # the rest of the interrupted epoch and one more
  before=$(/usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1] + '/trainer.json'))['scalars'].get('run_seconds', 0))" "$ckpt")
  started=$(date +%s.%N)
  run 0 train "${flags[@]}" --epochs $total --checkpoint-every 20 --out "$work/killed" --resume
  # Until summary.json was written: the process's exit (ASan's leak check can take a second) is
  # outside the run's clock.
  took=$(/usr/bin/python3 -c "import os, sys; print(os.stat(sys.argv[2]).st_mtime_ns / 1e9 - float(sys.argv[1]))" \
           "$started" "$work/killed/summary.json")
  contains "$err" "resuming at step $((step + 1)) (batch $((batch + 1)) of epoch $((epochs + 1)))" "the resume line"
  # The checkpoint carries the run's seconds; summary.json's are those and the resumed process's
  # until it wrote them (up to a second of its start, before main, outside its clock).
  seconds=$(/usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['seconds'])" "$work/killed/summary.json")
  echo "run seconds: $before at the checkpoint, $seconds in all; the resumed process took $took s"
  /usr/bin/python3 -c "import sys; b, s, t = map(float, sys.argv[1:]); sys.exit(0 if b > 0 and b + t - 1 <= s <= b + t else 1)" \
    "$before" "$seconds" "$took" || fail "summary.json's seconds $seconds are not the checkpoint's $before plus the resumed $took"
  run 0 train "${flags[@]}" --epochs $total --checkpoint-every 0 --out "$work/full"
  /usr/bin/python3 - "$work/killed/metrics.csv" "$work/full/metrics.csv" "$step" "$((total * 800))" <<'PY' || fail "the losses differ"
import csv, sys
def rows(path):  # (kind, epoch, step) -> epoch,step,kind,loss,accuracy,lr (samples/s differs)
    return {(r["kind"], r["epoch"], r["step"]): (r["loss"], r["accuracy"], r["lr"]) for r in csv.DictReader(open(path))}
resumed, full = rows(sys.argv[1]), rows(sys.argv[2])
ckpt, last = int(sys.argv[3]), int(sys.argv[4])
after = [k for k in full if k[0] == "batch" and int(k[2]) > ckpt]
assert len(after) == last - ckpt, (len(after), last - ckpt)
bad = [k for k in full if (k[0] != "batch" or int(k[2]) > ckpt) and resumed.get(k) != full[k]]
bad += [k for k in resumed if k not in full or resumed[k] != full[k]]
if bad:
    print("differ:", [(k, resumed.get(k), full.get(k)) for k in sorted(bad)[:5]])
    sys.exit(1)
before = sum(1 for k in resumed if k[0] == "batch" and int(k[2]) <= ckpt)
print("steps %d-%d (and the epochs' train rows) equal the uninterrupted run's exactly; %d rows before the checkpoint too"
      % (ckpt + 1, last, before))
PY
  ;;
corrupt)
  run 0 train "${flags[@]}" --epochs 1 --checkpoint-every 20 --out "$work/r"
  [[ $(scalar batch "$work/r/checkpoint") == 0 ]] || fail "the last checkpoint is not the epoch's"
  cp -r "$work/r/checkpoint" "$work/good"
  truncate -s 100 "$work/r/checkpoint/model.safetensors"
  run 1 train "${flags[@]}" --epochs 2 --checkpoint-every 20 --out "$work/r" --resume
  contains "$err" "$work/r/checkpoint/model.safetensors" "the error of a truncated checkpoint"; one_line "$err" "its error"
  rm -rf "$work/r/checkpoint"; mv "$work/good" "$work/r/checkpoint.old"  # a save killed between its renames
  mkdir "$work/r/checkpoint.new"; printf 'half' >"$work/r/checkpoint.new/model.safetensors"  # one killed while writing
  run 0 train "${flags[@]}" --epochs 2 --checkpoint-every 20 --out "$work/r" --resume
  contains "$err" "read the previous checkpoint, $work/r/checkpoint.old" "the fallback message"
  contains "$err" "resuming after epoch 1" "the resume line"
  [[ -d $work/r/checkpoint && ! -e $work/r/checkpoint.old && ! -e $work/r/checkpoint.new ]] ||
    fail "the next saves did not leave checkpoint/ alone: $(ls "$work/r")"
  run 2 train "${flags[@]}" --checkpoint-every 5x --out "$work/x"
  contains "$err" "--checkpoint-every expects N (optimizer steps, a whole number) or Nm (minutes)" "a bad --checkpoint-every"
  ;;
eval_sigint)
  /usr/bin/python3 - "$work/big.csv" <<'PY'
import random, sys
random.seed(1)
with open(sys.argv[1], "w") as f:
    f.write("a,b,c,d,label\n")
    for i in range(150000):
        k = i % 3
        f.write(",".join("%.3f" % random.gauss(k * (j + 1) * 0.3, 1.0) for j in range(4)) + ",k%d\n" % k)
PY
  "$kiln" train --dataset "csv:$work/big.csv" --test-fraction 0.95 --batch-size 1 --epochs 1 --seed 3 --device cpu \
    --threads 2 --checkpoint-every 0 --out "$work/e" >/dev/null 2>"$work/e.err" &
  pid=$!
  for _ in $(seq 1200); do  # up to 60 s for the training epoch
    grep -q "^evaluating on" "$work/e.err" 2>/dev/null && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.05
  done
  grep -q "^evaluating on" "$work/e.err" || fail "no evaluation began: $(cat "$work/e.err")"
  kill -INT $pid 2>/dev/null
  sent=$SECONDS
  for _ in $(seq 100); do kill -0 $pid 2>/dev/null || break; sleep 0.05; done  # up to 5 s
  if kill -0 $pid 2>/dev/null; then
    fail "still evaluating 5 s after Ctrl-C"
    kill -9 $pid 2>/dev/null
  fi
  wait $pid; code=$?
  ((code == 130)) || fail "Ctrl-C in the evaluation: exit status $code, expected 130 ($((SECONDS - sent)) s)"
  err=$(cat "$work/e.err")
  contains "$err" "kiln: evaluation interrupted after " "the message"
  contains "$err" "the training is kept: the weights in $work/e/model.safetensors, the checkpoint of epoch 1 in $work/e/checkpoint" "what is kept"
  [[ -f $work/e/checkpoint/trainer.json ]] || fail "no checkpoint of the epoch"
  batch=$(scalar batch "$work/e/checkpoint") epochs=$(scalar epoch "$work/e/checkpoint")
  ((epochs == 1 && batch == 0)) || fail "the checkpoint is not the finished epoch's (epoch $epochs, batch $batch)"
  [[ ! -e $work/e/summary.json ]] || fail "a summary.json without test figures"
  run 0 eval --model-file "$work/e/model.safetensors" --device cpu --threads 2
  contains "$out" "accuracy" "kiln eval of the kept weights"
  ;;
kill_saving)  # a checkpoint every step, so that most kills land in a save: every resume still reads one
  run 0 train "${flags[@]}" --epochs 1 --limit-batches 30 --checkpoint-every 1 --out "$work/r"
  for i in 1 2 3 4 5 6; do
    "$kiln" train "${flags[@]}" --epochs 1000 --limit-batches 30 --checkpoint-every 1 --out "$work/r" --resume \
      >/dev/null 2>"$work/err.$i" &
    pid=$!
    sleep "0.$((3 + i))"
    kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
    ! grep -q "error" "$work/err.$i" || fail "resume $i: $(cat "$work/err.$i")"
    [[ -f $work/r/checkpoint/trainer.json || -f $work/r/checkpoint.old/trainer.json ]] || fail "kill $i left no checkpoint"
  done
  ckpt=$work/r/checkpoint; [[ -d $ckpt ]] || ckpt=$work/r/checkpoint.old
  step=$(scalar step "$ckpt")
  echo "after 6 kills the checkpoint is at step $step"
  run 0 train "${flags[@]}" --epochs $(($(scalar epoch "$ckpt") + 1)) --limit-batches 30 --checkpoint-every 0 \
    --out "$work/r" --resume
  contains "$err" "resuming" "the last resume"
  ;;
*)
  echo "unknown case $case"; exit 2 ;;
esac
[[ $failures == 0 ]] || exit 1
echo "ok: $case"
