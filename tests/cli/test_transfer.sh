#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Transfer learning with `kiln train` (app/cli/train_transfer.h): a CNN trained on Fashion-MNIST
# classes 0-4, exported to ONNX, imported with a new 5-class head and everything else frozen,
# fine-tuned on a few images of classes 5-9 — the frozen weights must not move and the head
# must — and the bad inputs of the transfer flags. Registered with ctest (label engine) by
# tests/CMakeLists.txt, one test per case:
#
#   tests/cli/test_transfer.sh path/to/kiln CASE
#
# Cases: pipeline bad_input
set -uo pipefail
kiln=$1 case=$2
source "$(dirname "$0")/../common/cli_harness.sh"  # $work, fail, run, contains, one_line, missing_dep
templates=$(cd "$(dirname "$0")/../../projects/templates" && pwd)
[[ -d /usr/share/datasets/fashion-mnist ]] ||
  missing_dep dataset-fashion-mnist "no Fashion-MNIST in /usr/share/datasets/fashion-mnist"

# compare A.safetensors B.safetensors SAME_KEYS DIFFERENT_KEYS: the tensors named in SAME_KEYS
# (space-separated) hold the same bytes in both files, those in DIFFERENT_KEYS differ.
compare() {
  /usr/bin/python3 - "$@" <<'PY' || fail "weights of $1 and $2: see above"
import json, struct, sys
def load(path):
    data = open(path, 'rb').read()
    n = struct.unpack('<Q', data[:8])[0]
    header = json.loads(data[8:8 + n])
    return {k: data[8 + n + v['data_offsets'][0]:8 + n + v['data_offsets'][1]]
            for k, v in header.items() if k != '__metadata__'}
a, b = load(sys.argv[1]), load(sys.argv[2])
bad = [k for k in sys.argv[3].split() if a[k] != b[k]] + [k for k in sys.argv[4].split() if a[k] == b[k]]
if bad: print('unexpected:', bad); sys.exit(1)
PY
}

case $case in
pipeline)
  fast=(--epochs 1 --batch-size 64 --device cpu --seed 0)
  # 1. the base network: the CNN template with a 5-class head, on 512 images of classes 0-4
  run 0 train --graph "$templates/fashion_mnist_cnn.json" --replace-head 5 --classes 0-4 --train-subset 512 \
    "${fast[@]}" --limit-batches 8 --out "$work/base"
  grep -q '"classes": \[' "$work/base/summary.json" || fail "summary.json lacks the classes"
  # 2. to ONNX (needs Kiln built with ONNX support)
  "$kiln" export --help >/dev/null 2>&1 || { echo "kiln built without ONNX: skipped"; exit 77; }
  run 0 export "$work/base/graph.json" --weights "$work/base/model.safetensors" --out "$work/base.onnx"
  # 3. imported, new head, all but the head frozen, on 256 images of classes 5-9; --lr 0 keeps the
  # head at its (seeded) initialization: the trained head must differ from it.
  # (--limit-batches 4 of 64 keeps the same 256 training images and tests on 256 of them only)
  for lr in 0 0.003; do
    run 0 train --onnx "$work/base.onnx" --replace-head 5 --freeze-all-but-head --classes 5-9 --train-subset 256 \
      "${fast[@]}" --lr "$lr" --out "$work/ft_$lr" $([[ $lr == 0 ]] && echo --limit-batches 4)
    contains "$err" "new head: 'fc2' (Linear) with 5 outputs" "fine-tuning stderr"
    contains "$err" "frozen: 9 nodes (conv1, relu1, pool1, conv2, relu2, pool2, flatten, fc1, relu3)" "fine-tuning stderr"
    contains "$err" "256 samples" "fine-tuning stderr"
  done
  contains "$err" "evaluating on 5000 test samples" "fine-tuning stderr"  # the test split of 5-9 is whole
  frozen="conv1.weight conv1.bias conv2.weight conv2.bias fc1.weight fc1.bias"
  compare "$work/base/model.safetensors" "$work/ft_0.003/model.safetensors" "$frozen" "fc2.weight fc2.bias"
  compare "$work/ft_0/model.safetensors" "$work/ft_0.003/model.safetensors" "$frozen" "fc2.weight fc2.bias"
  grep -q '"trainable": false' "$work/ft_0.003/graph.json" || fail "the run's graph.json lacks the frozen nodes"
  grep -q '"trainable_parameters": 645' "$work/ft_0.003/summary.json" || fail "not only the head (128*5+5) trained"
  # 4. kiln eval tests on the same classes, with their names
  run 0 eval --model-file "$work/ft_0.003/model.safetensors"
  contains "$out" "5000 test images" "kiln eval of classes 5-9"
  contains "$out" "Ankle boot" "kiln eval of classes 5-9"
  [[ $out != *"T-shirt"* ]] || fail "kiln eval shows classes outside 5-9: $out"
  ;;
