#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Kiln's QDQ ONNX export against onnxruntime (issue 17): trains the Fashion-MNIST CNN template
# with kiln, quantizes it (`kiln quantize`: int8 model.safetensors and its QDQ model.onnx), runs
# model.onnx on the test set in onnxruntime and in Kiln (`kiln run`: Kiln's ONNX executor, its
# quantized Conv / Gemm on the int8 kernels, rewrite_qdq.cpp; its FuseQdq lines are printed) and
# prints the top-1 agreement of the two and each side's accuracy (with the int8 and float model's
# accuracy from quantize_report.json), then counts the nodes of onnxruntime's optimized model
# (the optimizedModelFilePath session option): QLinearConv / QLinearMatMul / ConvInteger /
# MatMulInteger / QGemm ... say whether onnxruntime fused the Conv / Gemm of the QDQ model into
# int8 kernels; a float Conv or Gemm left there ran in float.
#
#   tests/bench/qdq_vs_ort.sh [-n IMAGES] [-e EPOCHS] [-l LIMIT_BATCHES] [-t THREADS] [-k path/to/kiln] [-w DIR]
#
# -n: test images (default 10000, all), -e: training epochs (default 1), -l: training batches per
# epoch (default: all), -t: threads of both sides (default 2), -w: keep the work files there.
# onnxruntime: Python's (the first of PYTHON, default "python3 /usr/bin/python3", that imports it: the
# GPU machine) when there, else
# the npm package onnxruntime-node from KILN_NPM_DIR (default ~/.local/share/kiln/npm;
# installer/quickstart.sh bench installs it). Needs /usr/bin/python3 with numpy and Fashion-MNIST
# in /usr/share/datasets/fashion-mnist.
set -euo pipefail
here=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
cd "$here/../.."

images=10000 epochs=1 limit= threads=2 kiln=build/bin/kiln work=
while getopts "n:e:l:t:k:w:h" opt; do
  case $opt in
    n) images=$OPTARG ;; e) epochs=$OPTARG ;; l) limit=$OPTARG ;; t) threads=$OPTARG ;; k) kiln=$OPTARG ;;
    w) work=$OPTARG ;;
    *) sed -n '3,22s/^# \{0,1\}//p' "$0"; exit 2 ;;
  esac
done
[[ -x $kiln ]] || { echo "kiln: $kiln is missing; build it first (cmake --build build --target kiln)"; exit 1; }
source "$here/ort_select.sh"
select_ort "$here/qdq_ort.py" "$here/qdq_ort.js" ${PYTHON:-python3 /usr/bin/python3}
if [[ -z $work ]]; then work=$(mktemp -d); trap 'rm -rf "$work"' EXIT; fi
mkdir -p "$work"
export OMP_NUM_THREADS=$threads

"$kiln" train --graph projects/templates/fashion_mnist_cnn.json --epochs "$epochs" ${limit:+--limit-batches "$limit"} \
        --seed 1 --out "$work/cnn" >"$work/train.log" 2>&1 || { tail -n 5 "$work/train.log"; exit 1; }
"$kiln" quantize --model-file "$work/cnn/model.safetensors" --calibration-batches 10 --onnx-check-images 0 \
        --threads "$threads" --out "$work/int8" >"$work/quantize.log" 2>&1 || { tail -n 5 "$work/quantize.log"; exit 1; }

# The test images as the dataset gives them (FashionMNIST: (v / 255 - 0.2860) / 0.3530), in batches of 500.
/usr/bin/python3 - "$work" "$images" <<'PY'
import gzip, sys, numpy as np
work, n = sys.argv[1], int(sys.argv[2])
root = "/usr/share/datasets/fashion-mnist/"
with gzip.open(root + "t10k-images-idx3-ubyte.gz") as f:
    x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 1, 28, 28)[:n]
with gzip.open(root + "t10k-labels-idx1-ubyte.gz") as f:
    np.save(f"{work}/labels.npy", np.frombuffer(f.read(), np.uint8, offset=8)[:n])
x = ((x / 255.0 - 0.2860) / 0.3530).astype(np.float32)
for i in range(0, len(x), 500):
    np.save(f"{work}/x{i // 500:03d}.npy", x[i:i + 500])
