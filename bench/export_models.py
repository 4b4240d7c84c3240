#!/usr/bin/env python3
"""The bench model suite: real models exported from Debian's torchvision.

Each model gets random weights (a fixed seed), is exported to ONNX with one
batch-1 input, and is saved next to that input and PyTorch's output for it,
so a benchmark can check what Saturn computes before timing it:

    DIR/NAME.onnx  DIR/NAME.input.npy  DIR/NAME.torch.npy

Usage: bench/export_models.py DIR [--levels K] [--trained-norms] [--more]
[NAME...]   (needs python3-torch and python3-torchvision; a model already
exported is kept). NAME is any model of MODELS (the suite, exported by
default) or MORE (--more exports all of those): more torchvision
architectures and recurrent nets, for checking Saturn on models it was
not tuned on. Any
other NAME whose three files are already in DIR is used as it is (a
model of your own, exported as export() does).
--trained-norms draws every BatchNorm's and LayerNorm's scale, shift and
running statistics at random (a fixed seed) instead of torch's initial 1,
0, 0 and 1, as a trained model has them: then folding a normalization
into the next product changes the weights' values (use another DIR).
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
import torchvision.models.segmentation as seg
import torchvision.models.video as video

class OutOnly(torch.nn.Module):
    """A segmentation model's "out" result alone (they return a dict)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)["out"]


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


class Recurrent(torch.nn.Module):
    """A recurrent stack (torch's LSTM or GRU, batch first) and a linear
    layer: on every step's output (a tagger), or on the last step's (a
    forecaster or classifier)."""
    def __init__(self, cell, inputs, hidden, layers=1, bidirectional=False, outputs=20, every_step=True):
        super().__init__()
        self.rnn = cell(inputs, hidden, num_layers=layers, bidirectional=bidirectional, batch_first=True)
        self.fc = torch.nn.Linear(hidden * (2 if bidirectional else 1), outputs)
        self.every_step = every_step

    def forward(self, x):
        y = self.rnn(x)[0]
        return self.fc(y if self.every_step else y[:, -1])


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


# Not in the suite: more architectures (grouped convolutions, NAS and
# mobile nets, Inception-v3, windowed and multi-axis attention, plain deep
# CNNs, segmentation heads, 3-D convolutions on video) to check Saturn on.
MORE = {
    "resnet50": (lambda: tvm.resnet50(), (1, 3, 224, 224)),
    "resnext50_32x4d": (lambda: tvm.resnext50_32x4d(), (1, 3, 224, 224)),
    "regnet_x_400mf": (lambda: tvm.regnet_x_400mf(), (1, 3, 224, 224)),
    "mnasnet1_0": (lambda: tvm.mnasnet1_0(), (1, 3, 224, 224)),
    "mobilenet_v3_large": (lambda: tvm.mobilenet_v3_large(), (1, 3, 224, 224)),
    "efficientnet_b1": (lambda: tvm.efficientnet_b1(), (1, 3, 240, 240)),
    "efficientnet_v2_s": (lambda: tvm.efficientnet_v2_s(), (1, 3, 224, 224)),
    "inception_v3": (lambda: tvm.inception_v3(aux_logits=False, init_weights=True), (1, 3, 299, 299)),
    "squeezenet1_0": (lambda: tvm.squeezenet1_0(), (1, 3, 224, 224)),
    "alexnet": (lambda: tvm.alexnet(), (1, 3, 224, 224)),
    "vgg11_bn": (lambda: tvm.vgg11_bn(), (1, 3, 224, 224)),
    "swin_t": (lambda: tvm.swin_t(), (1, 3, 224, 224)),
    "maxvit_t": (lambda: tvm.maxvit_t(), (1, 3, 224, 224)),
    "lraspp_mobilenet_v3_large": (
        lambda: OutOnly(seg.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None)), (1, 3, 224, 224)),
    "deeplabv3_mobilenet_v3_large": (
        lambda: OutOnly(seg.deeplabv3_mobilenet_v3_large(weights=None, weights_backbone=None, aux_loss=False)),
        (1, 3, 224, 224)),
    "r3d_18": (lambda: video.r3d_18(), (1, 3, 8, 112, 112)),
    # Added on 2026-12-07 after Saturn was checked on them untuned.
    "convnext_small": (lambda: tvm.convnext_small(), (1, 3, 224, 224)),
    "efficientnet_b3": (lambda: tvm.efficientnet_b3(), (1, 3, 300, 300)),
    "fcn_resnet50": (
        lambda: OutOnly(seg.fcn_resnet50(weights=None, weights_backbone=None, aux_loss=False)), (1, 3, 224, 224)),
    "mnasnet0_5": (lambda: tvm.mnasnet0_5(), (1, 3, 224, 224)),
    "regnet_y_800mf": (lambda: tvm.regnet_y_800mf(), (1, 3, 224, 224)),
    "shufflenet_v2_x0_5": (lambda: tvm.shufflenet_v2_x0_5(), (1, 3, 224, 224)),
    "vit_b_16": (lambda: tvm.vit_b_16(), (1, 3, 224, 224)),
    "wide_resnet50_2": (lambda: tvm.wide_resnet50_2(), (1, 3, 224, 224)),
    # And these at stop 70 (with --trained-norms; all four match PyTorch). Not
    # here: swin_v2_t (torch 1.13 exports no aten::zero at opset 14), s3d
    # (its last pool needs 224x224 frames), mvit_v2_s (its export ran out of
    # this 24 GiB machine's memory).
    "mc3_18": (lambda: video.mc3_18(), (1, 3, 8, 112, 112)),
    "r2plus1d_18": (lambda: video.r2plus1d_18(), (1, 3, 8, 112, 112)),
    "regnet_x_3_2gf": (lambda: tvm.regnet_x_3_2gf(), (1, 3, 224, 224)),
    "densenet169": (lambda: tvm.densenet169(), (1, 3, 224, 224)),
    # Recurrent nets (2026-12-07; ONNX LSTM and GRU, imported unrolled): a
    # bidirectional 2-layer LSTM tagger, a one-layer LSTM over a batch of 4
    # series, a 2-layer GRU classifier over a batch of 2.
    "lstm_tagger": (lambda: Recurrent(torch.nn.LSTM, 128, 256, layers=2, bidirectional=True), (1, 32, 128)),
    "lstm_forecast": (lambda: Recurrent(torch.nn.LSTM, 8, 64, outputs=1, every_step=False), (4, 50, 8)),
    "gru_classifier": (lambda: Recurrent(torch.nn.GRU, 64, 128, layers=2, outputs=10, every_step=False), (2, 24, 64)),
}
ALL = {**MODELS, **MORE}


