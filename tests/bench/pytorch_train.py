#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""PyTorch side of tests/bench/train_vs_pytorch.sh and bf16_vs_pytorch.sh: training throughput.

Trains one of the reference models (mlp, cnn) or resnet18 (torchvision's, in the CIFAR
form `kiln bench` uses: 3x3 stem, no max-pool, 10 classes) with Adam on the CPU, from
tensors held in memory, and prints one JSON line: {"model", "images_per_second", ...}.
Only training steps are timed (batching from a shuffled permutation, forward, loss,
backward, optimizer step); a few warm-up steps run first and are not timed.
--data random trains on one batch of uniform random images (labels in [0, 10)), as
`kiln bench` does; --precision bf16 runs forward and loss under
torch.autocast("cpu", dtype=torch.bfloat16) (PyTorch's CPU mixed precision).
"""
import argparse
import gzip
import json
import os
import sys
import time

import numpy as np
import torch
from torch import nn

MEAN, STD = 0.2860, 0.3530


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def make_model(name):
    if name == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(),
                             nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))
    if name == "cnn":
        return nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Flatten(), nn.Linear(3136, 128), nn.ReLU(), nn.Linear(128, 10))
    if name == "resnet18":
        import torchvision
        m = torchvision.models.resnet18(num_classes=10)
        m.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
        m.maxpool = nn.Identity()
        return m
    raise SystemExit(f"unknown model {name!r} (mlp, cnn, resnet18)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", choices=["mlp", "cnn", "resnet18"], required=True)
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist",
                    help="the Fashion-MNIST directory, or 'random' (one random batch)")
    ap.add_argument("--precision", choices=["f32", "bf16"], default="f32")
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--steps", type=int, default=0, help="timed steps (0: one full epoch)")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    if args.data == "random":
        shape = (3, 32, 32) if args.model == "resnet18" else (1, 28, 28)
        x = torch.rand((args.batch_size,) + shape)
        y = torch.randint(0, 10, (args.batch_size,))
    else:
        images = read_idx(os.path.join(args.data, "train-images-idx3-ubyte.gz"))
        labels = read_idx(os.path.join(args.data, "train-labels-idx1-ubyte.gz"))
        x = torch.from_numpy(((images.astype(np.float32) / 255.0 - MEAN) / STD)[:, None])
        y = torch.from_numpy(labels.astype(np.int64))
    n = x.shape[0]

    model = make_model(args.model)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss()
    model.train()

    def step(idx):
        xb, yb = x[idx], y[idx]
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.precision == "bf16"):
            loss = loss_fn(model(xb), yb)
        loss.backward()
        opt.step()
        return loss

    perm = torch.randperm(n)
    for i in range(args.warmup):
        step(perm[i * args.batch_size:(i + 1) * args.batch_size])

    steps = args.steps or (n + args.batch_size - 1) // args.batch_size
    seen, loss_sum = 0, 0.0
    t0 = time.perf_counter()
    perm = torch.randperm(n)
    pos = 0
    for _ in range(steps):
        if pos >= n:
            perm, pos = torch.randperm(n), 0
        idx = perm[pos:pos + args.batch_size]
        pos += args.batch_size
        loss = step(idx)
        seen += idx.numel()
        loss_sum += loss.item() * idx.numel()  # item() also makes the timing honest
    elapsed = time.perf_counter() - t0

    print(json.dumps({
        "model": args.model, "precision": args.precision, "images_per_second": seen / elapsed, "images": seen,
        "seconds": elapsed, "mean_loss": loss_sum / seen, "threads": torch.get_num_threads(),
        "batch_size": args.batch_size, "torch": torch.__version__,
        "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE", ""),
    }))


if __name__ == "__main__":
    sys.exit(main())
