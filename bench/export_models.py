#!/usr/bin/env python3
"""The bench model suite: real models exported from Debian's torchvision.

Each model gets random weights (a fixed seed), is exported to ONNX with one
batch-1 input, and is saved next to that input and PyTorch's output for it,
so a benchmark can check what Saturn computes before timing it:

    DIR/NAME.onnx  DIR/NAME.input.npy  DIR/NAME.torch.npy

Usage: bench/export_models.py DIR [--levels K] [NAME...]   (needs
python3-torch and python3-torchvision; a model already exported is kept).
--levels K draws every weight from K values per tensor (its initial spread
times -(K-1)/2 .. (K-1)/2), and the input too, so that the models
compress about 32/log2(K) times:
what a GPU machine that takes 64 MiB with the checkout needs
(tools/gpu_bundle.sh --models DIR). Timing does not depend on the values.
"""
import os
import sys

import numpy as np
import torch
import torchvision.models as tvm

class CausalDecoder(torch.nn.Module):
    """A GPT-style decoder stack: pre-norm self-attention under a causal
    mask (a constant of the graph), GELU feed-forward, a final norm."""

    def __init__(self, width=256, heads=4, layers=4, context=128):
        super().__init__()
        layer = torch.nn.TransformerEncoderLayer(width, heads, 4 * width, dropout=0.0, batch_first=True,
                                                 activation="gelu", norm_first=True)
        self.blocks = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = torch.nn.LayerNorm(width)
        self.register_buffer("mask", torch.nn.Transformer.generate_square_subsequent_mask(context))

    def forward(self, x):
        return self.norm(self.blocks(x, mask=self.mask))


# name -> (constructor, input shape). Small and large convolutional nets,
# depthwise and grouped convolutions, squeeze-excitation, dense concats,
# inception branches, layer norm, a vision transformer, and transformer
# stacks (an encoder; a decoder under a causal mask) beside them.
MODELS = {
    "squeezenet1_1": (lambda: tvm.squeezenet1_1(), (1, 3, 224, 224)),
    "resnet18": (lambda: tvm.resnet18(), (1, 3, 224, 224)),
    "mobilenet_v2": (lambda: tvm.mobilenet_v2(), (1, 3, 224, 224)),
    "mobilenet_v3_small": (lambda: tvm.mobilenet_v3_small(), (1, 3, 224, 224)),
    "shufflenet_v2_x1_0": (lambda: tvm.shufflenet_v2_x1_0(), (1, 3, 224, 224)),
    "efficientnet_b0": (lambda: tvm.efficientnet_b0(), (1, 3, 224, 224)),
    "regnet_y_400mf": (lambda: tvm.regnet_y_400mf(), (1, 3, 224, 224)),
    "convnext_tiny": (lambda: tvm.convnext_tiny(), (1, 3, 224, 224)),
    "densenet121": (lambda: tvm.densenet121(), (1, 3, 224, 224)),
    "googlenet": (lambda: tvm.googlenet(aux_logits=False, init_weights=True), (1, 3, 224, 224)),
    "vit_b_32": (lambda: tvm.vit_b_32(), (1, 3, 224, 224)),
    "gpt_decoder": (lambda: CausalDecoder(), (1, 128, 256)),
    "transformer_encoder": (
        lambda: torch.nn.TransformerEncoder(
            torch.nn.TransformerEncoderLayer(256, 4, 1024, dropout=0.0, batch_first=True, activation="gelu"), 4),
        (1, 128, 256)),
}


def few_levels(model, levels):
    """Every parameter that varies drawn from `levels` values symmetric
    about 0, in steps of its own spread (constant ones, such as a norm's
    initial scale, compress as they are)."""
    with torch.no_grad():
        for p in model.parameters():
            step = float(p.std()) if p.numel() > 1 else 0.0
            if step > 0:
                p.copy_((torch.randint(0, levels, p.shape).to(p.dtype) - (levels - 1) / 2) * step)


def export(name, out_dir, levels=0):
    path = os.path.join(out_dir, name + ".onnx")
    if os.path.exists(path):
        return
    torch.manual_seed(0)
    make, shape = MODELS[name]
    model = make().eval()
    if levels:
        few_levels(model, levels)
    x = torch.randn(*shape)
    if levels:
        x = torch.randint(0, levels, shape).float() - (levels - 1) / 2
    with torch.no_grad():
        y = model(x)
    # Exported with gradients on: with them off, PyTorch's transformer layers
    # take a fused fast path that has no ONNX form.
    torch.onnx.export(model, (x,), path + ".tmp", input_names=["input"], output_names=["output"],
                      opset_version=14, do_constant_folding=True)
    np.save(os.path.join(out_dir, name + ".input.npy"), x.numpy())
    np.save(os.path.join(out_dir, name + ".torch.npy"), y.numpy())
    os.replace(path + ".tmp", path)
    print(f"exported {name}", file=sys.stderr)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    args = sys.argv[2:]
    levels = 0
    if args[:1] == ["--levels"]:
        levels = int(args[1])
        args = args[2:]
    names = args or list(MODELS)
    for n in names:
        if n not in MODELS:
            sys.exit(f"export_models.py: unknown model '{n}' (known: {', '.join(MODELS)})")
        export(n, out_dir, levels)


if __name__ == "__main__":
    main()
