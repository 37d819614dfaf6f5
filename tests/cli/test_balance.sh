#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# `kiln train --class-weights none|balanced|W0,W1,... --sampler random|weighted` on an imbalanced
# synthetic table (400 rows: 300 / 75 / 25 of three classes), on the CPU:
#   weighted:  balanced weights are scikit-learn's n / (k * count) of the training split, recorded
#              in summary.json with the sampler and the training counts; given weights are recorded
#              as given; a plain run records none and random (the sampler's class frequencies and
#              draws are tests/engine/test_data_class_balance.cpp's, its mid-epoch resume
#              tests/cli/test_resume.sh kill9_weighted's)
#   bad_input: a wrong number of weights, a negative, zero or NaN weight, an unknown sampler, a
#              regression table, and a --resume with another sampler each give one clear message
# Registered with ctest (label engine) by tests/CMakeLists.txt:  tests/cli/test_balance.sh path/to/kiln CASE
set -uo pipefail
kiln=$1 case=$2
source "$(dirname "$0")/../common/cli_harness.sh"  # $work, fail, run, contains, one_line, missing_dep

/usr/bin/python3 - "$work/t.csv" "$work/reg.csv" <<'PY'
import random, sys
random.seed(0)
with open(sys.argv[1], "w") as f, open(sys.argv[2], "w") as g:
    f.write("a,b,label\n"); g.write("a,b,y\n")
    for i in range(400):
        k = 0 if i % 16 < 12 else 1 if i % 16 < 15 else 2
        a, b = random.gauss(k, 0.7), random.gauss(-k, 0.7)
        f.write("%.4f,%.4f,c%d\n" % (a, b, k))
        g.write("%.4f,%.4f,%.4f\n" % (a, b, a - b))
PY
flags=(--dataset "csv:$work/t.csv" --batch-size 16 --seed 1 --device cpu --threads 2)
field() { /usr/bin/python3 -c "import json,sys; print(json.dumps(json.load(open(sys.argv[1]))[sys.argv[2]]))" "$1" "$2"; }

case $case in
weighted)
  run 0 train "${flags[@]}" --epochs 2 --class-weights balanced --sampler weighted --out "$work/b"
  contains "$err" "class balance: training samples per class" "the class balance line"
  contains "$err" "sampler weighted" "the class balance line"
  /usr/bin/python3 - "$work/b/summary.json" <<'PY' || fail "summary.json's class weights are not scikit-learn's"
import json, sys
s = json.load(open(sys.argv[1]))
counts, w = s["train_class_counts"], s["class_weights"]
n, k = sum(counts), len(counts)
assert s["sampler"] == "weighted", s["sampler"]
assert n == s["data"]["samples"]["train"], (n, s["data"]["samples"])
assert counts[0] > 3 * counts[1] > 6 * counts[2] > 0, counts  # imbalanced as written
want = [n / (k * c) for c in counts]  # sklearn.utils.class_weight.compute_class_weight("balanced")
assert all(abs(a - b) < 1e-9 * b for a, b in zip(w, want)), (w, want)
print("train counts", counts, "balanced weights", [round(x, 4) for x in w])
PY
  run 0 train "${flags[@]}" --epochs 2 --class-weights 1,2,8 --out "$work/w"
  [[ $(field "$work/w/summary.json" class_weights) == "[1.0, 2.0, 8.0]" ]] ||
    fail "summary.json class_weights: $(field "$work/w/summary.json" class_weights)"
  [[ $(field "$work/w/summary.json" sampler) == '"random"' ]] || fail "summary.json sampler is not random"
  run 0 train "${flags[@]}" --epochs 2 --out "$work/plain"
  [[ $(field "$work/plain/summary.json" class_weights) == '"none"' ]] || fail "a plain run's class_weights is not none"
  ;;
bad_input)
  run 1 train "${flags[@]}" --epochs 2 --class-weights 1,2 --out "$work/x"
  contains "$err" "--class-weights gives 2 weights for 3 classes" "a short weight list"; one_line "$err" "its error"
  run 1 train "${flags[@]}" --epochs 2 --class-weights 1,-1,2 --out "$work/x"
  contains "$err" "--class-weights: weight 1 is -1; class weights must be finite and positive" "a negative weight"
  run 1 train "${flags[@]}" --epochs 2 --class-weights 1,nan,2 --out "$work/x"
  contains "$err" "weight 1 is nan" "a NaN weight"
  run 1 train "${flags[@]}" --epochs 2 --class-weights 0,1,2 --out "$work/x"
  contains "$err" "weight 0 is 0" "a zero weight"
  run 1 train "${flags[@]}" --epochs 2 --class-weights heavy --out "$work/x"
  contains "$err" "--class-weights expects none, balanced or one weight per class" "a word"
  run 2 train "${flags[@]}" --epochs 2 --sampler uniform --out "$work/x"
  contains "$err" "--sampler" "an unknown sampler"
  run 1 train --dataset "csv:$work/reg.csv" --label y --task regression --epochs 1 --device cpu --class-weights balanced \
    --out "$work/x"
  contains "$err" "is a regression" "class weights on a regression table"; contains "$err" "reg.csv" "its error"
  [[ ! -e $work/x/checkpoint ]] || fail "a refused run left a checkpoint"
  run 0 train "${flags[@]}" --epochs 1 --out "$work/r"
  run 1 train "${flags[@]}" --epochs 2 --sampler weighted --out "$work/r" --resume
  contains "$err" "sampler = random, not weighted" "a resume with another sampler"
  ;;
*)
  echo "unknown case $case"; exit 2 ;;
esac
[[ $failures == 0 ]] || exit 1
echo "ok: $case"
