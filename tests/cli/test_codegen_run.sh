#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# `kiln codegen --run DIR` (app/cli/onnx_codegen.cpp, engine/onnx/codegen.h CodegenPredict): the C++
# generated from a trained run, built against the installed engine, predicts what `kiln predict`
# predicts on the same raw inputs:
#   predict:   an image-folder CNN run (kiln_image_fixtures shapes, 32 x 32) on its folder with an
#              undecodable file added, and a table run (a categorical column, missing values filled,
#              an unseen category) on a CSV: the generated <name>_predict writes the same rows,
#              labels, classes and errors, probabilities within 1e-4 (both print 6 digits); its
#              self-check main passes; bad arguments exit 2, a missing input exits 1 naming it, and
#              KILN_MODEL_DIR moves where it reads its weights
#   bad_input: no run, a run and a model, --no-preprocessing without --run, a run without
#              images.json, a bad class name or one whose file is main.cpp / predict.cpp: exit 1 or 2
#              naming what is wrong, nothing written
# Registered with ctest by tests/CMakeLists.txt (predict not under the sanitizers: it installs the
# engine and builds the generated project, as onnx.codegen.* do):
#   tests/cli/test_codegen_run.sh path/to/kiln CASE path/to/kiln_image_fixtures [path/to/kiln's build dir]
set -uo pipefail
kiln=$1 case=$2 fixtures=$3 build=${4:-}
source "$(dirname "$0")/../common/cli_harness.sh"  # $work, fail, run, contains, one_line, missing_dep
/usr/bin/python3 -c 'import numpy, PIL' 2>/dev/null || missing_dep "python3-numpy python3-pil" "no numpy or PIL in /usr/bin/python3 (export_run_data.py)"

shapes_run() {
  "$fixtures" shapes "$work/sh" 150 || fail "kiln_image_fixtures shapes"
  run 0 train --dataset "imagefolder:$work/sh" --model cnn --epochs 1 --batch-size 32 --seed 0 --device cpu --out "$work/run"
}
table_run() {
  /usr/bin/python3 "$(dirname "$0")/export_run_data.py" pets "$work/t.csv" "$work/u.csv" 200
  run 0 train --dataset "csv:$work/t.csv" --label label --missing fill --epochs 5 --batch-size 16 --lr 0.01 --seed 0 --device cpu --out "$work/trun"
}
# same A.csv B.csv WHAT: the two prediction CSVs have the same rows, labels, classes and errors, and
# probabilities within 1e-4
same() {
  local r
  r=$(/usr/bin/python3 - "$1" "$2" <<'PY'
import csv, sys
a, b = (list(csv.DictReader(open(f))) for f in sys.argv[1:3])
if [r["input"] for r in a] != [r["input"] for r in b] or not a:
    sys.exit("different inputs: %d vs %d rows" % (len(a), len(b)))
worst = 0.0
for x, y in zip(a, b):
    for k in x:
        if k == "probability":
            if (x[k] == "") != (y[k] == ""):
                sys.exit("%s: probability %r vs %r" % (x["input"], x[k], y[k]))
            worst = max(worst, abs(float(x[k] or 0) - float(y[k] or 0)))
        elif x[k] != y.get(k):
            sys.exit("%s: %s %r vs %r" % (x["input"], k, x[k], y.get(k)))
if worst > 1e-4:
    sys.exit("probabilities differ by %g" % worst)
print("%d rows, probabilities within %g" % (len(a), worst))
PY
) || fail "$3: $r"
  echo "$3: $r"
}
# build_generated DIR NAME: configures and builds the generated project DIR against $work/prefix
build_generated() {
  cmake -S "$1" -B "$1/build" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release >"$work/cmake.log" 2>&1 &&
    cmake --build "$1/build" >>"$work/cmake.log" 2>&1 || fail "building the generated $2: $(tail -20 "$work/cmake.log")"
}