bad_input)
  cnn=$templates/fashion_mnist_cnn.json
  # a graph whose end is a convolution, not a Linear layer
  /usr/bin/python3 - "$cnn" "$work/conv_end.json" <<'PY'
import json, sys
g = json.load(open(sys.argv[1]))
g['nodes'] = [n for n in g['nodes'] if n['name'] in ('image', 'conv1', 'flatten', 'logits')]
ids = {n['name']: n['id'] for n in g['nodes']}
g['nodes'][[n['name'] for n in g['nodes']].index('conv1')]['attrs'].update(out_channels=10, kernel_size=[28, 28])
edge = lambda a, b: {'from': {'node': ids[a], 'port': 0}, 'to': {'node': ids[b], 'port': 0}}
g['edges'] = [edge('image', 'conv1'), edge('conv1', 'flatten'), edge('flatten', 'logits')]
json.dump(g, open(sys.argv[2], 'w'))
PY
  run 1 train --graph "$work/conv_end.json" --replace-head 5 --classes 0-4 --limit-batches 1
  contains "$err" "conv_end.json: the graph has no Linear layer at its end" "head replacement without a Linear"
  contains "$err" "'conv1' (Conv2d)" "head replacement without a Linear"
  one_line "$err" "head replacement without a Linear"
  run 1 train --graph "$work/conv_end.json" --freeze-all-but-head --limit-batches 1
  contains "$err" "no Linear layer at its end" "--freeze-all-but-head without a Linear"
  run 1 train --graph "$cnn" --freeze-until conv9 --limit-batches 1
  contains "$err" "cannot freeze until 'conv9': the graph has no node of that name" "--freeze-until of an unknown node"
  contains "$err" "conv1, relu1" "--freeze-until of an unknown node"
  for spec in 3-12 10 -1 4-2 1,1 a 0-; do
    run 2 train --graph "$cnn" --replace-head 5 --classes "$spec" --limit-batches 1
    contains "$err" "--classes '$spec'" "--classes $spec"
    one_line "$err" "--classes $spec"
  done
  run 2 train --classes 3-12 --limit-batches 1
  contains "$err" "class 12 is out of range; the data set has classes 0 to 9" "--classes 3-12"
  run 2 train --classes "" --limit-batches 1
  contains "$err" "--classes needs classes" "empty --classes"
  # a reference model gets k outputs; kiln eval rebuilds it so
  run 0 train --model mlp --classes 2,7 --epochs 1 --limit-batches 2 --device cpu --out "$work/mlp"
  run 0 eval --model-file "$work/mlp/model.safetensors"
  contains "$out" "2000 test images" "eval of an mlp on classes 2,7"  # the whole test split of the 2 classes
  contains "$out" "Sneaker" "eval of an mlp on classes 2,7"
  run 1 train --graph "$cnn" --classes 0-4 --limit-batches 1
  contains "$err" "--replace-head 5" "a 10-class graph on 5 classes"
  run 1 train --graph "$cnn" --replace-head 2 --classes 0,1 --train-subset 20000 --limit-batches 1
  contains "$err" "--train-subset 20000 is more than the 12000 training samples of --classes 0,1" "--train-subset"
  run 2 train --replace-head 5
  contains "$err" "--replace-head needs --graph or --onnx" "--replace-head with a reference model"
  run 2 train --graph "$cnn" --freeze-until fc1 --freeze-all-but-head
  contains "$err" "exclusive" "both freeze flags"
  run 2 train --onnx x.onnx --graph "$cnn"
  contains "$err" "exclusive" "--onnx with --graph"
  ;;
*)
  echo "unknown case $case"; exit 2
  ;;
esac
((failures == 0))
