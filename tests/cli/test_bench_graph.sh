#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# `kiln bench --graph|--onnx FILE` (app/cli/bench_graph.cpp): the user's own model compared across
# devices (engine/graph/device_compare.h). Registered with ctest (label engine) by
# tests/CMakeLists.txt, one test per case:
#
#   tests/cli/test_bench_graph.sh path/to/kiln CASE
#
# Cases:
#   graph      the Fashion-MNIST MLP template on the CPU twice (cpu,cpu gives one row) and on an unknown
#              device: the CPU row's figures, JSON and CSV agreeing, the error row, exit status 1
#   onnx       the same template exported to ONNX by `kiln export` here, then benched from the file
#   project    a project's latest saved graph (tests/fixtures/project_schema4.kiln, a copy)
#   interrupt  SIGINT during the timed steps: exit 130, the partial row printed and written
#   bad_input  a missing file, two models at once, a graph without an Input, --precision with a graph
#   profile    --profile of the CNN template on the CPU: the table sorted by total time, every node
#              once, the sum line, the JSON's layers adding up to its layer_sum_ms
#   profile_project  --profile --project FILE (the schema-11 fixture, a copy): the profile stored in
#              the project (schema 12) with its device, batch and the latest graph version, twice
#              gives two rows; a project without a saved graph is refused and nothing stored
#   profile_bad_input  --profile without a graph, an unknown device, --devices / --csv with it,
#              --device without --profile: usage errors (exit 2)
set -uo pipefail
kiln=$1 case=$2
source "$(dirname "$0")/../common/cli_harness.sh"  # $work, fail, run, contains
here=$(cd "$(dirname "$0")" && pwd)
mlp="$here/../../projects/templates/fashion_mnist_mlp.json"
fast=(--batch-size 4 --steps 2 --warmup 1)

# check_results JSON CSV: every result row of the JSON is a CSV row with the same fields; the cpu
# f32 row is timed, matches the reference exactly and is its own speed-up 1.
check_results() {
  /usr/bin/python3 - "$1" "$2" <<'PY' || fail "the JSON / CSV do not hold the expected figures (above)"
import csv, json, sys
j = json.load(open(sys.argv[1]))
data = open(sys.argv[2], newline="").read()
assert data.endswith("\r\n") and "\n" not in data.replace("\r\n", ""), "rows must end with CRLF"
rows = list(csv.reader(data.splitlines(), strict=True))
head, body = rows[0], rows[1:]
res = j["results"]
assert len(body) == len(res), (len(body), len(res))
for row, r in zip(body, res):
    rec = dict(zip(head, row))
    for key in ("device", "name", "kind", "precision", "error"):
        assert rec[key] == r[key], (key, rec[key], r[key])
cpu = [r for r in res if r["device"] == "cpu" and r["precision"] == "f32"]
assert len(cpu) == 1, res
c = cpu[0]
assert c["error"] == "" and c["train_step_ms"] > 0 and c["infer_step_ms"] > 0, c
assert abs(c["train_images_per_second"] - j["batch_size"] * 1000 / c["train_step_ms"]) < 1e-6 * c["train_images_per_second"], c
assert c["max_output_diff"] == 0 and c["max_grad_diff"] == 0, c
assert c["train_speedup_vs_cpu"] == 1 and c["infer_speedup_vs_cpu"] == 1, c
assert isinstance(c["peak_memory_bytes"], int) and c["peak_memory_bytes"] > 0, c
print("results ok:", [(r["device"], r["precision"], r["error"][:40]) for r in res])
PY
}

case $case in
graph)
  run 1 bench --graph "$mlp" --devices cpu,cpu,cuda:7 --precisions f32 "${fast[@]}" --json "$work/b.json" --csv "$work/b.csv"
  echo "$out"
  grep -Eq '^cpu +f32 +.* [0-9]+\.[0-9]{2} +[0-9]+ +[0-9]+\.[0-9]{2} +[0-9]+ +[0-9.]+ +1\.00x +1\.00x +0\.00e\+00 +0\.00e\+00$' <<<"$out" \
    || fail "no CPU f32 row with speed-up 1.00x and zero differences"
  [[ $(grep -c '^cpu ' <<<"$out") == 1 ]] || fail "cpu named twice gave two rows"
  contains "$out" "cuda:7     f32   failed: " "the unknown device's row"
  check_results "$work/b.json" "$work/b.csv"
  /usr/bin/python3 -c "
import json, sys
r = json.load(open(sys.argv[1]))['results']
assert [x['device'] for x in r] == ['cpu', 'cuda:7'], r
assert r[1]['error'] and r[1]['max_output_diff'] is None and r[1]['train_speedup_vs_cpu'] is None, r[1]" "$work/b.json" \
    || fail "the unknown device's JSON row"
  ;;
