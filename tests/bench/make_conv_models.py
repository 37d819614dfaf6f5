#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
# Convolution-heavy ONNX models built with numpy alone (no PyTorch, no onnx package), for timing
# the executor's convolution passes (engine/onnx/rewrite_conv.cpp) where torchvision's exports
# (export_bench_models.py) cannot be made: 1x3x224x224 input, random seeded weights.
#   resnet18_bn     torchvision resnet18's graph with its BatchNormalization nodes unfolded (as
#                   torch.onnx.export(training=TrainingMode.PRESERVE) and other exporters write it)
#   resnet18        the same with BN folded into the convolutions (PyTorch's eval export)
#   mobilenet_v2    torchvision mobilenet_v2's graph (ReLU6 as Clip(0, 6), residual Adds), BN folded
# Usage: make_conv_models.py OUT_DIR [model ...]   -> OUT_DIR/<model>/model.onnx and input.npy
import os
import struct
import sys

import numpy as np

# ---- a minimal protobuf writer for onnx.proto's messages (this machine has numpy but no onnx or
# protobuf Python package); field numbers from /usr/include/onnx/onnx.proto ----
FLOAT = 1


def varint(v):
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def field_varint(num, v):
    return varint(num << 3) + varint(v)


def field_bytes(num, b):
    if isinstance(b, str):
        b = b.encode()
    return varint(num << 3 | 2) + varint(len(b)) + b


def field_float(num, f):
    return varint(num << 3 | 5) + struct.pack("<f", f)


def attribute(name, v):  # AttributeProto: name 1, f 2, i 3, ints 8, type 20 (FLOAT 1, INT 2, INTS 7)
    if isinstance(v, float):
        return field_bytes(1, name) + field_float(2, v) + field_varint(20, 1)
    if isinstance(v, int):
        return field_bytes(1, name) + field_varint(3, v) + field_varint(20, 2)
    return field_bytes(1, name) + b"".join(field_varint(8, i) for i in v) + field_varint(20, 7)


def make_node(op, inputs, outputs, name, **attrs):  # NodeProto: input 1, output 2, name 3, op_type 4, attribute 5
    b = b"".join(field_bytes(1, i) for i in inputs) + b"".join(field_bytes(2, o) for o in outputs)
    b += field_bytes(3, name) + field_bytes(4, op)
    return b + b"".join(field_bytes(5, attribute(k, v)) for k, v in sorted(attrs.items()))


def tensor(name, arr):  # TensorProto: dims 1, data_type 2, name 8, raw_data 9
    arr = np.ascontiguousarray(arr, dtype="<f4")
    return b"".join(field_varint(1, d) for d in arr.shape) + field_varint(2, FLOAT) + field_bytes(8, name) + \
        field_bytes(9, arr.tobytes())


def value_info(name, dims):  # ValueInfoProto name 1, type 2 -> TypeProto.tensor_type 1 -> elem_type 1, shape 2
    shape = b"".join(field_bytes(1, field_varint(1, d)) for d in dims)
    return field_bytes(1, name) + field_bytes(2, field_bytes(1, field_varint(1, FLOAT) + field_bytes(2, shape)))


