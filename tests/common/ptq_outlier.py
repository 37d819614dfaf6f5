#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Edits a trained fc1 -> ReLU -> fc2 model (safetensors, F32) so that post-training int8
quantization loses accuracy while the float function stays the same: fc1's hidden unit 0 is made
dead (weights 0, bias -1, so the ReLU gives 0) and fc2 reads it with a weight 160 times its largest,
so each fc2 row's s8 scale is set by a weight that never matters and its real weights keep only a
few levels. Used by tests/cli/test_quantize.sh and tests/bench/qat_vs_finetune.sh (issue 17's
"a model whose PTQ drops more than 1 point"). Usage: ptq_outlier.py MODEL.safetensors (in place)"""
import json
import struct
import sys

import numpy as np

path = sys.argv[1]
raw = open(path, "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
head = json.loads(raw[8:8 + n])
data = bytearray(raw[8 + n:])


def tensor(name):
    if name not in head:
        sys.exit(f"{path}: no tensor {name}: needs Linear layers fc1 -> ReLU -> fc2")
    t = head[name]
    if t["dtype"] != "F32":
        sys.exit(f"{path}: {name} is {t['dtype']}, needs F32")
    a, b = t["data_offsets"]
    return np.frombuffer(data, np.float32, (b - a) // 4, a).reshape(t["shape"])


w1, b1, w2 = tensor("fc1.weight"), tensor("fc1.bias"), tensor("fc2.weight")
if w1.ndim != 2:
    sys.exit(f"{path}: fc1.weight is not a Linear weight: needs Linear layers fc1 -> ReLU -> fc2")
w1[0, :] = 0
b1[0] = -1
w2[:, 0] = 160 * np.abs(w2).max()
open(path, "wb").write(raw[:8 + n] + bytes(data))
