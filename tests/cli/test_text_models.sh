#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The built-in sequence text models of `kiln train --model` (app/cli/text_run.h): text-lstm and
# text-transformer learn a crafted two-class corpus whose classes differ by one word, the run
# evaluates and predicts with them, and a sequence model on an image dataset is one clear line.
# Registered with ctest (label engine) by tests/CMakeLists.txt, one test per case:
#
#   tests/cli/test_text_models.sh path/to/kiln CASE
#
# Cases: lstm transformer
set -uo pipefail
kiln=$1 case=$2
source "$(dirname "$0")/../common/cli_harness.sh"  # $work, fail, run, contains, one_line

d=$work/reviews
mkdir -p "$d/pos" "$d/neg"
for i in $(seq 1 30); do
  printf 'the film was good and I liked it %s\n' "$i" >"$d/pos/p$i.txt"
  printf 'the film was awful and I hated it %s\n' "$i" >"$d/neg/n$i.txt"
done

case $case in
lstm | transformer)
  model=text-$case
  run 0 train --dataset "text:$d" --model "$model" --epochs 4 --batch-size 8 --lr 0.01 --max-length 12 \
    --threads 1 --out "$work/run"
  contains "$out" "test accuracy 100.00%" "$model on the crafted reviews"
  grep -q "\"$( [[ $case == lstm ]] && echo LSTM || echo TransformerEncoderLayer)\"" "$work/run/graph.json" ||
    fail "the run's graph.json holds the $model layers"
  run 0 eval --model-file "$work/run/model.safetensors"
  contains "$out" "accuracy 100.00%" "eval of $model"
  printf 'what a good film, I liked it\n' >"$work/new.txt"
  run 0 predict --run "$work/run" --input "$work/new.txt"
  contains "$out" "$work/new.txt,pos," "predict with $model"
  run 2 train --dataset fashion-mnist --model "$model" --epochs 1 --out "$work/bad"
  contains "$err" "--model $model trains on text:DIR|FILE only" "$model on images"
  one_line "$err" "its message"
  ;;
*)
  echo "unknown case $case"; exit 2 ;;
esac
[[ $failures == 0 ]] || exit 1
echo "ok: $case"
