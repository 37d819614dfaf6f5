#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Exports the batch-1 inference benchmark's models to ONNX (tests/bench/onnx_vs_ort.sh, issue 18).

Usage: export_bench_models.py OUT_DIR [MODEL ...]
Models (default all): resnet18 mobilenet_v3_small efficientnet_b0 convnext_tiny (torchvision, random
weights, 1x3x224x224), vit_tiny (a 2-layer ViT built from torch.nn modules: 32x32 images, 4x4 patches,
d 192, 3 heads, GELU MLP 768, pre-norm) and transformer (a 2-layer nn.TransformerEncoder, d 64, 4
heads, feed-forward 256, ReLU, 1x32x64 input) and unet (a U-Net of widths 32-256 whose decoder
upsamples with 2x2 stride-2 ConvTranspose2d, 1x3x128x128 input, 2 classes per pixel). Weights and inputs are seeded (torch.manual_seed(0)),
BatchNorm running statistics random so that they matter. Static shapes (batch 1).
Writes OUT_DIR/<model>/model.onnx and input.npy. PyTorch 1.x exports with the TorchScript exporter
at opset 17; PyTorch 2.x with the same exporter (dynamo=False) when it still has it, else dynamo.
A model that fails to export prints "FAILED <model>: <why>" and the others still export (exit 1).
"""
import os
import sys

import numpy as np
import torch
from torch import nn

VISION = ["resnet18", "mobilenet_v3_small", "efficientnet_b0", "convnext_tiny"]
ALL = VISION + ["vit_tiny", "transformer", "unet"]


def relu(t):  # a plain function keeps nn.TransformerEncoderLayer off its fused fast path,
    return torch.relu(t)  # which the TorchScript exporter cannot export (PyTorch 1.13)


def gelu(t):
    return nn.functional.gelu(t)


class ViTTiny(nn.Module):
    """ViT (Dosovitskiy et al. 2021) in its tiny width: conv patch embedding, class token, learned
    position embedding, pre-norm encoder layers, LayerNorm and a linear head on the class token."""

    def __init__(self, image=32, patch=4, dim=192, heads=3, mlp=768, layers=2, classes=10):
        super().__init__()
        self.patch_embed = nn.Conv2d(3, dim, patch, stride=patch)
        tokens = (image // patch) ** 2 + 1
        self.cls_token = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.pos_embed = nn.Parameter(torch.randn(1, tokens, dim) * 0.02)
        layer = nn.TransformerEncoderLayer(dim, heads, mlp, dropout=0.0, activation=gelu, batch_first=True,
                                           norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        x = self.patch_embed(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1) + self.pos_embed
        x = self.norm(self.encoder(x))
        return self.head(x[:, 0])


class UNet(nn.Module):
    """U-Net (Ronneberger et al. 2015) with padded 3x3 convolutions and batch norm: 3 levels down by
    2x2 max pooling, up by 2x2 stride-2 transposed convolutions, skips concatenated."""

    def __init__(self, widths=(32, 64, 128, 256), classes=2):
        super().__init__()

        def block(i, o):
            return nn.Sequential(nn.Conv2d(i, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU(),
                                 nn.Conv2d(o, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU())

        self.down = nn.ModuleList(block(i, o) for i, o in zip((3,) + widths[:-2], widths[:-1]))
        self.mid = block(widths[-2], widths[-1])
        self.up = nn.ModuleList(nn.ConvTranspose2d(o, o // 2, 2, stride=2) for o in reversed(widths[1:]))
        self.dec = nn.ModuleList(block(o, o // 2) for o in reversed(widths[1:]))
        self.head = nn.Conv2d(widths[0], classes, 1)

    def forward(self, x):
        skips = []
        for b in self.down:
            x = b(x)
            skips.append(x)
            x = nn.functional.max_pool2d(x, 2)
        x = self.mid(x)
        for up, dec, skip in zip(self.up, self.dec, reversed(skips)):
            x = dec(torch.cat([up(x), skip], 1))
        return self.head(x)


def build(name):
    if name in VISION:
        import torchvision
        return getattr(torchvision.models, name)(weights=None), torch.randn(1, 3, 224, 224)
    if name == "vit_tiny":
        return ViTTiny(), torch.randn(1, 3, 32, 32)
    if name == "transformer":
        layer = nn.TransformerEncoderLayer(64, 4, 256, dropout=0.0, activation=relu, batch_first=True)
        return nn.TransformerEncoder(layer, 2, enable_nested_tensor=False), torch.randn(1, 32, 64)
    if name == "unet":
        return UNet(), torch.randn(1, 3, 128, 128)
    raise SystemExit(f"unknown model '{name}' ({' '.join(ALL)})")


def export(model, x, path):
    major = int(torch.__version__.split(".")[0])
    kwargs = dict(input_names=["input"], output_names=["output"])
    if major >= 2:
        try:  # the TorchScript exporter where PyTorch 2.x still has it: the same graphs as 1.13's
            torch.onnx.export(model, (x,), path, opset_version=17, dynamo=False, **kwargs)
            return
        except Exception as e:  # noqa: BLE001 - newer PyTorch: only dynamo
            print(f"  TorchScript export failed ({type(e).__name__}: {e}); trying dynamo=True", file=sys.stderr)
        torch.onnx.export(model, (x,), path, opset_version=18, dynamo=True, external_data=False, **kwargs)
    else:
        torch.onnx.export(model, (x,), path, opset_version=17, **kwargs)


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    out_dir = sys.argv[1]
    names = sys.argv[2:] or ALL
    failed = 0
    for name in names:
        torch.manual_seed(0)
        model, x = build(name)
        model.eval()
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.5, 1.5)
        d = os.path.join(out_dir, name)
        os.makedirs(d, exist_ok=True)
        try:  # with autograd on: under no_grad, nn.MultiheadAttention takes its fused fast path,
            export(model, x, os.path.join(d, "model.onnx"))  # which PyTorch 1.13 cannot export
        except Exception as e:  # noqa: BLE001 - reported, the other models go on
            print(f"FAILED {name}: {type(e).__name__}: {e}")
            failed += 1
            continue
        np.save(os.path.join(d, "input.npy"), x.numpy())
        print(f"exported {name}: input {tuple(x.shape)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
