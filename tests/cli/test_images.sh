#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# `kiln train --dataset imagefolder:DIR | images:FILE.csv`, `kiln eval` and `kiln dataset inspect`
# on image folders written by kiln_image_fixtures (tests/data/image_fixtures.cpp, OpenCV) and, for
# the palette PNG and CMYK JPEG OpenCV does not write, PIL (python3-pil, which python3-torchvision
# brings). Registered with ctest (label engine) by tests/CMakeLists.txt, one test per case:
#
#   tests/cli/test_images.sh path/to/kiln CASE path/to/kiln_image_fixtures
#
# Cases: crafted bad_input inspect fashion_mnist digits resnet
set -uo pipefail
kiln=$1 case=$2 fixtures=$3
source "$(dirname "$0")/../common/cli_harness.sh"  # $work, fail, run, contains, one_line, missing_dep
summary() { /usr/bin/python3 -c "import json,sys; v=json.load(open('$work/run/summary.json'))
for k in sys.argv[1].split('.'): v=v[k]
print(v)" "$1"; }
has_pil() { /usr/bin/python3 -c "import PIL" 2>/dev/null; }

case $case in
crafted)  # every crafted file: the good ones train, the bad ones are named in the summary
  "$fixtures" crafted "$work/d" || fail "kiln_image_fixtures crafted"
  if has_pil; then  # a palette PNG and a CMYK JPEG, which OpenCV reads but does not write
    /usr/bin/python3 -c "
from PIL import Image
Image.new('RGB', (16, 12), (200, 30, 40)).convert('P', palette=Image.ADAPTIVE, colors=4).save('$work/d/crafted/a/palette.png')
Image.new('CMYK', (16, 12), (0, 128, 255, 0)).save('$work/d/crafted/b/cmyk.jpg')
assert Image.open('$work/d/crafted/a/palette.png').mode == 'P' and Image.open('$work/d/crafted/b/cmyk.jpg').mode == 'CMYK'"
  elif [[ ${KILN_REQUIRE_TEST_DEPS:-0} == 1 ]]; then
    fail "python3-pil is missing (the palette PNG and CMYK JPEG cases)"
  fi
  run 0 train --dataset "imagefolder:$work/d/crafted" --model cnn --epochs 2 --batch-size 4 --augment standard \
    --rotation 10 --test-fraction 0.3 --device cpu --out "$work/run"
  for f in notes.txt garbage.png truncated.jpg zero.jpg; do contains "$err" "skipped $work/d/crafted/b/$f: " "the summary line"; done
  contains "$err" "truncated JPEG" "the truncated JPEG's reason"; contains "$err" "empty file (0 bytes)" "the empty file's reason"
  [[ $(summary data.skipped_count) == 4 ]] || fail "summary.json: skipped_count is not 4"
  [[ $(summary data.kind) == imagefolder ]] || fail "summary.json: kind is not imagefolder"
  [[ $(summary data.hidden) == 1 ]] || fail "summary.json: the hidden file was not counted"
  want=$(has_pil && echo 12 || echo 10)
  [[ $(/usr/bin/python3 -c "import json; s=json.load(open('$work/run/summary.json'))['data']['samples']; print(s['train'] + s['test'])") == "$want" ]] ||
    fail "summary.json: not $want decodable images (the palette PNG and CMYK JPEG included)"
  [[ $(summary data.fingerprint) =~ ^[0-9a-f]{16}$ ]] || fail "summary.json: no fingerprint"
  [[ -f $work/run/images.json ]] || fail "the run did not keep images.json"
  run 0 eval --model-file "$work/run/model.safetensors"
  contains "$out" "test images of imagefolder:" "kiln eval of an image run"
  contains "$out" "c ü" "kiln eval's confusion matrix (class names with a space and non-ASCII)"
  run 1 eval --model-file "$work/run/model.safetensors" --dataset fashion-mnist
  contains "$err" "was trained on images" "eval of an image run on another dataset"
  run 0 train --dataset "imagefolder:$work/d/crafted" --model cnn --epochs 3 --batch-size 4 --augment standard \
    --rotation 10 --test-fraction 0.3 --device cpu --out "$work/run" --resume
  [[ $(summary epochs) == 3 ]] || fail "the resumed image run did not reach 3 epochs"
  cp "$work/d/crafted/a/rgb.png" "$work/d/crafted/a/rgb2.png"  # the folder changes: eval says so
  run 0 eval --model-file "$work/run/model.safetensors"
  contains "$err" "changed since the run trained on it" "eval of a run whose folder changed"
  run 1 train --dataset "imagefolder:$work/d/crafted" --model cnn --epochs 4 --batch-size 4 --augment standard \
    --rotation 10 --test-fraction 0.3 --device cpu --out "$work/run" --resume
  contains "$err" "the image folder's files changed since the run started (fingerprint \"" "resume on a changed folder"
  [[ $err != *'"channels"'* ]] || fail "resume on a changed folder prints the run's images.json: $err"
  run 0 train --dataset "images:$work/d/manifest.csv" --model mlp --epochs 1 --test-fraction 0 --device cpu --out "$work/m"
  contains "$err" "manifest.csv:5: no such file" "a manifest naming a missing file"
  contains "$out" "no test split (--test-fraction 0): not evaluated" "a run without a test split"
  [[ $out != *nan* ]] || fail "a run without a test split prints NaN figures: $out"
  ;;
