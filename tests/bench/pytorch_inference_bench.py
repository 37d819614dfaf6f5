#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""PyTorch side of tests/bench/cuda_inference_vs_pytorch.sh: batch-1 inference latency of an
ONNX test model's PyTorch original (made by tests/onnx/make_torch_models.py), on the GPU.

  pytorch_inference_bench.py MODEL_DIR NAME [--runs 300] [--tf32]

NAME: resnet18 | mobilenet_v2 | transformer, built as make_torch_models.py builds them (random
weights: latency does not depend on them), on MODEL_DIR/NAME/input.npy. Times each run with the input copied from
the host and the output copied back (as `kiln run --repeat` does), eager and with the forward
captured once by torch.cuda.graph and replayed. TF32 off unless --tf32 (Kiln's f32 is not TF32).
Prints {"eager_ms", "graph_ms"} (medians) as JSON.
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "onnx"))
import make_torch_models  # noqa: E402


def median_ms(fn, runs):
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    return times[len(times) // 2]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model_dir")
    p.add_argument("name")
    p.add_argument("--runs", type=int, default=300)
    p.add_argument("--tf32", action="store_true")
    a = p.parse_args()
    torch.backends.cudnn.allow_tf32 = a.tf32
    torch.backends.cuda.matmul.allow_tf32 = a.tf32
    model, _ = make_torch_models.transformer() if a.name == "transformer" else make_torch_models.vision(a.name)
    model = model.eval().cuda()
    host = torch.from_numpy(np.load(os.path.join(a.model_dir, a.name, "input.npy")))
    with torch.no_grad():
        eager = median_ms(lambda: model(host.cuda()).cpu(), a.runs)
        static = host.cuda()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                model(static)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = model(static)

        def replay():
            static.copy_(host)
            graph.replay()
            return out.cpu()

        graphed = median_ms(replay, a.runs)
    print(json.dumps({"model": a.name, "eager_ms": round(eager, 4), "graph_ms": round(graphed, 4)}))


if __name__ == "__main__":
    main()