def build(name):
    """The model NAME at the seed the suite exports it with, in eval mode."""
    torch.manual_seed(0)
    make, _ = ALL[name]
    return make().eval()


def trained_norms(model):
    """Norm layers as training leaves them: scale, shift and running
    statistics away from their initial values."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (torch.nn.BatchNorm1d, torch.nn.BatchNorm2d, torch.nn.BatchNorm3d)):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
                if m.affine:
                    m.weight.uniform_(0.5, 1.5)
                    m.bias.uniform_(-0.5, 0.5)
            elif isinstance(m, torch.nn.LayerNorm) and m.elementwise_affine:
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.5, 0.5)


def few_levels(model, levels):
    """Every parameter that varies drawn from `levels` values symmetric
    about 0, in steps of its own spread (constant ones, such as a norm's
    initial scale, compress as they are)."""
    with torch.no_grad():
        for p in model.parameters():
            step = float(p.std()) if p.numel() > 1 else 0.0
            if step > 0:
                p.copy_((torch.randint(0, levels, p.shape).to(p.dtype) - (levels - 1) / 2) * step)


def export(name, out_dir, levels=0, norms=False):
    path = os.path.join(out_dir, name + ".onnx")
    if os.path.exists(path):
        return
    model = build(name)
    shape = ALL[name][1]
    if norms:
        trained_norms(model)
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
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        # (help, or an option where DIR goes: not a directory to export into)
        print(__doc__)
        sys.exit(0 if sys.argv[1:2] in (["-h"], ["--help"]) else 2)
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    args = sys.argv[2:]
    levels, norms, more = 0, False, False
    while args[:1] in (["--levels"], ["--trained-norms"], ["--more"]):
        if args[0] == "--levels":
            levels = int(args[1])
            args = args[2:]
        else:
            norms |= args[0] == "--trained-norms"
            more |= args[0] == "--more"
            args = args[1:]
    names = args or list(MORE if more else MODELS)
    for n in names:
        if n not in ALL and all(os.path.exists(os.path.join(out_dir, n + ext))
                                for ext in (".onnx", ".input.npy", ".torch.npy")):
            continue  # a model of the user's, exported as export() does
        if n not in ALL:
            sys.exit(f"export_models.py: unknown model '{n}' (known: {', '.join(ALL)})")
        export(n, out_dir, levels, norms)


if __name__ == "__main__":
    main()