bad_input)
  "$fixtures" crafted "$work/d" || fail "kiln_image_fixtures crafted"
  run 1 train --dataset "imagefolder:$work/d/empty_class" --out "$work/r"
  contains "$err" "kiln: error: $work/d/empty_class/b: class folder 'b' holds no image" "an empty class folder"; one_line "$err" "its error"
  run 1 train --dataset "imagefolder:$work/d/one_class" --out "$work/r"
  contains "$err" "one class ('a'); classification needs at least two" "one class"; one_line "$err" "its error"
  run 1 train --dataset "imagefolder:$work/d/nope" --out "$work/r"
  contains "$err" "$work/d/nope: no such folder" "a missing folder"
  run 1 train --dataset "imagefolder:$work/d/crafted/a" --out "$work/r"
  contains "$err" "no class folders" "a folder of images without class folders"
  printf 'file,class\nx.png,a\n' >"$work/d/bad_manifest.csv"
  run 1 train --dataset "images:$work/d/bad_manifest.csv" --out "$work/r"
  contains "$err" "bad_manifest.csv:1: an image manifest needs the columns 'path' and 'label'" "a manifest without path,label"
  run 2 train --dataset "imagefolder:$work/d/crafted" --image-size 0 --out "$work/r"; contains "$err" "--image-size expects" "--image-size 0"
  run 2 train --dataset "imagefolder:$work/d/crafted" --channels 2 --out "$work/r"; contains "$err" "--channels expects 1 or 3" "--channels 2"
  run 2 train --augment flip --out "$work/r"; contains "$err" "--augment applies to --dataset imagefolder:DIR" "--augment on fashion-mnist"
  run 2 train --dataset "imagefolder:$work/d/crafted" --normalize 0.5/0 --out "$work/r"; contains "$err" "std must be positive" "--normalize 0.5/0"
  ;;
inspect)
  "$fixtures" crafted "$work/d" || fail "kiln_image_fixtures crafted"
  run 0 dataset inspect "$work/d/crafted"
  contains "$out" "10 images, 3 classes, 4 files skipped, 1 hidden" "inspect's count line"
  contains "$out" "class 2 'c ü': 2" "inspect's class counts"
  contains "$out" "20x10 (1)" "inspect's image sizes (EXIF-rotated)"
  contains "$out" "bit depth: 8 (8) 16 (2)" "inspect's bit depths"
  contains "$out" "skipped $work/d/crafted/b/zero.jpg: empty file (0 bytes)" "inspect's skipped files"
  run 0 dataset inspect "images:$work/d/manifest.csv"
  contains "$out" "skipped $work/d/crafted/missing.png: $work/d/manifest.csv:5: no such file" "inspect of a manifest"
  printf 'a,b,label\n1,x,p\n2,,q\n3,y,p\n' >"$work/t.csv"
  run 0 dataset inspect "$work/t.csv"
  contains "$out" "column 1 'b': categorical, 1 missing" "inspect of a table"
  contains "$out" "2 classes: 'p' (2) 'q' (1)" "inspect of a table's classes"
  run 1 dataset inspect "$work/d/empty_class"; contains "$err" "class folder 'b' holds no image" "inspect of a bad folder"
  run 2 dataset nope; contains "$err" "unknown subcommand 'nope'" "kiln dataset nope"
  ;;
