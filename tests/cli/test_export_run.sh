#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# `kiln export --run DIR` (app/cli/onnx_run_export.h): the exported model on raw inputs, run by
# `kiln run`, gives the probabilities `kiln predict` gives on the same files:
#   images:    a 32 x 32 image-folder run (kiln_image_fixtures shapes) on its images resized to other
#              sizes, which take every path of Note [Exported image resize] (engine/onnx/run_export.cpp),
#              1 x 2000 and 2000 x 1 among them (in bounded memory), and on photo-like JPEGs of about
#              500 x 375 (written as PNGs, so both read the same pixels)
#   idx:       a Fashion-MNIST run (no preprocessing file: x / 255, Normalize(0.2860, 0.3530)), grey
#   csv:       a table with a categorical column and missing values (--missing fill), predicted with
#              a category training never saw; the inputs are its columns; --no-preprocessing keeps
#              the network's input
#   bad_input: a run without images.json / table.json, a corrupt images.json, no model, wrong flags
#   ort:       the image and table exports in onnxruntime-node (KILN_NPM_DIR) equal kiln run's
#              outputs; skipped (77) only when onnxruntime-node is not installed (quickstart.sh test installs it)
# Tolerances (max |p - q| of the probabilities; predict writes them with 6 significant digits):
#   1e-4 where Kiln shrinks (INTER_AREA, rebuilt exactly as MatMuls) or keeps the size: the float
#        sums differ in order only (measured up to 1.3e-5);
#   5e-3 where Kiln enlarges: OpenCV's 8-bit INTER_LINEAR uses 11-bit fixed-point weights, so a
#        pixel may differ by one level from the exported float bilinear (measured up to 1.9e-3).
# Registered with ctest by tests/CMakeLists.txt, one test per case:
#   tests/cli/test_export_run.sh path/to/kiln CASE [path/to/kiln_image_fixtures]
set -uo pipefail
kiln=$1 case=$2 fixtures=${3:-}
source "$(dirname "$0")/../common/cli_harness.sh"  # $work, fail, run, contains, one_line, missing_dep
py() { /usr/bin/python3 "$(dirname "$0")/export_run_data.py" "$@"; }
/usr/bin/python3 -c 'import numpy, PIL' 2>/dev/null || missing_dep "python3-numpy python3-pil" "no numpy or PIL in /usr/bin/python3"
# within WHAT DIFF TOL: fails unless DIFF <= TOL (WHAT: kiln predict's vs the export's, unless it says otherwise)
within() {
  echo "$1: max difference of the probabilities $2 (tolerance $3)"
  /usr/bin/python3 -c "import sys; sys.exit(0 if float('$2') <= float('$3') else 1)" || fail "$1: $2 > $3"
}
# image_case PREDICTIONS MODEL DIR TOL [--grey] CLASSES...: runs MODEL on DIR's images (all of one
# size) and compares its probabilities with those kiln predict wrote into PREDICTIONS.
image_case() {
  local predictions=$1 model=$2 dir=$3 tol=$4; shift 4
  local grey=() ; [[ $1 == --grey ]] && { grey=(--grey); shift; }
  local name; name=$(basename "$dir")
  find "$dir" -name '*.png' | sort >"$work/$name.files"
  py images "${grey[@]}" "$work/$name.npy" $(cat "$work/$name.files")
  run 0 run "$model" --input "image=$work/$name.npy" --out-dir "$work/o_$name"
  within "$name" "$(py compare "$predictions" "$work/$name.files" "$work/o_$name/probabilities.npy" "$@")" "$tol"
}
shapes_run() {
  "$fixtures" shapes "$work/sh" || fail "kiln_image_fixtures shapes"
  run 0 train --dataset "imagefolder:$work/sh" --model cnn --epochs 2 --batch-size 32 --seed 0 --device cpu --out "$work/run"
}
table() {
  # t.csv to train on; u.csv the same rows, every 31st colour one training never saw
  py pets "$work/t.csv" "$work/u.csv" 300
  run 0 train --dataset "csv:$work/t.csv" --label label --missing fill --epochs 10 --batch-size 16 --lr 0.01 --seed 0 --device cpu --out "$work/trun"
  mkdir -p "$work/cols"; py columns "$work/u.csv" "$work/cols" label
}
classes=(0_circle 1_square 2_stripes)