PY
ort_args=()
for x in "$work"/x[0-9]*.npy; do
  b=$(basename "$x" .npy)
  "$kiln" run "$work/int8/model.onnx" --input "$x" --device cpu --out-dir "$work/kiln-$b" >"$work/run.log"
  ort_args+=("$x" "$work/ort-$b.npy")
done
"${ort[@]}" "$work/int8/model.onnx" "$work/ort_optimized.onnx" "$threads" "${ort_args[@]}"

echo "Fashion-MNIST CNN ($epochs epoch(s)${limit:+, $limit batches each}), QDQ model.onnx from kiln quantize, $threads threads,"
echo "$ort_name (CPU provider, all optimizations)"
grep '^FuseQdq' "$work/run.log" | sed 's/^/kiln run: /' || echo "kiln run: no layer on the int8 kernels"
/usr/bin/python3 - "$work" <<'PY'
import glob, json, os, sys
import numpy as np
work = sys.argv[1]
labels = np.load(f"{work}/labels.npy").astype(np.int64)
kiln = np.concatenate([np.load(glob.glob(f"{d}/*.npy")[0]) for d in sorted(glob.glob(f"{work}/kiln-x*"))])
ort = np.concatenate([np.load(f) for f in sorted(glob.glob(f"{work}/ort-x*.npy"))])
pk, po = kiln.argmax(1), ort.argmax(1)
r = json.load(open(f"{work}/int8/quantize_report.json"))
n = len(labels)
print(f"test images                                {n}")
print(f"top-1 agreement onnxruntime vs Kiln           {100 * (pk == po).mean():.2f}%  ({int((pk != po).sum())} differ)")
print(f"accuracy, onnxruntime on model.onnx           {100 * (po == labels).mean():.2f}%")
print(f"accuracy, kiln run of model.onnx              {100 * (pk == labels).mean():.2f}%")
print(f"accuracy, Kiln int8 model.safetensors (10000) {100 * r['accuracy']['int8']:.2f}%   float {100 * r['accuracy']['float']:.2f}%")
print(f"max |logit difference|                        {np.abs(kiln - ort).max():.4g}")

# NodeProto op types of a serialized ModelProto (protobuf wire format: ModelProto.graph = 7,
# GraphProto.node = 1, NodeProto.op_type = 4, NodeProto.domain = 7), without the onnx package.
def fields(buf):
    i = 0
    while i < len(buf):
        key, i = varint(buf, i)
        wire = key & 7
        if wire == 0:
            v, i = varint(buf, i)
        elif wire == 1:
            v, i = buf[i:i + 8], i + 8
        elif wire == 5:
            v, i = buf[i:i + 4], i + 4
        elif wire == 2:
            n, i = varint(buf, i)
            v, i = buf[i:i + n], i + n
        else:
            raise ValueError(f"wire type {wire}")
        yield key >> 3, v
def varint(buf, i):
    v = s = 0
    while True:
        b = buf[i]; i += 1
        v |= (b & 0x7F) << s; s += 7
        if b < 0x80: return v, i
def op_types(path):
    counts = {}
    for f, graph in fields(open(path, "rb").read()):
        if f != 7: continue
        for g, node in fields(graph):
            if g != 1: continue
            d = {k: v for k, v in fields(node) if k in (4, 7)}
            t = (d.get(7, b"").decode() + "." if d.get(7) else "") + d.get(4, b"").decode()
            counts[t] = counts.get(t, 0) + 1
    return counts
before, after = op_types(f"{work}/int8/model.onnx"), op_types(f"{work}/ort_optimized.onnx")
fmt = lambda c: ", ".join(f"{k} {v}" for k, v in sorted(c.items()))
print(f"QDQ model.onnx nodes:        {fmt(before)}")
print(f"onnxruntime optimized nodes: {fmt(after)}")
int8 = {k: v for k, v in after.items() if any(s in k for s in ("QLinear", "Integer", "QGemm", "QAttention"))}
left = {k: v for k, v in after.items() if k.split(".")[-1] in ("Conv", "Gemm", "MatMul", "FusedConv", "FusedGemm", "FusedMatMul")}
print(f"fused into int8 kernels:     {fmt(int8) or 'none'}; left in float: {fmt(left) or 'none'}")
PY
