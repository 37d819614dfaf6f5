#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# `kiln predict --run DIR --input PATH` on the runs of `kiln train`:
#   images: scikit-learn's digits as PNGs in train/ and test/ folders (kiln_image_fixtures); the
#           predictions on test/ (labels from its class folders) reach the accuracy `kiln eval`
#           reports on the same split; a corrupt image and a text file are reported, not fatal
#   idx:    a Fashion-MNIST run (IDX files) predicts the 10,000 test images written as PNGs with
#           the accuracy `kiln eval` reports on the IDX test set
#   csv:    a synthetic table with a categorical column: the accuracy it prints is that of its
#           rows, the same classes without the label column; missing and extra columns, text in
#           a number column, an image, a run without a model give one error naming file and line
# Registered with ctest (label engine) by tests/CMakeLists.txt, one test per case:
#   tests/cli/test_predict.sh path/to/kiln CASE [path/to/kiln_image_fixtures]
set -uo pipefail
kiln=$1 case=$2 fixtures=${3:-}
source "$(dirname "$0")/../common/cli_harness.sh"  # $work, fail, run, contains, one_line, missing_dep
# field COLUMN FILE: the column (by header name) of a predictions CSV, one value a line
field() { /usr/bin/python3 -c "import csv,sys; [print(r[sys.argv[1]]) for r in csv.DictReader(open(sys.argv[2]))]" "$1" "$2"; }