case $case in
images)
  shapes_run
  run 0 export --run "$work/run" --out "$work/m.onnx"
  contains "$out" "with the image preprocessing (input: uint8 pixels [N, H, W, 3])" "the summary"
  contains "$out" "checker: ok" "the summary"
  grep -aq '\["0_circle","1_square","2_stripes"\]' "$work/m.onnx" || fail "no class names in the metadata"
  # The run's images at other sizes, and photo-like JPEGs (as PNGs, so that PIL and Kiln read the
  # same pixels), all under $work/all; kiln predict once on the lot.
  # Every fifth of the run's 300 images: 60 per size.
  for s in "0 0" "45 37" "33 80" "100 75" "300 300" "20 26" "60 50" "2000 1" "1 2000"; do py resized "$work/sh" "$work/all/s${s/ /x}" $s 5; done
  "$fixtures" jpegs "$work/jpg" 3 || fail "kiln_image_fixtures jpegs"
  py resized "$work/jpg" "$work/photos" 0 0
  for d in "$work"/photos/*/; do mkdir -p "$work/all/photo_$(basename "$d")/x"; cp "$d"*.png "$work/all/photo_$(basename "$d")/x/"; done
  run 0 predict --run "$work/run" --input "$work/all" --top-k 3 --out "$work/p.csv"
  for d in s0x0 s45x37 s33x80 s100x75 s300x300 photo_0 photo_1 photo_2; do  # the size kept, INTER_AREA paths
    image_case "$work/p.csv" "$work/m.onnx" "$work/all/$d" 1e-4 "${classes[@]}"
  done
  for d in s20x26 s60x50 s2000x1 s1x2000; do  # INTER_LINEAR: enlarging; shrinking by 0.5 .. 1 (to twice the size, then 2 x 2)
    image_case "$work/p.csv" "$work/m.onnx" "$work/all/$d" 5e-3 "${classes[@]}"
  done
  # 10 images of 1 x 2000 (covered at 32 x 64000, center-cropped): only the crop's rows and columns
  # are computed (the dense resize matrices of before took 12 GB). kiln run keeps every value of the
  # graph, and the process's own size depends on the backends it loads (lavapipe's LLVM), so the bound
  # is on the peak above that of the same run on 10 images of 20 x 26 (163 MiB more when measured).
  py images "$work/wide.npy" $(head -10 "$work/s2000x1.files")
  py images "$work/small.npy" $(head -10 "$work/s20x26.files")
  peak=$(py peak "$kiln" run "$work/m.onnx" --input "image=$work/wide.npy" --out-dir "$work/o_peak") ||
    fail "kiln run on 1 x 2000 images failed (peak $peak MiB)"
  base=$(py peak "$kiln" run "$work/m.onnx" --input "image=$work/small.npy" --out-dir "$work/o_base") ||
    fail "kiln run on 20 x 26 images failed (peak $base MiB)"
  echo "kiln run on 10 images of 1 x 2000: peak resident memory $peak MiB (of 20 x 26: $base MiB)"
  (( peak - base < 400 )) || fail "kiln run on 10 images of 1 x 2000 took $((peak - base)) MiB more than on 20 x 26 (limit 400)"
  run 0 export --run "$work/run" --out "$work/plain.onnx" --no-preprocessing
  contains "$out" "without preprocessing" "the summary"
  /usr/bin/python3 -c "import numpy as np; np.save('$work/f.npy', np.zeros((2, 3, 32, 32), np.float32))"
  run 0 run "$work/plain.onnx" --input "$work/f.npy" --out-dir "$work/o_plain"
  contains "$out" "probabilities: f32[2, 3]" "the plain model's outputs"
  ;;
idx)
  [[ -f /usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz || -f /usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte ]] ||
    missing_dep dataset-fashion-mnist "no Fashion-MNIST in /usr/share/datasets/fashion-mnist"
  "$fixtures" fashion-mnist "$work/fm" 0 20 || fail "kiln_image_fixtures fashion-mnist"
  run 0 train --model mlp --epochs 1 --limit-batches 20 --device cpu --out "$work/run"
  run 0 export --run "$work/run" --out "$work/m.onnx"
  contains "$out" "uint8 pixels [N, H, W, 1]" "the summary"
  names=("T-shirt/top" Trouser Pullover Dress Coat Sandal Shirt Sneaker Bag "Ankle boot")
  run 0 predict --run "$work/run" --input "$work/fm/test" --top-k 10 --out "$work/p.csv"
  image_case "$work/p.csv" "$work/m.onnx" "$work/fm/test" 1e-4 --grey "${names[@]}"
  ;;
csv)
  table
  run 0 export --run "$work/trun" --out "$work/t.onnx"
  contains "$out" "with the table preprocessing (one input per column)" "the summary"
  grep -aq 'kiln.label' "$work/t.onnx" || fail "no label column in the metadata"
  run 0 predict --run "$work/trun" --input "$work/u.csv" --top-k 3 --out "$work/p.csv"
  seq 2 301 | sed "s|^|$work/u.csv:|" >"$work/rows"
  run 0 run "$work/t.onnx" --input "x=$work/cols/x.npy,colour=$work/cols/colour.npy,y=$work/cols/y.npy" --out-dir "$work/o"
  within "the table's rows (missing numbers and categories, an unseen category)" \
    "$(py compare "$work/p.csv" "$work/rows" "$work/o/probabilities.npy" cat dog owl)" 1e-5
  run 0 export --run "$work/trun" --out "$work/plain.onnx" --no-preprocessing
  /usr/bin/python3 -c "import numpy as np; np.save('$work/f.npy', np.zeros((4, 5), np.float32))"
  run 0 run "$work/plain.onnx" --input "$work/f.npy" --out-dir "$work/o_plain"
  contains "$out" "probabilities: f32[4, 3]" "the plain model's outputs (5 features: x, 3 colours, y)"
  # codegen translates the network alone, and says so for an export with the preprocessing
  run 0 codegen "$work/plain.onnx" --out "$work/plain_cpp"
  run 1 codegen "$work/t.onnx" --out "$work/t_cpp"
  contains "$err" "codegen translates the network alone: export it with --no-preprocessing" "codegen of a run export"
  ;;
bad_input)
  shapes_run
  cp -r "$work/run" "$work/noimages"; rm "$work/noimages/images.json"
  run 1 export --run "$work/noimages" --out "$work/m.onnx"
  contains "$err" "$work/noimages/images.json" "a run without images.json"; one_line "$err" "its error"
  cp -r "$work/run" "$work/corrupt"; echo '{"channels": 3, "heig' >"$work/corrupt/images.json"
  run 1 export --run "$work/corrupt" --out "$work/m.onnx"
  contains "$err" "$work/corrupt/images.json" "a corrupt images.json"; one_line "$err" "its error"
  table
  rm "$work/trun/table.json"
  run 1 export --run "$work/trun" --out "$work/t.onnx"
  contains "$err" "$work/trun/table.json" "a run without table.json"
  mkdir -p "$work/empty"
  run 1 export --run "$work/empty" --out "$work/m.onnx"
  contains "$err" "holds no model.safetensors" "a folder without a model"
  run 1 export --run "$work/nope" --out "$work/m.onnx"
  contains "$err" "$work/nope: no such run directory" "a missing run"
  run 2 export --run "$work/run" --out "$work/m.onnx" --weights x.safetensors
  contains "$err" "leave out GRAPH.json and --weights" "--run with --weights"
  run 2 export projects.json --no-preprocessing --out "$work/m.onnx"
  contains "$err" "--no-preprocessing is for --run DIR" "--no-preprocessing without --run"
  [[ ! -e $work/m.onnx ]] || fail "a failed export left $work/m.onnx"
  ;;
ort)
  npm_dir=${KILN_NPM_DIR:-${KILN_DATA_DIR:-$HOME/.local/share/kiln}/npm}
  [[ -d $npm_dir/node_modules/onnxruntime-node ]] && command -v node >/dev/null ||
    missing_dep onnxruntime-node "no onnxruntime-node in $npm_dir (installer/quickstart.sh test or bench) or no node"
  export NODE_PATH=$npm_dir/node_modules
  ort() { node "$(dirname "$0")/ort_run.js" "$@" 2>"$work/err" || fail "onnxruntime: $(cat "$work/err")"; }
  shapes_run
  run 0 export --run "$work/run" --out "$work/m.onnx"
  py resized "$work/sh" "$work/big" 100 75
  find "$work/big" -name '*.png' | sort | head -40 >"$work/files"; py images "$work/x.npy" $(cat "$work/files")
  run 0 run "$work/m.onnx" --input "image=$work/x.npy" --out-dir "$work/o"
  ort "$work/m.onnx" "$work/ort.npy" "image=$work/x.npy"
  table
  run 0 export --run "$work/trun" --out "$work/t.onnx"
  run 0 run "$work/t.onnx" --input "x=$work/cols/x.npy,colour=$work/cols/colour.npy,y=$work/cols/y.npy" --out-dir "$work/to"
  ort "$work/t.onnx" "$work/ort_t.npy" "x=$work/cols/x.npy" "colour=$work/cols/colour.npy" "y=$work/cols/y.npy"
  d=$(/usr/bin/python3 -c "import numpy as np; l = lambda f: np.load('$work/' + f); print('%.3g %.3g' % (np.abs(l('ort.npy') - l('o/probabilities.npy')).max(), np.abs(l('ort_t.npy') - l('to/probabilities.npy')).max()))")
  read -r di dt <<<"$d"
  echo "onnxruntime-node $(node -p 'require("onnxruntime-node/package.json").version') vs kiln run: images $di, table $dt"
  within "onnxruntime's vs kiln run's on the image export" "$di" 1e-5
  within "onnxruntime's vs kiln run's on the table export" "$dt" 1e-5
  ;;
*)
  echo "unknown case $case"; exit 2 ;;
esac
[[ $failures == 0 ]] || exit 1
echo "ok: $case"
