#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Quantization-aware training against the float model fine-tuned for the same epochs (issue 17):
# for each seed, trains a graph with `kiln train`, then `kiln quantize --qat-epochs K` (which also
# fine-tunes the float model K epochs with the same optimizer, learning rate, batch size, seed and
# batch order, and quantizes post-training for comparison), and prints per seed and as means over
# the seeds the test accuracy of: the float model, PTQ int8, QAT int8, the float model fine-tuned K
# epochs; then QAT - fine-tuned (the issue asks |.| <= 0.1 points for the CNN templates) and the
# share of PTQ's drop that QAT recovers (at least half for a model whose PTQ drops > 1 point).
#
#   tests/bench/qat_vs_finetune.sh [-g GRAPH] [-e EPOCHS] [-q QAT_EPOCHS] [-s "1 2 3"] [-l LIMIT_BATCHES]
#                                  [-r LR] [-b BATCH] [-o] [-t THREADS] [-k path/to/kiln] [-w DIR]
#
# -g: graph JSON (default projects/templates/fashion_mnist_cnn.json; residual_cnn.json is the
# other template the issue names), -e: epochs of the initial training (default 2), -q: QAT and
# fine-tune epochs (default 1), -s: seeds (default "1 2 3"), -l: training batches per epoch of both
# the initial training and QAT (default: all), -r: QAT learning rate (default 1e-4, Adam), -b: batch
# size of QAT (default 64), -t: threads (default 2), -w: keep the work files there.
# -o: build the model to lose under PTQ before quantizing (for a graph with Linear layers fc1 ->
# ReLU -> fc2, the MLP template): fc1's unit 0 made dead and read by fc2 with a weight 160 times
# its largest, which leaves the float function as it is but each fc2 row a few s8 levels.
# Needs /usr/bin/python3 with numpy and Fashion-MNIST in /usr/share/datasets/fashion-mnist.
set -euo pipefail
here=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
cd "$here/../.."

graph=projects/templates/fashion_mnist_cnn.json epochs=2 qat_epochs=1 seeds="1 2 3" limit= lr=0.0001 batch=64
outlier= threads=2 kiln=build/bin/kiln work=
while getopts "g:e:q:s:l:r:b:ot:k:w:h" opt; do
  case $opt in
    g) graph=$OPTARG ;; e) epochs=$OPTARG ;; q) qat_epochs=$OPTARG ;; s) seeds=$OPTARG ;; l) limit=$OPTARG ;;
    r) lr=$OPTARG ;; b) batch=$OPTARG ;; o) outlier=1 ;; t) threads=$OPTARG ;; k) kiln=$OPTARG ;; w) work=$OPTARG ;;
    *) sed -n '2,24p' "$0"; exit 2 ;;
  esac
done
[[ -x $kiln ]] || { echo "no $kiln (build it: cmake --build build --target kiln)" >&2; exit 1; }
if [[ -z $work ]]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work"
limit_flag=()
[[ -n $limit ]] && limit_flag=(--limit-batches "$limit")

echo "graph $graph; initial training $epochs epoch(s); QAT and fine-tune $qat_epochs epoch(s), Adam lr $lr, batch $batch;"
echo "seeds $seeds; ${limit:+$limit training batches per epoch; }$threads threads; test accuracy on the whole test split"
reports=()
for seed in $seeds; do
  run=$work/run-$seed
  [[ -f $run/model.safetensors ]] ||
    "$kiln" train --graph "$graph" --epochs "$epochs" --seed "$seed" --threads "$threads" "${limit_flag[@]}" \
            --out "$run" >"$work/train-$seed.log" 2>&1 || { cat "$work/train-$seed.log"; exit 1; }
  if [[ -n $outlier ]]; then
    /usr/bin/python3 tests/common/ptq_outlier.py "$run/model.safetensors" || exit 1
  fi
  "$kiln" quantize --model-file "$run/model.safetensors" --qat-epochs "$qat_epochs" --lr "$lr" --batch-size "$batch" \
          --seed "$seed" --threads "$threads" --onnx-check-images 0 "${limit_flag[@]}" --out "$work/qat-$seed" \
          >"$work/quantize-$seed.log" 2>&1 || { cat "$work/quantize-$seed.log"; exit 1; }
  reports+=("$work/qat-$seed/quantize_report.json")
done

/usr/bin/python3 - "${reports[@]}" <<'PY'
import json, sys
rows = []
print(f"{'seed':>6} {'float':>8} {'PTQ':>8} {'QAT':>8} {'fine-tuned':>11} {'QAT-ft':>8} {'recovered':>10}")
def line(label, f, p, q, t):
    drop = f - p
    rec = f"{100 * (q - p) / drop:9.0f}%" if drop > 0.01 else f"{'-':>10}"
    print(f"{label:>6} {100*f:8.2f} {100*p:8.2f} {100*q:8.2f} {100*t:11.2f} {100*(q-t):+8.2f} {rec}")
for path in sys.argv[1:]:
    r = json.load(open(path))
    a = r["accuracy"]
    rows.append((a["float"], a["ptq_int8"], a["qat_int8"], a["float_finetuned"]))
    line(str(r["qat"]["seed"]), *rows[-1])
mean = [sum(c) / len(rows) for c in zip(*rows)]
line("mean", *mean)
PY
