#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""onnxruntime's side of tests/bench/qdq_vs_ort.sh through Python's onnxruntime (the GPU machine).

Usage: qdq_ort.py MODEL.onnx OPTIMIZED.onnx THREADS IN.npy OUT.npy [IN.npy OUT.npy ...]
CPU execution provider, intra_op_num_threads=THREADS, inter_op 1, all graph optimizations; the
session writes the model as onnxruntime optimized it (optimized_model_filepath); saves the first
output of each batch. The same as qdq_ort.js (onnxruntime-node) does.
"""
import sys

import numpy as np
import onnxruntime as ort

model, optimized, threads, files = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
opts = ort.SessionOptions()
opts.intra_op_num_threads = threads
opts.inter_op_num_threads = 1
opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
opts.optimized_model_filepath = optimized
sess = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
for x, y in zip(files[0::2], files[1::2]):
    np.save(y, sess.run(None, {sess.get_inputs()[0].name: np.load(x)})[0])
