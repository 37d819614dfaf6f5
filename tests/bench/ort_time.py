#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""onnxruntime's side of tests/bench/onnx_vs_ort.sh through Python's onnxruntime (the GPU machine).

Usage: ort_time.py MODEL.onnx INPUT.npy THREADS RUNS OUT.npy
CPU execution provider, intra_op_num_threads=THREADS, inter_op 1, all graph optimizations (the
default). Runs once, then times RUNS more; prints "median_ms min_ms" and saves the first output.
The same as ort_time.js (onnxruntime-node) does.
"""
import sys
import time

import numpy as np
import onnxruntime as ort

model, inp, threads, runs, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
opts = ort.SessionOptions()
opts.intra_op_num_threads = threads
opts.inter_op_num_threads = 1
sess = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
feed = {sess.get_inputs()[0].name: np.load(inp)}
y = sess.run(None, feed)[0]
ms = []
for _ in range(runs):
    t0 = time.perf_counter()
    sess.run(None, feed)
    ms.append((time.perf_counter() - t0) * 1e3)
ms.sort()
np.save(out, y)
print(f"{ms[len(ms) // 2]:.3f} {ms[0]:.3f}")