class Builder:
    def __init__(self, fold_bn, seed=0):
        self.nodes, self.inits, self.fold_bn, self.n = [], [], fold_bn, 0
        self.rng = np.random.default_rng(seed)

    def name(self, base):
        self.n += 1
        return f"{base}_{self.n}"

    def init(self, base, arr):
        n = self.name(base)
        self.inits.append(tensor(n, arr))
        return n

    def conv_bn(self, x, cin, cout, k, stride=1, group=1, act="relu"):
        fan = cin // group * k * k
        w = self.init("w", self.rng.normal(0, np.sqrt(2.0 / fan), (cout, cin // group, k, k)))
        y = self.name("conv")
        inputs = [x, w]
        if self.fold_bn:
            inputs.append(self.init("b", self.rng.normal(0, 0.1, cout)))
        self.nodes.append(make_node("Conv", inputs, [y], name=y, kernel_shape=[k, k], strides=[stride, stride],
                                           pads=[k // 2] * 4, group=group))
        if not self.fold_bn:
            params = [self.init("scale", self.rng.uniform(0.5, 1.5, cout)), self.init("B", self.rng.normal(0, 0.1, cout)),
                      self.init("mean", self.rng.normal(0, 0.1, cout)), self.init("var", self.rng.uniform(0.5, 2, cout))]
            b = self.name("bn")
            self.nodes.append(make_node("BatchNormalization", [y] + params, [b], name=b, epsilon=1e-5))
            y = b
        return self.act(y, act)

    def act(self, x, act):
        if act is None:
            return x
        y = self.name(act)
        if act == "relu":
            self.nodes.append(make_node("Relu", [x], [y], name=y))
        else:  # relu6
            lo, hi = self.init("min", np.array(0.0)), self.init("max", np.array(6.0))
            self.nodes.append(make_node("Clip", [x, lo, hi], [y], name=y))
        return y

    def add(self, a, b, act=None):
        y = self.name("add")
        self.nodes.append(make_node("Add", [a, b], [y], name=y))
        return self.act(y, act)

    def head(self, x, c):
        p, f = self.name("pool"), self.name("flat")
        self.nodes.append(make_node("GlobalAveragePool", [x], [p], name=p))
        self.nodes.append(make_node("Flatten", [p], [f], name=f, axis=1))
        w = self.init("fc_w", self.rng.normal(0, 0.01, (1000, c)))
        b = self.init("fc_b", np.zeros(1000))
        self.nodes.append(make_node("Gemm", [f, w, b], ["logits"], name="fc", transB=1))

    def model(self):  # ModelProto: ir_version 1, producer_name 2, graph 7, opset_import 8
        g = b"".join(field_bytes(1, n) for n in self.nodes) + field_bytes(2, "g")
        g += b"".join(field_bytes(5, t) for t in self.inits)
        g += field_bytes(11, value_info("input", [1, 3, 224, 224])) + field_bytes(12, value_info("logits", [1, 1000]))
        return field_varint(1, 8) + field_bytes(2, "make_conv_models.py") + field_bytes(7, g) + \
            field_bytes(8, field_bytes(1, "") + field_varint(2, 17))


def resnet18(fold_bn):
    b = Builder(fold_bn)
    x = b.conv_bn("input", 3, 64, 7, stride=2)
    p = b.name("maxpool")
    b.nodes.append(make_node("MaxPool", [x], [p], name=p, kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4))
    x, c = p, 64
    for cout, stride in [(64, 1), (128, 2), (256, 2), (512, 2)]:
        for i in range(2):
            s = stride if i == 0 else 1
            y = b.conv_bn(x, c, cout, 3, stride=s)
            y = b.conv_bn(y, cout, cout, 3, act=None)
            short = b.conv_bn(x, c, cout, 1, stride=s, act=None) if (s != 1 or c != cout) else x
            x, c = b.add(y, short, "relu"), cout
    b.head(x, c)
    return b.model()


def mobilenet_v2():
    b = Builder(True)
    x, c = b.conv_bn("input", 3, 32, 3, stride=2, act="relu6"), 32
    for t, cout, n, s in [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                          (6, 320, 1, 1)]:
        for i in range(n):
            stride = s if i == 0 else 1
            hidden = c * t
            y = b.conv_bn(x, c, hidden, 1, act="relu6") if t != 1 else x
            y = b.conv_bn(y, hidden, hidden, 3, stride=stride, group=hidden, act="relu6")
            y = b.conv_bn(y, hidden, cout, 1, act=None)
            x = b.add(y, x) if stride == 1 and c == cout else y
            c = cout
    x = b.conv_bn(x, c, 1280, 1, act="relu6")
    b.head(x, 1280)
    return b.model()


def main():
    out, names = sys.argv[1], sys.argv[2:] or ["resnet18_bn", "resnet18", "mobilenet_v2"]
    makers = {"resnet18_bn": lambda: resnet18(False), "resnet18": lambda: resnet18(True), "mobilenet_v2": mobilenet_v2}
    for n in names:
        d = os.path.join(out, n)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "model.onnx"), "wb") as f:
            f.write(makers[n]())
        np.save(os.path.join(d, "input.npy"), np.random.default_rng(1).normal(0, 1, (1, 3, 224, 224)).astype(np.float32))
        print("made", n)


if __name__ == "__main__":
    main()
