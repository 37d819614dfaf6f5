#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The built-in sequence text models of `kiln train --model` (app/cli/text_run.h): text-lstm and
# text-transformer learn a crafted two-class corpus whose classes differ by one word, the run
# evaluates and predicts with them, exports them to ONNX that `kiln run` runs with predict's
# probabilities, and a sequence model on an image dataset is one clear line.
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
  # The trained model as ONNX (sequence_lens / the key padding mask from the ids): `kiln run` of
  # the export on two padded token-id rows gives the probabilities `kiln predict` gives natively.
  run 0 export "$work/run/graph.json" --weights "$work/run/model.safetensors" --out "$work/model.onnx"
  contains "$out" "checker: ok" "export of $model"
  printf 'the film was awful and i hated it\n' >"$work/neg.txt"
  for t in new neg; do
    run 0 predict --run "$work/run" --input "$work/$t.txt" --top-k 2
    tail -n 1 <<<"$out" >"$work/$t.csv"
  done
  /usr/bin/python3 - "$work" <<'PY' || fail "token ids for the ONNX model"
import json, re, struct, sys
w = sys.argv[1]
tok = json.load(open(w + "/run/tokenizer.json"))
ids = {p: i for i, p in enumerate(tok["vocab"])}
rows = []
for t in ("new", "neg"):
    text = open(f"{w}/{t}.txt").read()  # ASCII: words and punctuation marks (tokenizer.h's word_pieces)
    words = re.findall(r"\w+|[^\w\s]", text.lower() if tok["lowercase"] else text)
    row = [ids.get(x, 1) for x in words][:12]
    rows += row + [0] * (12 - len(row))
header = "{'descr': '<i8', 'fortran_order': False, 'shape': (2, 12), }"
header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
with open(w + "/ids.npy", "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + struct.pack("<24q", *rows))
PY
  run 0 run "$work/model.onnx" --input "$work/ids.npy" --out-dir "$work/onnx_out" --device cpu
  /usr/bin/python3 - "$work" <<'PY' || fail "$model: the ONNX model's probabilities differ from kiln predict's"
import glob, math, struct, sys
w = sys.argv[1]
(path,) = glob.glob(w + "/onnx_out/*.npy")
b = open(path, "rb").read()
n = struct.unpack("<H", b[8:10])[0]
logits = struct.unpack("<4f", b[10 + n:])
for r, t in enumerate(("new", "neg")):
    row = logits[2 * r:2 * r + 2]
    e = [math.exp(v - max(row)) for v in row]
    onnx = sorted((v / sum(e) for v in e), reverse=True)
    native = [float(x) for x in open(f"{w}/{t}.csv").read().strip().split(",")[2::2]]
    assert all(abs(a - b) < 2e-5 for a, b in zip(onnx, native)) and len(native) == 2, (t, onnx, native)
PY
  if [[ $case == transformer ]]; then  # --embedding-dim and --dropout shape the built-in model
    run 0 train --dataset "text:$d" --model "$model" --embedding-dim 32 --dropout 0.25 --epochs 1 --batch-size 8 \
      --max-length 12 --threads 1 --out "$work/wide"
    /usr/bin/python3 - "$work/wide/graph.json" <<'PY' || fail "--embedding-dim 32 --dropout 0.25 in the run's graph"
import json, sys
g = json.load(open(sys.argv[1]))
nodes = {n["name"]: n for n in g["nodes"]}
attrs = lambda name: nodes[name]["attrs"]
assert attrs("embedding")["embedding_dim"] == 32, attrs("embedding")
assert attrs("embedding_dropout")["p"] == 0.25 and attrs("dropout")["p"] == 0.25
assert all(attrs(f"encoder{i}")["dropout"] == 0.25 for i in (0, 1))
assert attrs("fc")["in_features"] == 32
PY
    run 1 train --dataset "text:$d" --model "$model" --embedding-dim 30 --epochs 1 --threads 1 --out "$work/bad_dim"
    contains "$err" "embedding dimension 30 must be positive and a multiple of the 4 attention heads" "an odd width"
    one_line "$err" "its message"
    run 2 train --dataset "text:$d" --graph "$work/run/graph.json" --dropout 0.2 --epochs 1 --out "$work/bad_graph"
    contains "$err" "--embedding-dim and --dropout shape the built-in text models, not a --graph" "dropout with a graph"
  fi
  run 2 train --dataset fashion-mnist --model "$model" --epochs 1 --out "$work/bad"
  contains "$err" "--model $model trains on text:DIR|FILE only" "$model on images"
  one_line "$err" "its message"
  ;;
*)
  echo "unknown case $case"; exit 2 ;;
esac
[[ $failures == 0 ]] || exit 1
echo "ok: $case"