case $case in
predict)
  [[ -d $build ]] || fail "the build directory to install the engine from is missing: '$build'"
  cmake --install "$build" --prefix "$work/prefix" >/dev/null || fail "cmake --install"
  # images
  shapes_run
  run 0 codegen --run "$work/run" --out "$work/img" --class Shapes
  contains "$out" "wrote $work/img/images.json" "the files written"
  contains "$out" "wrote $work/img/predict.cpp" "the files written"
  build_generated "$work/img" "image run"
  cp -r "$work/sh" "$work/in"; echo "not a picture" >"$work/in/0_circle/zz_broken.png"
  run 0 predict --run "$work/run" --input "$work/in" --out "$work/want.csv"
  "$work/img/build/shapes_predict" "$work/in" >"$work/got.csv" 2>"$work/got.err" || fail "shapes_predict: $(cat "$work/got.err")"
  same "$work/want.csv" "$work/got.csv" "images (kiln predict vs the generated program)"
  grep -q "zz_broken.png,0_circle,,,." "$work/got.csv" || fail "the broken file has no error: $(grep zz_broken "$work/got.csv")"
  contains "$(cat "$work/got.err")" "150 of 151 predicted" "the summary (150 images and the broken file)"
  "$work/img/build/shapes_main" >"$work/self.out" 2>&1 || fail "the self-check main: $(cat "$work/self.out")"
  "$work/img/build/shapes_predict" >/dev/null 2>"$work/e"; [[ $? == 2 ]] || fail "shapes_predict without PATH: not exit 2"
  "$work/img/build/shapes_predict" "$work/nowhere" >/dev/null 2>"$work/e"; [[ $? == 1 ]] || fail "a missing input: not exit 1"
  contains "$(cat "$work/e")" "$work/nowhere" "the missing input's error"
  "$work/img/build/shapes_predict" --bogus >/dev/null 2>"$work/e"; [[ $? == 2 ]] || fail "shapes_predict --bogus: not exit 2"
  mkdir -p "$work/allbad"; echo "not a picture" >"$work/allbad/a.png"  # nothing to predict: exit 1, as kiln predict
  "$work/img/build/shapes_predict" "$work/allbad" >/dev/null 2>"$work/e"; [[ $? == 1 ]] || fail "no image decodes: not exit 1"
  contains "$(cat "$work/e")" "no input gave a prediction" "the error when nothing is predicted"
  KILN_MODEL_DIR="$work/moved" "$work/img/build/shapes_predict" "$work/in" >/dev/null 2>"$work/e"
  contains "$(cat "$work/e")" "$work/moved/shapes_weights.safetensors" "KILN_MODEL_DIR's weights"
  # a table
  table_run
  run 0 codegen --run "$work/trun" --out "$work/tab" --class Pets
  contains "$out" "wrote $work/tab/table.json" "the files written"
  build_generated "$work/tab" "table run"
  run 0 predict --run "$work/trun" --input "$work/u.csv" --out "$work/want_t.csv"
  "$work/tab/build/pets_predict" "$work/u.csv" >"$work/got_t.csv" 2>"$work/got.err" || fail "pets_predict: $(cat "$work/got.err")"
  same "$work/want_t.csv" "$work/got_t.csv" "a table (kiln predict vs the generated program)"
  contains "$(cat "$work/got.err")" "not seen in training" "the unseen category's warning"
  ;;
bad_input)
  shapes_run
  run 2 codegen --out "$work/x"
  contains "$err" "needs a model" "no model nor run"
  run 2 codegen "$work/m.onnx" --run "$work/run" --out "$work/x"
  contains "$err" "not both" "a model and a run"
  run 2 codegen "$work/m.onnx" --no-preprocessing --out "$work/x"
  contains "$err" "--no-preprocessing is for --run DIR" "--no-preprocessing without --run"
  run 1 codegen --run "$work/none" --out "$work/x"
  contains "$err" "$work/none: no such run directory" "a missing run"
  cp -r "$work/run" "$work/noimages"; rm "$work/noimages/images.json"
  run 1 codegen --run "$work/noimages" --out "$work/x"
  contains "$err" "$work/noimages/images.json" "a run without images.json"; one_line "$err" "its error"
  run 1 codegen --run "$work/run" --out "$work/x" --class "not a name"
  contains "$err" "is not a C++ identifier" "a bad class name"
  run 1 codegen --run "$work/run" --out "$work/x" --class Predict
  contains "$err" "would write its code into predict.cpp" "a class named as a generated file"
  [[ ! -e $work/x ]] || fail "a refused codegen wrote $work/x"
  run 0 codegen --run "$work/run" --out "$work/plain" --no-preprocessing
  [[ ! -e $work/plain/predict.cpp && ! -e $work/plain/images.json ]] || fail "--no-preprocessing wrote the predict program"
  ;;
*) fail "unknown case $case" ;;
esac
exit $((failures > 0))