onnx)
  run 0 export "$mlp" --out "$work/mlp.onnx"
  run 0 bench --onnx "$work/mlp.onnx" --devices cpu --precisions f32 "${fast[@]}" --json "$work/b.json" --csv "$work/b.csv"
  echo "$out"
  contains "$out" "kiln bench: $work/mlp.onnx, batch 4" "the header"
  check_results "$work/b.json" "$work/b.csv"
  ;;
project)
  cp "$here/../fixtures/project_schema4.kiln" "$work/p.kiln"  # opening migrates it: a copy
  run 0 bench --project "$work/p.kiln" --devices cpu --precisions f32 "${fast[@]}" --json "$work/b.json" --csv "$work/b.csv"
  echo "$out"
  contains "$out" "kiln bench: $work/p.kiln, batch 4" "the header"
  check_results "$work/b.json" "$work/b.csv"
  ;;
interrupt)
  set -m
  "$kiln" bench --graph "$mlp" --devices cpu --precisions f32 --batch-size 64 --steps 100000000 --warmup 0 \
    --json "$work/b.json" >"$work/out" 2>"$work/err" &
  pid=$!
  # Ctrl-C a while after its header (a loaded machine may take seconds to start).
  for _ in $(seq 600); do
    grep -q "^kiln bench: " "$work/out" && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  sleep 1.5
  kill -INT "$pid"
  wait "$pid"; status=$?
  cat "$work/out"
  [[ $status == 130 ]] || fail "after SIGINT kiln exited $status, expected 130; stderr: $(cat "$work/err")"
  contains "$(cat "$work/out")" "(interrupted)" "stdout after SIGINT"
  /usr/bin/python3 -c "
import json, sys
j = json.load(open(sys.argv[1]))
r = j['results']
assert j['interrupted'] is True and len(r) == 1 and r[0]['interrupted'] is True and r[0]['max_output_diff'] == 0, j" \
    "$work/b.json" || fail "the partial results were not written"
  ;;
bad_input)
  run 1 bench --graph "$work/missing.json" --devices cpu
  contains "$err" "missing.json" "a missing graph file"
  run 2 bench --graph "$mlp" --onnx "$work/x.onnx"
  contains "$err" "give one of --model NAME, --graph FILE, --onnx FILE, --project FILE" "two models"
  run 2 bench --graph "$mlp" --model cnn
  contains "$err" "give one of --model NAME" "--model with --graph"
  run 2 bench --graph "$mlp" --precision bf16
  contains "$err" "--precisions LIST" "--precision with a graph"
  run 2 bench --graph "$mlp" --precisions f64
  contains "$err" "'f64' is not one of all, f32, bf16, f16" "an unknown precision"
  # The template without its Input node (and the edge from it): nothing to feed
  /usr/bin/python3 -c "
import json, sys
g = json.load(open(sys.argv[1]))
x = [n['id'] for n in g['nodes'] if n['op'] == 'Input'][0]
g['nodes'] = [n for n in g['nodes'] if n['id'] != x]
g['edges'] = [e for e in g['edges'] if e['from']['node'] != x]
json.dump(g, open(sys.argv[2], 'w'))" "$mlp" "$work/no_input.json"
  run 2 bench --graph "$work/no_input.json" --devices cpu
  contains "$err" "no_input.json: the graph has no Input node" "a graph without an Input"
  [[ $out != *"done"* ]] || fail "a graph without an Input was measured"
  ;;
profile)
  cnn="$here/../../projects/templates/fashion_mnist_cnn.json"
  run 0 bench --graph "$cnn" --profile --device cpu --batch-size 4 --steps 2 --warmup 1 --json "$work/p.json"
  echo "$out"
  contains "$out" "kiln bench --profile: $cnn on cpu, batch 4, f32, interquartile means of 2 steps after 1 warm-up steps" "the header"
  grep -Eq '^per-layer sum [0-9.]+ ms = [0-9]+% of the step [0-9.]+ ms ' <<<"$out" || fail "no per-layer sum line"
  /usr/bin/python3 - "$work/p.json" "$cnn" "$work/out" <<'PY' || fail "the table / JSON do not hold the expected figures (above)"
