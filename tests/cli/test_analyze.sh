#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# `kiln analyze` (app/cli/analyze.cpp): the network analyzer on the CNN template (table, totals,
# warnings, a measured CPU step), its JSON checked against the training memory formula computed
# here from the layers' output shapes (Note [Training memory estimate]), a project's latest graph,
# Ctrl-C during the measurement, and the bad inputs. Registered with ctest (label engine) by
# tests/CMakeLists.txt, one test per case:
#
#   tests/cli/test_analyze.sh path/to/kiln CASE
#
# Cases: template json project interrupt bad_input
set -uo pipefail
kiln=$1 case=$2
source "$(dirname "$0")/../common/cli_harness.sh"  # $work, fail, run, contains
here=$(cd "$(dirname "$0")" && pwd)
cnn="$here/../../projects/templates/fashion_mnist_cnn.json"
fast=(--devices cpu --steps 2 --warmup 1)

case $case in
template)
  run 0 analyze --graph "$cnn" --batch-size 128 "${fast[@]}"
  echo "$out"
  table=$(tr -s ' ' <<<"$out")  # the columns' widths squeezed to one space
  contains "$table" "conv1 Conv2d f32[N, 32, 28, 28] 320 225.8 k 12.2 MiB" "the conv1 row"
  contains "$table" "fc1 Linear f32[N, 128] 401,536 401.4 k 64.0 KiB" "the fc1 row"
  contains "$table" "total 421,642 4.24 M 43.4 MiB" "the total row"
  contains "$out" "parameters: 421,642 (1.6 MiB); multiply-adds: 4.24 M per sample" "the totals"
  contains "$out" "training memory estimate: 49.8 MiB = activations 43.4 MiB + parameters 1.6 MiB + gradients 1.6 MiB + adam state 3.2 MiB" "the totals"
  contains "$out" "[dominant_macs] 'conv2' does 85% of the model's multiply-adds" "the warnings"
  [[ $out != *large_linear_after_flatten* ]] || fail "fc1 (421,642 parameters in all, < 1M) was flagged"
  grep -Eq '^cpu +.* [0-9]+\.[0-9]{2} +[0-9]+ +[0-9.]+ [KMG]iB$' <<<"$out" || fail "no measured CPU row: $out"
  ;;
json)
  run 0 analyze --graph "$cnn" --batch-size 64 --optimizer sgd --dtype bf16 "${fast[@]}" --json
  printf '%s\n' "$out" >"$work/a.json"
  /usr/bin/python3 - "$work/a.json" <<'PY' || fail "the JSON does not hold the expected figures (above)"
import json, math, re, sys
a = json.load(open(sys.argv[1]))
B, d = 64, 2  # batch, bf16 bytes
act = 0
for layer in a["layers"]:
    want = 0
    for t in layer["outputs"]:
        dims = [B if x == "N" else int(x) for x in re.search(r"\[(.*)\]", t).group(1).split(", ")]
        want += math.prod(dims) * d
    assert layer["activation_bytes"] == want, (layer, want)
    act += want
P = sum(l["parameters"] for l in a["layers"])
t = a["totals"]
assert P == t["parameters"] == 421642, P
assert t["activation_bytes"] == act
# sgd with Kiln's momentum 0.9: one momentum_buffer per parameter
assert t["training_bytes"] == act + P * d * 3, (t, act, P)
assert [w["kind"] for w in a["warnings"]] == ["dominant_macs"] and a["warnings"][0]["name"] == "conv2", a["warnings"]
s = a["step_times"]
assert len(s) == 1 and s[0]["device"] == "cpu" and s[0]["steps"] == 2 and s[0]["error"] == "", s
assert s[0]["ms_per_step"] > 0 and abs(s[0]["images_per_second"] - B * 1000 / s[0]["ms_per_step"]) < 1e-6 * s[0]["images_per_second"]
print("JSON ok:", t)
PY
  ;;
project)
  cp "$here/../fixtures/project_schema4.kiln" "$work/p.kiln"  # opening migrates it: a copy
  run 0 analyze --project "$work/p.kiln" --batch-size 4 --no-measure
  echo "$out"
  contains "$(tr -s ' ' <<<"$out")" "n0_Gemm Linear f32[N, 3] 15 12 48 B" "the project's latest graph"
  contains "$out" "training memory estimate: 560 B" "the totals"
  [[ $out != *"ms/step"* && $err != *measuring* ]] || fail "--no-measure measured"
  ;;
interrupt)  # Ctrl-C during the measurement: the steps so far are reported, exit 130
  set -m
  "$kiln" analyze --graph "$cnn" --batch-size 256 --devices cpu --steps 100000 --warmup 0 >"$work/out" 2>"$work/err" &
  pid=$!
  for _ in $(seq 300); do
    grep -q "measuring cpu" "$work/err" && break
    sleep 0.1
  done
  sleep 1.5
  kill -INT "$pid"
  wait "$pid"; status=$?
  [[ $status == 130 ]] || fail "after SIGINT kiln exited $status, expected 130; stderr: $(cat "$work/err")"
  contains "$(cat "$work/out")" "(interrupted)" "stdout after SIGINT"
  ;;
bad_input)
  run 2 analyze --graph "$cnn" --batch-size 0 --no-measure
  contains "$err" "kiln analyze: --batch-size expects an integer >= 1, got '0'" "batch size 0"
  run 2 analyze --graph "$cnn" --batch-size -5 --no-measure
  contains "$err" "got '-5'" "a negative batch size"
  run 2 analyze --graph "$cnn" --devices cuda:7
  contains "$err" "kiln analyze: --devices: device 'cuda:7'" "an unknown device"
  run 2 analyze --graph "$cnn" --devices gpu
  contains "$err" "unknown device 'gpu'" "a malformed device"
  run 2 analyze --batch-size 8
  contains "$err" "give one of --graph FILE and --project FILE" "no graph"
  # fc1's input cut: the problem names the node; exit 2 before anything is measured
  /usr/bin/python3 -c "
import json, sys
g = json.load(open(sys.argv[1]))
fc1 = [n['id'] for n in g['nodes'] if n['name'] == 'fc1'][0]
g['edges'] = [e for e in g['edges'] if e['to']['node'] != fc1]
json.dump(g, open(sys.argv[2], 'w'))" "$cnn" "$work/cut.json"
  run 2 analyze --graph "$work/cut.json"
  contains "$err" "the graph cannot run:" "a graph with problems"
  contains "$err" "'fc1': input 'in' is not connected" "a graph with problems"
  [[ $err != *measuring* ]] || fail "a graph with problems was measured"
  run 1 analyze --graph "$work/missing.json"
  contains "$err" "missing.json" "a missing graph file"
  ;;
*) fail "unknown case $case" ;;
esac
exit $((failures > 0))