case $case in
images)
  sk=/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz
  [[ -f $sk ]] || missing_dep python3-sklearn "no $sk"
  "$fixtures" digits "$work/all" "$sk" || fail "kiln_image_fixtures digits"
  for d in "$work"/all/*/; do  # every fifth image of a class to test/, the rest to train/
    c=$(basename "$d"); mkdir -p "$work/dg/train/$c" "$work/dg/test/$c"; i=0
    for f in "$d"*.png; do
      if ((i++ % 5 == 0)); then mv "$f" "$work/dg/test/$c/"; else mv "$f" "$work/dg/train/$c/"; fi
    done
  done
  run 0 train --dataset "imagefolder:$work/dg" --model mlp --epochs 4 --batch-size 32 --seed 0 --device cpu --out "$work/run"
  run 0 eval --model-file "$work/run/model.safetensors"
  eval_acc=$(grep -o 'accuracy [0-9.]*%' <<<"$out" | head -1)
  run 0 predict --run "$work/run" --input "$work/dg/test" --top-k 3 --out "$work/p.csv"
  echo "kiln eval: $eval_acc; kiln predict: $(grep -o 'accuracy .*' <<<"$err")"
  contains "$err" "$eval_acc (" "kiln predict's accuracy on test/ (kiln eval's: $eval_acc)"
  contains "$err" "$(find "$work/dg/test" -name '*.png' | wc -l) of $(find "$work/dg/test" -name '*.png' | wc -l) images predicted" "the summary"
  [[ $(head -1 "$work/p.csv") == "input,label,class,probability,class_2,probability_2,class_3,probability_3,error" ]] ||
    fail "the header with --top-k 3: $(head -1 "$work/p.csv")"
  [[ $(field input "$work/p.csv" | sed -n 1p) == "$work/dg/test/0/0000.png" ]] || fail "the first row is not the first file by path"
  field input "$work/p.csv" | sort -c || fail "the rows are not sorted by path"
  # One image, and a folder with a corrupt image and a text file.
  run 0 predict --run "$work/run" --input "$work/dg/test/3/$(ls "$work/dg/test/3" | head -1)"
  [[ $(printf '%s\n' "$out" | wc -l) == 2 ]] || fail "one image gives not one row: $out"
  mkdir -p "$work/mixed/sub"; cp "$work"/dg/test/7/*.png "$work/mixed/sub/"
  head -c 40 "$work/dg/test/7/$(ls "$work/dg/test/7" | head -1)" >"$work/mixed/broken.png"; echo hi >"$work/mixed/notes.txt"
  run 0 predict --run "$work/run" --input "$work/mixed" --out "$work/m.csv"
  contains "$err" "1 file skipped:" "the summary of a folder with a corrupt image"
  contains "$err" "skipped $work/mixed/broken.png: " "the corrupt image in the summary"
  contains "$err" "1 file left out: not image file names" "the text file"
  contains "$(grep broken.png "$work/m.csv")" "$work/mixed/broken.png,,,\"$work/mixed/broken.png: not an image" "the corrupt image's row"
  [[ $(field class "$work/m.csv" | grep -c '^7$') -ge 30 ]] || fail "fewer than 30 of the 7s are 7"
  # Nothing predicted is a failure (exit 1), the CSV still naming each input's error.
  mkdir -p "$work/allbad"; cp "$work/mixed/broken.png" "$work/allbad/"
  run 1 predict --run "$work/run" --input "$work/allbad" --out "$work/allbad.csv"
  contains "$err" "kiln: error: $work/allbad: no input gave a prediction (1 file skipped" "a folder of corrupt images"
  contains "$(cat "$work/allbad.csv")" "$work/allbad/broken.png: not an image" "the CSV of a folder of corrupt images"
  run 1 predict --run "$work/run" --input "$work/mixed/notes.txt"
  contains "$err" "not an image file name" "a text file as the input"; one_line "$err" "its error"
  run 1 predict --run "$work/run" --input "$work/empty_nope"
  contains "$err" "$work/empty_nope: no such file or folder" "a missing input"
  ;;
idx)
  [[ -f /usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz || -f /usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte ]] ||
    missing_dep dataset-fashion-mnist "no Fashion-MNIST in /usr/share/datasets/fashion-mnist"
  "$fixtures" fashion-mnist "$work/fm" 0 1000 || fail "kiln_image_fixtures fashion-mnist"  # the 10,000 test images
  run 0 train --model mlp --epochs 1 --limit-batches 40 --device cpu --out "$work/run"
  run 0 eval --model-file "$work/run/model.safetensors"
  eval_acc=$(grep -o 'accuracy [0-9.]*%' <<<"$out" | head -1)
  run 0 predict --run "$work/run" --input "$work/fm/test" --out "$work/p.csv"
  acc=$(/usr/bin/python3 - "$work/p.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
# class folders "0_T-shirt_top" ...: the class name with '/' and ' ' as '_'
hit = sum(r["input"].split("/")[-2].split("_", 1)[1] == r["class"].replace("/", "_").replace(" ", "_") for r in rows)
print("accuracy %.2f%% of %d" % (100 * hit / len(rows), len(rows)))
PY
)
  echo "kiln eval: $eval_acc; kiln predict on the test images as PNGs: $acc"
  [[ $acc == "$eval_acc of 10000" ]] || fail "kiln predict's $acc is not kiln eval's $eval_acc"
  ;;
csv)
  /usr/bin/python3 - "$work/t.csv" <<'PY'
import random, sys
random.seed(1)
colours = ["red", "green", "blue"]
with open(sys.argv[1], "w") as f:
    f.write("x,colour,y,label\n")
    for i in range(300):
        k = i % 3
        c = colours[k] if random.random() < 0.8 else random.choice(colours)
        f.write("%.3f,%s,%.3f,%s\n" % (random.gauss(2 * k, 0.7), c, random.gauss(-k, 0.7), ["cat", "dog", "owl"][k]))
PY
  run 0 train --dataset "csv:$work/t.csv" --epochs 30 --batch-size 16 --lr 0.01 --seed 0 --device cpu --out "$work/run"
  contains "$err" " samples/s " "the throughput of a table's epochs"; [[ $err != *img/s* ]] || fail "a table's rows as img/s: $err"
  run 0 predict --run "$work/run" --input "$work/t.csv" --out "$work/p.csv"
  acc=$(/usr/bin/python3 -c "import csv,sys; r=list(csv.DictReader(open(sys.argv[1]))); print('%.2f%%' % (100*sum(x['class']==x['label'] for x in r)/len(r)))" "$work/p.csv")
  echo "kiln predict: $(grep -o 'accuracy .*' <<<"$err"); the rows: $acc"
  contains "$err" "accuracy $acc (" "the accuracy of the rows"
  /usr/bin/python3 -c "import sys; sys.exit(0 if float('${acc%\%}') >= 90 else 1)" || fail "accuracy $acc < 90%"
  [[ $(field input "$work/p.csv" | sed -n 1p) == "$work/t.csv:2" ]] || fail "the first row is not FILE:2"
  cut -d, -f1-3 "$work/t.csv" >"$work/nolabel.csv"  # no label column
  run 0 predict --run "$work/run" --input "$work/nolabel.csv" --out "$work/q.csv"
  [[ $(field class "$work/p.csv") == "$(field class "$work/q.csv")" ]] || fail "other classes without the label column"
  [[ $(head -1 "$work/q.csv") == "input,class,probability,error" ]] || fail "the header without labels: $(head -1 "$work/q.csv")"
  # The label column never filters rows: empty, a missing marker or a class the run does not know,
  # each row is predicted as without the column, the label echoed; unknown classes count wrong.
  { echo "x,colour,y,label"; sed -n '2,7p' "$work/t.csv" | awk -F, -v OFS=, 'NR==1{$4=""} NR==2{$4="NA"} NR==3{$4="bird"} 1'; } >"$work/odd.csv"
  run 0 predict --run "$work/run" --input "$work/odd.csv" --out "$work/o.csv"
  contains "$err" "6 of 6 rows predicted" "rows with empty or unknown labels"
  [[ $(field class "$work/o.csv") == "$(field class "$work/q.csv" | head -6)" ]] || fail "other classes with odd labels"
  [[ $(field label "$work/o.csv" | head -3 | tr '\n' ' ') == " NA bird " ]] || fail "the labels are not echoed: $(cat "$work/o.csv")"
  contains "$err" "of 4 labelled inputs); 1 label not among the run's classes, counted wrong" "the accuracy of odd labels"
  # A category the training rows never had: predicted (encoded as none, as OneHotEncoder(handle_unknown=
  # 'ignore')) and said on standard error with file, line, column and value, the first 5 and a count.
  { echo "x,colour,y"; for i in 1 2 3 4 5 6; do echo "0.5,purple$i,0.1"; done; echo "0.5,red,0.1"; } >"$work/new.csv"
  run 0 predict --run "$work/run" --input "$work/new.csv" --out "$work/n.csv"
  contains "$err" "7 of 7 rows predicted" "rows with unseen categories"
  contains "$err" "warning: 6 values of categorical columns were not seen in training: encoded as none of the column's categories (as scikit-learn's OneHotEncoder(handle_unknown='ignore'))" "the unseen categories"
  contains "$err" "  $work/new.csv:2, column 'colour': 'purple1'" "the first unseen value"
  contains "$err" "  $work/new.csv:6, column 'colour': 'purple5'
  and 1 more" "the fifth unseen value and the count"
  [[ $err != *purple6* && $err != *"'red'"* ]] || fail "more than the first 5 unseen values, or a seen one: $err"
  cut -d, -f2-4 "$work/t.csv" >"$work/missing.csv"
  run 1 predict --run "$work/run" --input "$work/missing.csv"
  contains "$err" "$work/missing.csv:1: no column 'x'" "a missing column"; one_line "$err" "its error"
  sed '1s/$/,extra/;2,$s/$/,1/' "$work/t.csv" >"$work/extra.csv"
  run 1 predict --run "$work/run" --input "$work/extra.csv"
  contains "$err" "$work/extra.csv:1: column 5 'extra' was not in the training table" "an extra column"
  sed '5s/^[^,]*,/oops,/' "$work/t.csv" >"$work/text.csv"
  run 1 predict --run "$work/run" --input "$work/text.csv"
  contains "$err" "$work/text.csv:5, column 'x'" "text in a number column"
  /usr/bin/python3 -c "import struct, sys, zlib
def chunk(t, d): return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d))
open(sys.argv[1], 'wb').write(b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', 1, 1, 8, 0, 0, 0, 0))
                              + chunk(b'IDAT', zlib.compress(b'\0\x80')) + chunk(b'IEND', b''))" "$work/photo.png"
  run 1 predict --run "$work/run" --input "$work/photo.png"
  contains "$err" "$work/photo.png: a PNG image, but the run was trained on a table ($work/t.csv); give a CSV file of the same columns" "an image for a table run"
  one_line "$err" "its error"
  # A run trained with --skip-rows 1 (a count line, as scikit-learn's tables): predict skips as many
  # lines of its input and says so; --skip-rows 0 reads a file without the count line.
  { echo "300,3,cat,dog,owl"; cat "$work/t.csv"; } >"$work/counted.csv"
  run 0 train --dataset "csv:$work/counted.csv" --skip-rows 1 --epochs 1 --seed 0 --device cpu --out "$work/skip"
  run 0 predict --run "$work/skip" --input "$work/counted.csv" --out "$work/s.csv"
  contains "$err" "skipped the first 1 line(s) of $work/counted.csv as the training table's --skip-rows 1" "the note on skipped lines"
  [[ $(field input "$work/s.csv" | sed -n 1p) == "$work/counted.csv:3" ]] || fail "the first row of counted.csv is not FILE:3"
  run 1 predict --run "$work/skip" --input "$work/t.csv"  # its header skipped: the first row is taken for it
  contains "$err" "skipped the first 1 line(s) of $work/t.csv" "the note when the input has no count line"
  run 0 predict --run "$work/skip" --input "$work/t.csv" --skip-rows 0 --out "$work/s0.csv"
  [[ $err != *"skipped the first"* ]] || fail "a note with --skip-rows 0: $err"
  [[ $(field class "$work/s.csv") == "$(field class "$work/s0.csv")" ]] || fail "other classes with --skip-rows 0"
  run 0 predict --run "$work/run" --input "$work/counted.csv" --skip-rows 1 --out "$work/s1.csv"
  [[ $(field class "$work/p.csv") == "$(field class "$work/s1.csv")" ]] || fail "other classes with --skip-rows 1"
  run 2 predict --run "$work/run" --input "$work/t.csv" --skip-rows -1
  contains "$err" "--skip-rows expects an integer >= 0" "--skip-rows -1"
  mkdir -p "$work/unfinished/checkpoint"
  run 1 predict --run "$work/unfinished" --input "$work/t.csv"
  contains "$err" "holds no model.safetensors: its training has not finished" "a run without a model"
  run 2 predict --input "$work/t.csv"
  contains "$err" "--run DIR is required" "no --run"
  ;;
*)
  echo "unknown case $case"; exit 2 ;;
esac
[[ $failures == 0 ]] || exit 1
echo "ok: $case"
