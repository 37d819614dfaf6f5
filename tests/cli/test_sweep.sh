#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# `kiln sweep` (issue 20, part 4) on the Fashion-MNIST MLP template, 300 training images,
# 1 epoch a trial, on the CPU:
#   run:       a grid of 4 trials on two CPU lanes, then a seeded random search over a graph
#              attribute with --json: the project holds each trial's run (tagged with its
#              sweep), the sweep rows, and the best trial is the one the table names
#   bad_input: each wrong flag exits 2 with a message naming it and stores nothing
#   prune:     a diverging trial (lr 1) is stopped after its first epoch by the median rule
#   interrupt: Ctrl-C stops it (exit 130); --resume runs the stopped trial again and the rest
#   kill:      a sweep killed with SIGKILL while its second trial runs keeps its finished
#              trial, marks the interrupted one, and --resume finishes the rest
# Registered with ctest (label engine) by tests/CMakeLists.txt:  tests/cli/test_sweep.sh path/to/kiln CASE
set -uo pipefail
kiln=$1 case=$2
source "$(dirname "$0")/../common/cli_harness.sh"  # $work, fail, run, contains, missing_dep
studio=$(dirname "$kiln")/kiln-studio
[[ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]] ||
  missing_dep dataset-fashion-mnist "the sweeps train on Fashion-MNIST"
"$studio" --headless --new "$work/p.kiln" --template fashion_mnist_mlp >/dev/null || fail "cannot create the project"
quick=(--epochs 1 --subset 300 --test-subset 100)
# sql QUERY: the rows of a query on the project, one per line, columns separated by '|'
sql() {
  /usr/bin/python3 -c "import sqlite3,sys
for r in sqlite3.connect(sys.argv[1]).execute(sys.argv[2]): print('|'.join(str(c) for c in r))" "$work/p.kiln" "$1"
}

case $case in
run)
  run 0 sweep --project "$work/p.kiln" --param lr=1e-3:1e-2:log:2 --param batch-size=32,64 "${quick[@]}" --devices cpu,cpu
  contains "$out" "sweep 1 of $work/p.kiln: 4 trials on [\"cpu\",\"cpu\"]" "the first line"
  contains "$out" "trial  run   status" "the results table"
  [[ $(sql "SELECT count(*) FROM runs WHERE status = 'finished'") == 4 ]] || fail "4 finished runs expected: $(sql 'SELECT id, status, message FROM runs'); the sweep's output: $out"
  [[ $(sql "SELECT count(*) FROM sweep_trials WHERE sweep = 1 AND status = 'finished' AND run IS NOT NULL") == 4 ]] ||
    fail "4 finished trials with their runs expected: $(sql 'SELECT * FROM sweep_trials')"
  [[ $(sql "SELECT count(*) FROM runs WHERE tags LIKE 'sweep 1%'") == 4 ]] || fail "the runs are not tagged 'sweep 1'"
  [[ $(sql "SELECT objective, status FROM sweeps") == "val_accuracy|finished" ]] || fail "the sweep row: $(sql 'SELECT * FROM sweeps')"
  # The four parameter combinations, once each, and each run trained its trial's settings.
  [[ $(sql "SELECT count(DISTINCT params_json) FROM sweep_trials") == 4 ]] || fail "the trials repeat a combination"
  [[ $(sql "SELECT count(*) FROM sweep_trials t JOIN runs r ON r.id = t.run WHERE json_extract(r.config_json, '\$.batch_size') = json_extract(t.params_json, '\$.\"batch-size\"') AND json_extract(r.config_json, '\$.lr') = json_extract(t.params_json, '\$.lr')") == 4 ]] ||
    fail "a run's settings differ from its trial's parameters"
  # Both lanes trained at once: the two first runs started before either ended.
  [[ $(sql "SELECT count(*) FROM runs a JOIN runs b ON a.id = 1 AND b.id = 2 WHERE b.started_at < a.ended_at AND a.started_at < b.ended_at") == 1 ]] ||
    fail "the two CPU lanes did not overlap: $(sql 'SELECT id, started_at, ended_at FROM runs')"
  best=$(sql "SELECT trial FROM sweep_trials ORDER BY objective DESC, id LIMIT 1")
  contains "$out" "best: trial $best (run" "the best trial line"

  run 0 sweep --project "$work/p.kiln" --param fc1.out_features=8:32 --search random --trials 2 --seed 5 "${quick[@]}" --json
  /usr/bin/python3 - "$out" <<'PY' || fail "the --json output: $out"
