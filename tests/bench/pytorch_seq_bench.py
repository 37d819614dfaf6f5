#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""PyTorch side of tests/bench/seq_vs_pytorch.sh: the sequence models of `kiln bench`.

  pytorch_seq_bench.py --model lstm|transformer [--device cpu|cuda] [--batch 64] [--steps 20] [--warmup 3]
                       [--threads N]

Random features [batch, 128, 256] and labels in [0, 10) held on the device; the model is
nn.LSTM(256, 256, num_layers=2, batch_first=True) or nn.TransformerEncoderLayer(256, 4,
batch_first=True) (torch's defaults: dim_feedforward 2048, dropout 0.1, relu), then the mean over
the steps and nn.Linear(256, 10); Adam lr 1e-3, cross-entropy, loss.item() every step, as `kiln
bench` times its train step. Prints {"train_step_ms", ...} as JSON. On CUDA, PyTorch eager uses
cuDNN's LSTM and its fused scaled-dot-product attention kernels where they apply.
"""
import argparse
import json
import time

import torch
from torch import nn


class SequenceClassifier(nn.Module):
    def __init__(self, kind):
        super().__init__()
        self.lstm = kind == "lstm"
        self.body = (nn.LSTM(256, 256, num_layers=2, batch_first=True) if self.lstm
                     else nn.TransformerEncoderLayer(256, 4, batch_first=True))
        self.fc = nn.Linear(256, 10)

    def forward(self, x):
        y = self.body(x)[0] if self.lstm else self.body(x)
        return self.fc(y.mean(1))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", required=True, choices=["lstm", "transformer"])
    p.add_argument("--device", default="cpu")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--threads", type=int, default=0)
    a = p.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    dev = torch.device(a.device)
    torch.manual_seed(0)
    model = SequenceClassifier(a.model).to(dev).train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.rand(a.batch, 128, 256, device=dev)
    y = torch.randint(0, 10, (a.batch,), device=dev)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    for _ in range(a.warmup):
        step()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        step()
    ms = (time.perf_counter() - t0) * 1e3 / a.steps
    print(json.dumps({"framework": "pytorch " + torch.__version__, "model": a.model, "device": a.device,
                      "batch": a.batch, "threads": torch.get_num_threads(), "train_step_ms": ms}))


if __name__ == "__main__":
    main()
