#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""PyTorch side of tests/bench/cuda_vs_pytorch.sh: the same figures as bench_cuda_train.

  pytorch_cuda_bench.py train  [--model cnn|mlp|resnet18] [--batch 128] [--steps 400] [--warmup 30] [--amp bf16|f16]
                               [--strong] [--tf32 on|off] [--profile]
  pytorch_cuda_bench.py matmul [--size 8192] [--dtype bf16|f16|f32] [--iters 20]

train: the reference model, Adam lr 1e-3, random images/labels held on the GPU (60,000,
taken in order), loss.item() every step; prints {"images_per_second", ...} as JSON.
PyTorch's defaults are kept (cuDNN TF32 on, matmul TF32 off, benchmark off) unless --tf32 sets
both cuDNN's and matmul's TF32 on or off.

--strong runs PyTorch as a performance-minded user does: channels_last model and input for the
convolutional models, cudnn.benchmark on, Adam(fused=True, capturable=True), and the whole step
(forward, backward, optimizer) captured once with torch.cuda.graph and replayed; the batch is
copied into the captured input, and the loss is summed on the GPU and read once at the end
(PyTorch's "whole network capture" recipe, docs/source/notes/cuda.rst).
"""
import argparse
import json
import time

import torch
from torch import nn


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = self.bn2(self.conv2(torch.relu(self.bn1(self.conv1(x)))))
        return torch.relu(y + self.shortcut(x))


def resnet18():
    """The CIFAR form of ResNet-18, as bench_cuda_train's."""
    layers = [nn.Conv2d(3, 64, 3, 1, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU()]
    cin = 64
    for cout in (64, 128, 256, 512):
        for b in range(2):
            layers.append(BasicBlock(cin, cout, 2 if b == 0 and cout != 64 else 1))
            cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 10)]
    return nn.Sequential(*layers)


def make_model(name):
    if name == "resnet18":
        return resnet18()
    if name == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(),
                             nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))
    return nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(3136, 128), nn.ReLU(), nn.Linear(128, 10))


def set_tf32(mode):
    if mode is not None:
        torch.backends.cudnn.allow_tf32 = mode == "on"
        torch.backends.cuda.matmul.allow_tf32 = mode == "on"


def report(a, dt, total):
    print(json.dumps({"bench": "train", "model": a.model, "framework": "pytorch " + torch.__version__,
                      "batch_size": a.batch, "steps": a.steps, "amp": a.amp or "off",
                      "mode": "strong" if a.strong else "eager", "tf32_conv": torch.backends.cudnn.allow_tf32,
                      "images_per_second": a.steps * a.batch / dt, "mean_loss": total / a.steps}))


def train_strong(a):
    """The captured step (see the module's docstring)."""
    assert a.amp != "f16", "--strong takes f32 or bf16 (GradScaler's step does not capture)"
    dev = torch.device("cuda")
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = True
    n = 50000 if a.model == "resnet18" else 60000
    x = torch.randn(n, 3, 32, 32, device=dev) if a.model == "resnet18" else torch.randn(n, 1, 28, 28, device=dev)
    y = torch.randint(0, 10, (n,), device=dev)
    fmt = torch.channels_last if a.model != "mlp" else torch.contiguous_format
    model = make_model(a.model).to(dev).to(memory_format=fmt)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, fused=True, capturable=True)
    loss_fn = nn.CrossEntropyLoss()
    amp = torch.bfloat16 if a.amp == "bf16" else None
    static_x = x[:a.batch].clone().contiguous(memory_format=fmt)
    static_y = y[:a.batch].clone()

    def body():
        with torch.autocast("cuda", dtype=amp or torch.float32, enabled=amp is not None, cache_enabled=False):
            loss = loss_fn(model(static_x), static_y)
        loss.backward()
        opt.step()
        return loss

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            opt.zero_grad(set_to_none=True)
            body()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        static_loss = body()
    total = torch.zeros((), device=dev)
    pos = 0

    def step():
        nonlocal pos
        if pos + a.batch > n:
            pos = 0
        static_x.copy_(x[pos:pos + a.batch])
        static_y.copy_(y[pos:pos + a.batch])
        pos += a.batch
        graph.replay()
        total.add_(static_loss.detach())

    for _ in range(a.warmup):
        step()
    torch.cuda.synchronize()
    total.zero_()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        step()
    torch.cuda.synchronize()
    report(a, time.perf_counter() - t0, total.item())


def train(a):
    dev = torch.device("cuda")
    torch.manual_seed(0)
    n = 50000 if a.model == "resnet18" else 60000
    x = torch.randn(n, 3, 32, 32, device=dev) if a.model == "resnet18" else torch.randn(n, 1, 28, 28, device=dev)
    y = torch.randint(0, 10, (n,), device=dev)
    model = make_model(a.model).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    amp = {"bf16": torch.bfloat16, "f16": torch.float16}.get(a.amp)
    scaler = torch.amp.GradScaler("cuda", enabled=a.amp == "f16")
    pos = 0

    def step():
        nonlocal pos
        if pos + a.batch > n:
            pos = 0
        xb, yb = x[pos:pos + a.batch], y[pos:pos + a.batch]
        pos += a.batch
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=amp or torch.float32, enabled=amp is not None):
            loss = loss_fn(model(xb), yb)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return loss.item()

    for _ in range(a.warmup):
        step()
    torch.cuda.synchronize()
    if a.profile:  # per-kernel GPU time of `steps` steps, to stderr (beside KILN_CUDA_PROFILE=1)
        import sys
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            for _ in range(a.steps):
                step()
            torch.cuda.synchronize()
        print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=40), file=sys.stderr)
    t0 = time.perf_counter()
    total = sum(step() for _ in range(a.steps))
    torch.cuda.synchronize()
    report(a, time.perf_counter() - t0, total)


def matmul(a):
    t = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}[a.dtype]
    x = torch.randn(a.size, a.size, device="cuda").to(t)
    y = torch.randn(a.size, a.size, device="cuda").to(t)
    for _ in range(3):
        x @ y
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(a.iters):
        x @ y
    torch.cuda.synchronize()
    dt = (time.perf_counter() - t0) / a.iters
    print(json.dumps({"bench": "matmul", "framework": "pytorch " + torch.__version__, "size": a.size,
                      "dtype": a.dtype, "ms": dt * 1e3, "tflops": 2 * a.size ** 3 / dt / 1e12}))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("what", choices=["train", "matmul"])
    p.add_argument("--model", default="cnn", choices=["cnn", "mlp", "resnet18"])
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--warmup", type=int, default=30)
    p.add_argument("--amp", choices=["bf16", "f16"])
    p.add_argument("--size", type=int, default=8192)
    p.add_argument("--dtype", default="bf16", choices=["bf16", "f16", "f32"])
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--strong", action="store_true", help="channels_last, fused capturable Adam, step as a CUDA graph")
    p.add_argument("--tf32", choices=["on", "off"], help="cuDNN and matmul TF32 (default: PyTorch's)")
    p.add_argument("--profile", action="store_true", help="print per-kernel GPU times first (stderr)")
    a = p.parse_args()
    set_tf32(a.tf32)
    if a.what == "matmul":
        matmul(a)
    else:
        train_strong(a) if a.strong else train(a)


if __name__ == "__main__":
    main()