import json, sys
r = json.loads(sys.argv[1])
assert r["sweep"] == 2 and r["objective"] == "val_accuracy" and r["status"] == "finished", r
assert len(r["trials"]) == 2 and all(t["status"] == "finished" for t in r["trials"]), r
assert all(8 <= t["params"]["fc1.out_features"] <= 32 for t in r["trials"]), r
assert r["best"]["objective"] == max(t["objective"] for t in r["trials"]), r
PY
  # A trial's graph attribute is a new graph version the run trained (fc2 follows fc1).
  sizes=$(sql "SELECT json_extract(params_json, '\$.\"fc1.out_features\"') FROM sweep_trials WHERE sweep = 2 ORDER BY trial" | tr '\n' ' ')
  graphs=$(sql "SELECT g.graph_json FROM sweep_trials t JOIN runs r ON r.id = t.run JOIN graph_versions g ON g.id = r.graph_version WHERE t.sweep = 2 ORDER BY t.trial")
  for n in $sizes; do contains "$graphs" "\"in_features\": $n" "the trials' graphs"; done
  # The same seed plans the same trials.
  run 0 sweep --project "$work/p.kiln" --param fc1.out_features=8:32 --search random --trials 2 --seed 5 --epochs 1 --subset 100 --test-subset 20 --json
  [[ $(sql "SELECT group_concat(params_json, ';') FROM sweep_trials WHERE sweep = 2") == $(sql "SELECT group_concat(params_json, ';') FROM sweep_trials WHERE sweep = 3") ]] ||
    fail "seed 5 planned other trials the second time"
  ;;
prune)
  # lr 1 makes Adam diverge: after epoch 1 its validation accuracy is below the median of the
  # two finished trials', so the median rule stops it before its 3 epochs.
  run 0 sweep --project "$work/p.kiln" --param lr=1e-3,2e-3,1 --epochs 3 --subset 300 --test-subset 100 --devices cpu
  [[ $(sql "SELECT trial, status FROM sweep_trials ORDER BY id" | tr '\n' ' ') == "0|finished 1|finished 2|pruned " ]] ||
    fail "trial 2 not pruned: $(sql 'SELECT * FROM sweep_trials')"
  contains "$(sql "SELECT message FROM sweep_trials WHERE trial = 2")" "pruned after epoch 1: best val_accuracy" "the pruned trial's reason"
  # The stop is asked on the UI thread when epoch 1's metrics arrive and acts after the current
  # batch; these epochs are 3 batches of milliseconds, so the training thread may finish epoch 2
  # first (a CI trial saw it). The rule's promise is that the trial ends before its 3 epochs.
  epochs=$(sql "SELECT count(*) FROM epoch_metrics e JOIN sweep_trials t ON t.run = e.run WHERE t.trial = 2")
  [[ $epochs -ge 1 && $epochs -lt 3 ]] || fail "the pruned trial trained $epochs epochs (1 or 2 expected, of 3)"
  [[ $(sql "SELECT r.status FROM runs r JOIN sweep_trials t ON t.run = r.id WHERE t.trial = 2") == stopped ]] ||
    fail "the pruned trial's run is not 'stopped'"
  contains "$out" "pruned" "the table"
  ;;
bad_input)
  check() {  # WHAT NEEDLE ARGS...: exit 2, NEEDLE on stderr, nothing stored
    local what=$1 needle=$2; shift 2
    run 2 sweep --project "$work/p.kiln" "$@"
    contains "$err" "$needle" "$what"
    [[ $(sql "SELECT (SELECT count(*) FROM sweeps) + (SELECT count(*) FROM runs)") == 0 ]] || fail "$what stored a sweep or a run"
  }
  check "a reversed range" "--param lr=1e-2:1e-4:log: an empty range: LO 0.01 must be below HI 0.0001 (reversed?)" --param lr=1e-2:1e-4:log
  check "a word for a number" "--param lr=abc: 'abc' is not a number" --param lr=abc
  check "no values" "--param batch-size=: no values after '='" --param batch-size=
  check "an unknown parameter" "--param momentum=0.9: unknown parameter 'momentum'; known: lr, batch-size" --param momentum=0.9
  check "a missing node" "--param conv1.out_channels=8,16: the graph has no node 'conv1'; its nodes: image, flatten, fc1" --param conv1.out_channels=8,16
  check "a missing attribute" "--param fc1.kernel_size=3: node 'fc1' (Linear) has no attribute 'kernel_size'" --param fc1.kernel_size=3
  check "an attribute out of range" "--param fc1.out_features=0,8: node 'fc1'" --param fc1.out_features=0,8
  check "an unknown optimizer" "--param optimizer=sgd,lion: unknown optimizer 'lion'" --param optimizer=sgd,lion
  check "no --param" "a sweep needs at least one --param" "${quick[@]}"
  check "an unknown search" "--search bayes: expected grid or random" --param lr=1e-3,1e-2 --search bayes
  check "random without --trials" "--search random needs --trials N" --param lr=1e-3:1e-2 --search random
  check "a bad --trials" "--trials needs a whole number >= 1, got 'x'" --param lr=1e-3,1e-2 --trials x
  check "a missing device" "--devices cpu,cuda:7: " --param lr=1e-3,1e-2 --devices cpu,cuda:7
  check "an unknown flag" "Unknown option 'bogus'" --param lr=1e-3,1e-2 --bogus
  check "--resume without a sweep" "--resume: $work/p.kiln has no unfinished sweep" --resume
  ;;
