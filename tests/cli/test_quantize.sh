#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# `kiln quantize` (post-training int8) and `kiln eval` of its model, on a briefly trained
# Fashion-MNIST MLP graph; its QDQ model.onnx, of a briefly trained CNN, against the int8 model;
# quantization-aware training (--qat-epochs) of an MLP built to lose accuracy under PTQ;
# bad input. Usage: test_quantize.sh KILN CASE, CASE one of: ptq qdq qat bad
set -uo pipefail
kiln=$1 case=$2
source "$(dirname "$0")/../common/cli_harness.sh"  # $work, fail, run, contains, one_line, missing_dep
[[ -d /usr/share/datasets/fashion-mnist ]] || missing_dep dataset-fashion-mnist "no Fashion-MNIST in /usr/share/datasets/fashion-mnist"
templates=$(dirname "$0")/../../projects/templates

[[ $case == qdq ]] || run 0 train --graph "$templates/fashion_mnist_mlp.json" --epochs 1 --batch-size 64 --limit-batches 30 --seed 5 --out "$work/run"

case $case in
ptq)
  run 0 quantize --model-file "$work/run/model.safetensors" --calibration-batches 3 --batch-size 500 \
                 --method entropy --keep-float fc3 --out "$work/int8"
  contains "$out" "accuracy float" "kiln quantize"
  contains "$out" "latency on cpu" "kiln quantize's latency line"
  contains "$err" "FuseActivation: fc1 + relu1" "kiln quantize's pass log"
  [[ -f $work/int8/model.safetensors && -f $work/int8/quantize_report.json ]] || fail "quantize wrote no model or report"
  /usr/bin/python3 - "$work/int8/quantize_report.json" <<'PY' || fail "quantize_report.json"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["method"] == "entropy" and r["calibration_batches"] == 3, r
acc = r["accuracy"]
assert 0.5 < acc["float"] <= 1 and abs(acc["float"] - acc["int8"]) < 0.02, acc
b = r["weight_payload_bytes"]
assert b["float"] == 4 * 235146, b  # the MLP's f32 parameters
assert b["ratio"] > 3.0, b           # fc3 (1290 parameters) stays f32
layers = {l["name"]: l for l in r["layers"]}
assert layers["fc1"]["int8"] and layers["fc1"]["fused_relu"] == "relu1", layers
assert not layers["fc3"]["int8"], layers
lo, hi = layers["fc2"]["input_range"]
assert lo >= 0 and hi > 0, layers  # fc2 reads relu1's output
# fc1's kernel writes u8 for fc2; fc2 feeds relu2 -> fc3, which stays float
assert r["u8_chained_layers"] == ["fc1"], r["u8_chained_layers"]
t = r["latency_ms_per_batch"]
assert t["device"] == "cpu" and t["batch"] == 500 and t["float"] > 0 and t["int8"] > 0, t
assert abs(t["speedup"] - t["float"] / t["int8"]) < 1e-9, t
PY
  acc=$(/usr/bin/python3 -c 'import json,sys; print("%.2f%%" % (100 * json.load(open(sys.argv[1]))["accuracy"]["int8"]))' \
        "$work/int8/quantize_report.json")
  run 0 eval --model-file "$work/int8/model.safetensors" --batch-size 500
  contains "$out" "int8 model (2 int8 layers)" "kiln eval of the int8 model"
  contains "$out" "accuracy $acc" "kiln eval of the int8 model (the report's accuracy)"
  ;;
qdq)
  run 0 train --graph "$templates/fashion_mnist_cnn.json" --epochs 1 --batch-size 64 --limit-batches 40 --seed 5 \
              --out "$work/cnn"
  run 0 quantize --model-file "$work/cnn/model.safetensors" --calibration-batches 2 --batch-size 100 \
                 --onnx-check-images 400 --out "$work/int8"
  contains "$out" "model.onnx (QDQ, checked by libonnx): top-1 agreement with the int8 model" "kiln quantize's ONNX line"
  [[ -f $work/int8/model.onnx ]] || fail "quantize wrote no model.onnx"
  /usr/bin/python3 - "$work/int8/quantize_report.json" <<'PY' || fail "quantize_report.json's onnx entry"