import json, re, sys
j = json.load(open(sys.argv[1]))
g = json.load(open(sys.argv[2]))
out = open(sys.argv[3]).read().splitlines()
names = [n["name"] for n in g["nodes"] if n["op"] not in ("Input", "Output")]
layers = j["layers"]
assert sorted(l["name"] for l in layers) == sorted(names), (layers, names)
assert j["device"] == "cpu" and j["batch_size"] == 4 and j["steps"] == 2 and j["interrupted"] is False, j
assert abs(sum(l["total_ms"] for l in layers) - j["layer_sum_ms"]) <= 1e-9 * max(1, j["layer_sum_ms"]), j
assert j["step_ms"] > 0 and all(l["forward_ms"] >= 0 and l["backward_ms"] >= 0 for l in layers), j
assert all(l["has_backward"] for l in layers if l["has_parameters"]), layers
assert {l["name"] for l in layers if l["has_parameters"]} == {n["name"] for n in g["nodes"] if n["op"] in ("Conv2d", "Linear")}
# the table: a header, then one row per node sorted by total time (ties keep any order)
head = next(i for i, line in enumerate(out) if line.startswith("node "))
rows = [line.split() for line in out[head + 1 : head + 1 + len(names)]]
assert sorted(r[0] for r in rows) == sorted(names), rows
by_name = {l["name"]: l for l in layers}
totals = [by_name[r[0]]["total_ms"] for r in rows]
assert totals == sorted(totals, reverse=True), totals
for r in rows:
    assert int(r[-1]) == by_name[r[0]]["output_bytes"], r
print("profile ok:", [(r[0], r[-2]) for r in rows])
PY
  ;;
profile_project)
  cp "$here/../fixtures/project_schema11.kiln" "$work/p.kiln"  # opening migrates it: a copy
  run 0 bench --project "$work/p.kiln" --profile --device cpu --batch-size 4 --steps 2 --warmup 1
  echo "$out"
  contains "$out" "the profile (id 1) is stored in $work/p.kiln" "the stored line"
  run 0 bench --project "$work/p.kiln" --profile --device cpu --batch-size 2 --steps 1 --warmup 0
  contains "$out" "the profile (id 2) is stored in $work/p.kiln" "the second stored line"
  /usr/bin/python3 - "$work/p.kiln" <<'PY' || fail "the project does not hold the two profiles (above)"
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
assert db.execute("PRAGMA user_version").fetchone()[0] == 12
latest = db.execute("SELECT max(id) FROM graph_versions").fetchone()[0]
rows = db.execute("SELECT id, graph_version, run, device, precision, batch_size, steps, profile_json FROM profiles ORDER BY id").fetchall()
assert [r[:7] for r in rows] == [(1, latest, None, "cpu", "f32", 4, 2), (2, latest, None, "cpu", "f32", 2, 1)], rows
j = json.loads(rows[0][7])
assert j["device"] == "cpu" and j["batch_size"] == 4 and len(j["layers"]) > 0, j
assert all({"name", "op", "forward_ms", "backward_ms", "share_percent"} <= set(l) for l in j["layers"]), j["layers"]
print("stored ok:", [r[:7] for r in rows])
PY
  # A project with no saved graph: refused before profiling, nothing stored.
  /usr/bin/python3 -c "
import sqlite3, sys
db = sqlite3.connect(sys.argv[1]); db.execute('DELETE FROM profiles'); db.execute('UPDATE runs SET graph_version = NULL')
db.execute('DELETE FROM graph_versions'); db.commit()" "$work/p.kiln"
  run 2 bench --project "$work/p.kiln" --profile --device cpu --batch-size 2 --steps 1 --warmup 0
  contains "$err" "the project $work/p.kiln has no saved graph" "a project without a graph"
  [[ $(/usr/bin/python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('SELECT count(*) FROM profiles').fetchone()[0])" "$work/p.kiln") == 0 ]] \
    || fail "a refused profile was stored"
  ;;
profile_bad_input)
  cnn="$here/../../projects/templates/fashion_mnist_cnn.json"
  run 2 bench --profile --device cpu
  contains "$err" "--profile needs a graph: --graph FILE, --onnx FILE or --project FILE" "--profile without a graph"
  one_line "$err" "the usage error"
  run 2 bench --graph "$cnn" --profile --device nosuch:0
  contains "$err" "kiln bench: --device nosuch:0: " "an unknown device"
  run 2 bench --graph "$cnn" --profile --device cpu:3
  contains "$err" "kiln bench: --device cpu:3: " "a device that is not there"
  run 2 bench --graph "$cnn" --profile --devices cpu
  contains "$err" "--devices is for comparing devices; with --profile, --device D" "--devices with --profile"
  run 2 bench --graph "$cnn" --profile --csv "$work/p.csv"
  contains "$err" "--csv is for comparing devices; with --profile, --device D and --json FILE" "--csv with --profile"
  run 2 bench --graph "$cnn" --device cpu
  contains "$err" "--device is for --profile; to compare devices, --devices LIST" "--device without --profile"
  [[ $out != *"per-layer"* ]] || fail "a usage error printed a profile"
  ;;
*) fail "unknown case $case" ;;
esac
exit $((failures > 0))
