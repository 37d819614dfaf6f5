#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Exports PyTorch reference models to ONNX with random weights, plus an input and PyTorch's outputs.

Usage: make_torch_models.py OUT_DIR [--dynamo] [MODEL ...]   (models: resnet18 mobilenet_v2 transformer unet;
default all)
--dynamo: PyTorch 2's exporter (torch.onnx.export(dynamo=True)) at opset 18, as on the GPU machine
(PyTorch 2.11); without it the TorchScript exporter at opset 17 (Debian's PyTorch 1.13).
Writes OUT_DIR/<model>/model.onnx, input.npy and expected_<output name>.npy. Needs Debian's
python3-torch (torch.onnx, opset 17) and, for resnet18 / mobilenet_v2, python3-torchvision.
Exit status 77 when torch (or torchvision for a requested vision model) is missing; 1 under
KILN_REQUIRE_TEST_DEPS=1, as installer/quickstart.sh installs them (tests/common/test_deps.h).
"""
import os
import sys


def missing_dep(package, e):
    if os.environ.get("KILN_REQUIRE_TEST_DEPS") == "1":
        print(f"FAIL: {package} is not installed, but installer/quickstart.sh installs it "
              f"(KILN_REQUIRE_TEST_DEPS=1): {e}", file=sys.stderr)
        sys.exit(1)
    print(f"skipped: {e} (Debian package {package} is not installed)")
    sys.exit(77)


try:
    import numpy as np
except ImportError as e:
    missing_dep("python3-numpy", e)
try:
    import torch
except ImportError as e:
    missing_dep("python3-torch", e)


def transformer():
    # A small encoder (2 layers, d_model 32, 4 heads) over [N, 10, 32] sequences. The activation is
    # a lambda so that eval mode takes the composite path torch.onnx exports, not the fused
    # aten::_transformer_encoder_layer_fwd it cannot export (PyTorch 1.13).
    layer = torch.nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, dropout=0.1, batch_first=True,
                                             activation=lambda t: torch.relu(t))
    model = torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
    return model, torch.randn(2, 10, 32)


def unet():
    # A small U-Net (Ronneberger et al. 2015) over [N, 3, 32, 32]: two conv blocks with batch norm and
    # 2x2 max pooling down, ConvTranspose2d up (kernel 3, stride 2, padding 1, output_padding 1;
    # then kernel 2, stride 2), each skip concatenated, a 1x1 convolution to 2 classes per pixel.
    nn = torch.nn

    def block(i, o):
        return nn.Sequential(nn.Conv2d(i, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU())

    class UNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc1, self.enc2, self.mid = block(3, 8), block(8, 16), block(16, 32)
            self.pool = nn.MaxPool2d(2)
            self.up2 = nn.ConvTranspose2d(32, 16, 3, stride=2, padding=1, output_padding=1)
            self.dec2 = block(32, 16)
            self.up1 = nn.ConvTranspose2d(16, 8, 2, stride=2)
            self.dec1 = block(16, 8)
            self.head = nn.Conv2d(8, 2, 1)

        def forward(self, x):
            e1 = self.enc1(x)
            e2 = self.enc2(self.pool(e1))
            m = self.mid(self.pool(e2))
            d2 = self.dec2(torch.cat([self.up2(m), e2], 1))
            return self.head(self.dec1(torch.cat([self.up1(d2), e1], 1)))

    return UNet(), torch.randn(1, 3, 32, 32)


def vision(name):
    try:
        import torchvision
    except ImportError as e:
        missing_dep("python3-torchvision", e)
    model = getattr(torchvision.models, name)(weights=None)
    return model, torch.randn(1, 3, 224, 224)


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    out_dir = sys.argv[1]
    dynamo = "--dynamo" in sys.argv[2:]
    names = [a for a in sys.argv[2:] if a != "--dynamo"] or ["resnet18", "mobilenet_v2", "transformer", "unet"]
    torch.manual_seed(0)
    for name in names:
        if name == "transformer":
            model, x = transformer()
        elif name == "unet":
            model, x = unet()
        elif name in ("resnet18", "mobilenet_v2"):
            model, x = vision(name)
        else:
            print(f"unknown model '{name}' (resnet18, mobilenet_v2, transformer, unet)")
            return 2
        model.eval()
        # Random BatchNorm statistics, so that the running mean and variance matter.
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.5, 1.5)
        d = os.path.join(out_dir, name)
        os.makedirs(d, exist_ok=True)
        with torch.no_grad():
            y = model(x)
            if dynamo:
                torch.onnx.export(model, (x,), os.path.join(d, "model.onnx"), dynamo=True, opset_version=18,
                                  input_names=["input"], output_names=["output"],
                                  dynamic_shapes={"x": {0: torch.export.Dim("N")}}, external_data=False)
            else:
                torch.onnx.export(model, (x,), os.path.join(d, "model.onnx"), opset_version=17,
                                  input_names=["input"], output_names=["output"],
                                  dynamic_axes={"input": {0: "N"}, "output": {0: "N"}})
        np.save(os.path.join(d, "input.npy"), x.numpy())
        np.save(os.path.join(d, "expected_output.npy"), y.numpy())
        print(f"wrote {d}: input {tuple(x.shape)} -> output {tuple(y.shape)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