import json, sys
r = json.load(open(sys.argv[1]))
o = r["onnx"]
assert o["form"] == "QDQ" and o["images"] == 400, o
assert o["top1_agreement_with_int8"] >= 0.995, o  # issue 17: >= 99.5% of top-1 predictions
assert o["accuracy"] > 0.5, o                     # a trained model, not a constant one
assert r["u8_chained_layers"], r["u8_chained_layers"]
PY
  # kiln run reads the QDQ file like any ONNX model, its layers on the int8 kernels: logits [8, 10].
  /usr/bin/python3 - "$work/x.npy" <<'PY' || fail "writing test images"
import gzip, sys, numpy as np
with gzip.open("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz") as f:
    x = np.frombuffer(f.read(), np.uint8, offset=16)[:8 * 784].reshape(8, 1, 28, 28)
np.save(sys.argv[1], (x / 255.0).astype(np.float32))
PY
  run 0 run "$work/int8/model.onnx" --input "$work/x.npy" --out-dir "$work/y"
  contains "$out" "-> QConv (int8 kernels" "kiln run of model.onnx: its Conv layers on the int8 kernels"
  contains "$out" "-> QGemm (int8 kernels)" "kiln run of model.onnx: its Gemm layers on the int8 kernels"
  [[ $(ls "$work/y"/*.npy | wc -l) == 1 ]] || fail "kiln run of model.onnx wrote no output"
  /usr/bin/python3 -c 'import numpy as np, glob, sys; y = np.load(glob.glob(sys.argv[1] + "/*.npy")[0]); assert y.shape == (8, 10), y.shape' \
      "$work/y" || fail "kiln run of model.onnx: output shape"
  ;;
qat)
  # Built to lose under PTQ, with the float function unchanged (tests/common/ptq_outlier.py says how).
  /usr/bin/python3 "$(dirname "$0")/../common/ptq_outlier.py" "$work/run/model.safetensors" || fail "editing model.safetensors"
  run 0 quantize --model-file "$work/run/model.safetensors" --calibration-batches 2 --batch-size 64 \
                 --qat-epochs 1 --limit-batches 10 --lr 0.001 --seed 3 --onnx-check-images 200 --out "$work/qat"
  contains "$out" "quantization-aware training, 1 epoch(s): int8" "kiln quantize --qat-epochs's summary"
  [[ -f $work/qat/qat_metrics.csv && -f $work/qat/finetune_metrics.csv ]] || fail "no qat_metrics.csv / finetune_metrics.csv"
  /usr/bin/python3 - "$work/qat/quantize_report.json" <<'PY' || fail "quantize_report.json of QAT"
import json, sys
r = json.load(open(sys.argv[1]))
acc, q = r["accuracy"], r["qat"]
print(acc)
assert r["mode"] == "qat" and q["epochs"] == 1 and q["steps"] == 10 and q["lr"] == 0.001 and q["seed"] == 3, q
assert acc["int8"] == acc["qat_int8"], acc
assert acc["ptq_int8"] < acc["float"] - 0.03, acc  # the model loses under PTQ, as built
# QAT gets back at least half of what PTQ lost (measured: float 71.1%, PTQ 63.1%, QAT 71.2%)
assert acc["qat_int8"] - acc["ptq_int8"] >= 0.5 * (acc["float"] - acc["ptq_int8"]), acc
assert 0.5 < acc["float_finetuned"] <= 1, acc
assert r["onnx"]["top1_agreement_with_int8"] >= 0.99, r["onnx"]
layers = {l["name"]: l for l in r["layers"]}
assert layers["fc1"]["fused_relu"] == "relu1" and layers["fc2"]["int8"], layers
PY
  acc=$(/usr/bin/python3 -c 'import json,sys; print("%.2f%%" % (100 * json.load(open(sys.argv[1]))["accuracy"]["int8"]))' \
        "$work/qat/quantize_report.json")
  run 0 eval --model-file "$work/qat/model.safetensors" --batch-size 500
  contains "$out" "int8 model (3 int8 layers)" "kiln eval of the QAT int8 model"
  contains "$out" "accuracy $acc" "kiln eval of the QAT int8 model (the report's accuracy)"
  run 2 quantize --model-file "$work/run/model.safetensors" --qat-epochs -1 --out "$work/q"
  contains "$err" "qat-epochs" "quantize --qat-epochs -1"
  run 1 quantize --model-file "$work/run/model.safetensors" --qat-epochs 1 --keep-float relu1 --out "$work/q"
  contains "$err" "keep-float: 'relu1' is no Conv2d or Linear layer" "quantize --qat-epochs --keep-float relu1"
  ;;
bad)
  run 2 quantize --model-file "$work/run/model.safetensors"
  contains "$err" "--out DIR is required" "quantize without --out"
  run 2 quantize --model-file "$work/run/model.safetensors" --method kl --out "$work/q"
  contains "$err" "kl" "quantize --method kl"
  run 1 quantize --model-file "$work/run/model.safetensors" --keep-float relu1 --out "$work/q"
  contains "$err" "keep-float: 'relu1' is no Conv2d or Linear layer" "quantize --keep-float relu1"
  run 1 quantize --model-file "$work/run/model.safetensors" --calibration-batches 0 --out "$work/q"
  contains "$err" "no calibration batches were observed" "quantize with no calibration batch"
  run 0 quantize --model-file "$work/run/model.safetensors" --calibration-batches 1 --batch-size 1000 --out "$work/q"
  run 1 quantize --model-file "$work/q/model.safetensors" --out "$work/q2"
  contains "$err" "is already an int8 model" "quantize of an int8 model"
  run 0 train --model mlp --epochs 1 --limit-batches 1 --out "$work/ref"
  run 1 quantize --model-file "$work/ref/model.safetensors" --out "$work/q3"
  contains "$err" "give --graph FILE" "quantize of a reference model without --graph"
  run 0 quantize --model-file "$work/ref/model.safetensors" --graph "$templates/fashion_mnist_mlp.json" \
                 --calibration-batches 1 --batch-size 1000 --out "$work/q4"
  contains "$out" "accuracy float" "quantize of a reference model with --graph"
  run 1 quantize --model-file "$work/ref/model.safetensors" --graph "$templates/residual_cnn.json" --out "$work/q5"
  contains "$err" "state tensors" "quantize with the graph of another network"
  # Fashion-MNIST runs only (calibration and evaluation use it): a table's run and one of some
  # classes are refused with what they were trained on, before anything is written.
  /usr/bin/python3 -c "print('a,b,y'); [print('%d,%d,%s' % (i % 7, i % 3, 'yn'[i % 2])) for i in range(40)]" >"$work/t.csv"
  run 0 train --dataset "csv:$work/t.csv" --epochs 1 --device cpu --out "$work/table"
  run 1 quantize --model-file "$work/table/model.safetensors" --out "$work/q6"
  contains "$err" "table/model.safetensors was trained on a table (its run's table.json); kiln quantize calibrates and evaluates on all of Fashion-MNIST only" "quantize of a table run"
  one_line "$err" "its error"; [[ ! -e $work/q6 ]] || fail "a refused quantize made its --out folder"
  run 0 train --model mlp --classes 0-4 --epochs 1 --limit-batches 1 --out "$work/five"
  run 1 quantize --model-file "$work/five/model.safetensors" --graph "$templates/fashion_mnist_mlp.json" --out "$work/q7"
  contains "$err" "was trained on some of Fashion-MNIST's classes (kiln train --classes 0,1,2,3,4)" "quantize of a --classes run"
  ;;
*) fail "unknown case $case" ;;
esac
exit $((failures > 0))