kill)
  # No median rule here (--prune-startup 0): every trial runs to its end.
  "$kiln" sweep --project "$work/p.kiln" --param lr=1e-3,2e-3,3e-3 --epochs 2 --subset 600 --test-subset 100 \
    --devices cpu --prune-startup 0 >"$work/killed.out" 2>&1 &
  pid=$!
  for _ in $(seq 600); do  # up to 60 s: the first trial finished, the second one running
    [[ $(sql "SELECT (SELECT count(*) FROM sweep_trials WHERE status = 'finished') || (SELECT count(*) FROM sweep_trials WHERE status = 'running')" 2>/dev/null) == 11 ]] && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.1
  done
  kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
  [[ $(sql "SELECT trial, status FROM sweep_trials ORDER BY id" | tr '\n' ' ') == "0|finished 1|running 2|queued " ]] ||
    fail "not killed while trial 1 ran: $(sql 'SELECT * FROM sweep_trials'); $(cat "$work/killed.out")"
  finished_run=$(sql "SELECT run FROM sweep_trials WHERE trial = 0")
  killed_run=$(sql "SELECT run FROM sweep_trials WHERE trial = 1")
  run 0 sweep --project "$work/p.kiln" --resume
  contains "$out" "resuming sweep 1 of $work/p.kiln (1 interrupted trial(s) queued again)" "the resume"
  [[ $(sql "SELECT trial, status FROM sweep_trials ORDER BY id" | tr '\n' ' ') == "0|finished 1|interrupted 2|finished 1|finished " ]] ||
    fail "after --resume: $(sql 'SELECT * FROM sweep_trials')"
  [[ $(sql "SELECT run FROM sweep_trials WHERE id = 1") == "$finished_run" ]] || fail "the finished trial lost its run"
  [[ $(sql "SELECT status FROM runs WHERE id = $killed_run") == interrupted ]] || fail "the killed trial's run is not interrupted"
  [[ $(sql "SELECT count(*) FROM epoch_metrics WHERE run = $finished_run") == 2 ]] || fail "the finished trial lost its curves"
  [[ $(sql "SELECT status FROM sweeps") == finished ]] || fail "the sweep did not finish"
  contains "$out" "interrupted" "the table"
  ;;
interrupt)
  # Ctrl-C (SIGINT) stops the running trial after its batch and starts no more: exit 130, the
  # sweep "stopped"; --resume queues the stopped trial again and runs the rest.
  "$kiln" sweep --project "$work/p.kiln" --param lr=1e-3,2e-3 --epochs 2 --subset 600 --test-subset 100 \
    --devices cpu --prune-startup 0 >"$work/int.out" 2>&1 &
  pid=$!
  for _ in $(seq 600); do
    [[ $(sql "SELECT count(*) FROM sweep_trials WHERE status = 'running'" 2>/dev/null) == 1 ]] && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.1
  done
  kill -INT $pid; wait $pid
  status=$?
  [[ $status == 130 ]] || fail "a sweep stopped by SIGINT exited $status: $(cat "$work/int.out")"
  [[ $(sql "SELECT trial, status FROM sweep_trials ORDER BY id" | tr '\n' ' ') == "0|stopped 1|queued " ]] ||
    fail "after SIGINT: $(sql 'SELECT * FROM sweep_trials')"
  [[ $(sql "SELECT status FROM sweeps") == stopped ]] || fail "the sweep is not 'stopped'"
  contains "$(cat "$work/int.out")" "interrupted: stopping the running trials" "the sweep's output"
  run 0 sweep --project "$work/p.kiln" --resume
  [[ $(sql "SELECT trial, status FROM sweep_trials ORDER BY id" | tr '\n' ' ') == "0|stopped 1|finished 0|finished " ]] ||
    fail "after --resume: $(sql 'SELECT * FROM sweep_trials')"
  ;;
*) fail "unknown case $case" ;;
esac
exit $((failures > 0))