fashion_mnist)  # a PNG folder with train/ and test/ (100 and 20 images a class) trains the cnn
  [[ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz || -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte ]] ||
    missing_dep dataset-fashion-mnist "no Fashion-MNIST in /usr/share/datasets/fashion-mnist"
  "$fixtures" fashion-mnist "$work/fm" 100 20 || fail "kiln_image_fixtures fashion-mnist"
  run 0 train --dataset "imagefolder:$work/fm" --model cnn --epochs 3 --batch-size 32 --seed 0 --device cpu --out "$work/run"
  [[ $(summary data.split) == folders ]] || fail "train/ and test/ were not used as the splits"
  [[ $(summary data.samples.train) == 1000 && $(summary data.samples.test) == 200 ]] || fail "not 1000 + 200 images"
  [[ $(summary data.channels) == 1 ]] || fail "grey PNGs did not give one channel"
  acc=$(summary test_accuracy); echo "test accuracy $acc (1000 training images, 3 epochs)"
  /usr/bin/python3 -c "import sys; sys.exit(0 if float('$acc') >= 0.65 else 1)" || fail "test accuracy $acc < 0.65"
  run 0 eval --model-file "$work/run/model.safetensors"
  contains "$out" "$(/usr/bin/python3 -c "print('accuracy %.2f%%' % (100 * $acc))")" "kiln eval (the same test split)"
  ;;
digits)  # scikit-learn's digits as 8 x 8 PNGs reach >= 95% with the cnn (97.8% with seed 0)
  sk=/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz
  [[ -f $sk ]] || missing_dep python3-sklearn "no $sk"
  "$fixtures" digits "$work/dg" "$sk" || fail "kiln_image_fixtures digits"
  run 0 train --dataset "imagefolder:$work/dg" --model cnn --epochs 15 --batch-size 32 --seed 0 --device cpu --out "$work/run"
  acc=$(summary test_accuracy); echo "test accuracy $acc"
  /usr/bin/python3 -c "import sys; sys.exit(0 if float('$acc') >= 0.95 else 1)" || fail "test accuracy $acc < 0.95"
  [[ $(summary data.image_size) == "[8, 8]" ]] || fail "the image size is not 8 x 8"
  ;;
resnet)  # --model resnet is built for the folder's channels, size and classes, trains, evaluates, predicts
  "$fixtures" shapes "$work/sh" 300 24 || fail "kiln_image_fixtures shapes"
  run 0 train --dataset "imagefolder:$work/sh" --model resnet --epochs 4 --batch-size 16 --lr 0.003 --seed 0 \
    --device cpu --out "$work/run"
  contains "$err" "training resnet (" "the training line"
  [[ $(summary model) == resnet && $(summary data.channels) == 3 && $(summary data.image_size) == "[24, 24]" ]] ||
    fail "summary.json: not a resnet on 3 x 24 x 24 images"
  # 8 layers of He et al.'s CIFAR widths 16-32-64 with a 3-channel stem and 3 classes (tests/engine/test_train_resnet.cpp).
  [[ $(summary parameters) == 77587 ]] || fail "summary.json: $(summary parameters) parameters, not 77587"
  acc=$(summary test_accuracy); echo "test accuracy $acc (300 images of 3 shapes, 4 epochs; 1.0 with seed 0)"
  /usr/bin/python3 -c "import sys; sys.exit(0 if float('$acc') >= 0.9 else 1)" || fail "test accuracy $acc < 0.9 (chance: 0.33)"
  run 0 eval --model-file "$work/run/model.safetensors"
  contains "$out" "$(/usr/bin/python3 -c "print('accuracy %.2f%%' % (100 * $acc))")" "kiln eval (the same test split)"
  run 0 predict --run "$work/run" --input "$work/sh/1_square"
  contains "$out" "1_square" "kiln predict's classes"
  ;;
*)
  echo "unknown case $case"; exit 2 ;;
esac
[[ $failures == 0 ]] || exit 1
echo "ok: $case"
