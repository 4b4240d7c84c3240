#!/usr/bin/env python3
"""Exports torchvision and transformer models with Debian's torch (random
weights, fixed seed, opset 17) and checks that Saturn imports each one and
computes PyTorch's outputs on the CPU target (and the interpreter with
--interp). Prints one line per model and a summary; exit 1 when any fails.

    tools/check_torch_models.py [--saturn build/tools/saturn] [--dir D] [--interp] [NAME...]
    tools/check_torch_models.py --write-fixture docs/examples/models

Needs python3-torch and python3-torchvision (not the test suite's
dependencies: the suite checks a small Swin exported this way, bundled in
docs/examples/models by --write-fixture, against PyTorch's outputs). Models
are kept small (narrow inputs) so that the whole sweep takes a few minutes
on two cores.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import torchvision.models as tvm
import torchvision.models.segmentation as tvs


class Decoder(torch.nn.Module):
    """torch.nn.TransformerDecoder over a memory, causal mask on the target."""

    def __init__(self):
        super().__init__()
        layer = torch.nn.TransformerDecoderLayer(64, 4, 128, dropout=0.1, batch_first=True)
        self.dec = torch.nn.TransformerDecoder(layer, 2)
        self.register_buffer("mask", torch.nn.Transformer.generate_square_subsequent_mask(16))

    def forward(self, x):
        return self.dec(x, x[:, :8], tgt_mask=self.mask)


class Encoder(torch.nn.Module):
    def __init__(self, norm_first):
        super().__init__()
        layer = torch.nn.TransformerEncoderLayer(64, 4, 128, dropout=0.1, batch_first=True, norm_first=norm_first)
        self.enc = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)

    def forward(self, x):
        return self.enc(x)


class Attention(torch.nn.Module):
    """MultiheadAttention with a key padding mask (bool), as BERT-like models use."""

    def __init__(self):
        super().__init__()
        self.mha = torch.nn.MultiheadAttention(64, 8, dropout=0.1, batch_first=True)
        self.register_buffer("pad", torch.arange(16).unsqueeze(0) >= 12)

    def forward(self, x):
        return self.mha(x, x, x, key_padding_mask=self.pad, need_weights=False)[0]


class Embedding(torch.nn.Module):
    """Token and position embeddings, layer norm, a classifier: integer ids in."""

    def __init__(self):
        super().__init__()
        self.tok = torch.nn.Embedding(100, 32)
        self.pos = torch.nn.Embedding(16, 32)
        self.norm = torch.nn.LayerNorm(32)
        self.head = torch.nn.Linear(32, 5)

    def forward(self, ids):
        h = self.norm(self.tok(ids) + self.pos(torch.arange(ids.shape[1])))
        return self.head(h.mean(1))


def image(size):
    return lambda: torch.randn(1, 3, size, size)


def seq():
    return torch.randn(1, 16, 64)


# name -> (constructor, input maker). Every torchvision architecture family,
# at the smallest input each accepts, and torch.nn's transformer blocks.
MODELS = {
    "alexnet": (lambda: tvm.alexnet(), image(224)),  # its adaptive pool exports at 224 only
    "vgg11_bn": (lambda: tvm.vgg11_bn(), image(224)),
    "resnet50": (lambda: tvm.resnet50(), image(64)),
    "resnext50_32x4d": (lambda: tvm.resnext50_32x4d(), image(64)),
    "wide_resnet50_2": (lambda: tvm.wide_resnet50_2(), image(32)),
    "squeezenet1_0": (lambda: tvm.squeezenet1_0(), image(64)),
    "densenet121": (lambda: tvm.densenet121(), image(64)),
    "inception_v3": (lambda: tvm.inception_v3(aux_logits=False, init_weights=True), image(96)),
    "googlenet": (lambda: tvm.googlenet(aux_logits=False, init_weights=True), image(64)),
    "mobilenet_v2": (lambda: tvm.mobilenet_v2(), image(64)),
    "mobilenet_v3_large": (lambda: tvm.mobilenet_v3_large(), image(64)),
    "mnasnet0_5": (lambda: tvm.mnasnet0_5(), image(64)),
    "shufflenet_v2_x0_5": (lambda: tvm.shufflenet_v2_x0_5(), image(64)),
    "efficientnet_b0": (lambda: tvm.efficientnet_b0(), image(64)),
    "efficientnet_v2_s": (lambda: tvm.efficientnet_v2_s(), image(64)),
    "regnet_x_400mf": (lambda: tvm.regnet_x_400mf(), image(64)),
    "regnet_y_400mf": (lambda: tvm.regnet_y_400mf(), image(64)),
    "convnext_tiny": (lambda: tvm.convnext_tiny(), image(64)),
    "swin_t": (lambda: tvm.swin_t(), image(64)),
    "swin_v2_t": (lambda: tvm.swin_v2_t(), image(64)),
    "maxvit_t": (lambda: tvm.maxvit_t(), image(224)),
    "vit_b_32": (lambda: tvm.vit_b_32(image_size=64), image(64)),
    "fcn_resnet50": (lambda: tvs.fcn_resnet50(weights_backbone=None, aux_loss=False), image(64)),
    "deeplabv3_mobilenet_v3_large": (lambda: tvs.deeplabv3_mobilenet_v3_large(weights_backbone=None), image(64)),
    "lraspp_mobilenet_v3_large": (lambda: tvs.lraspp_mobilenet_v3_large(weights_backbone=None), image(64)),
    "transformer_encoder": (lambda: Encoder(False), seq),
    "transformer_encoder_prenorm": (lambda: Encoder(True), seq),
    "transformer_decoder": (Decoder, seq),
    "multihead_attention": (Attention, seq),
    "embedding_classifier": (Embedding, lambda: torch.randint(0, 100, (1, 16))),
}


def write_fixture(folder):
    """swin_tiny: one stage of two Swin blocks on 8x8 patches, 4x4 windows,
    so the second block shifts its windows (the attention mask built with
    ScatterND) and attention dropout exports as training-mode Dropout of
    ratio 0. Its input and PyTorch's output as TensorProto files."""
    from onnx import numpy_helper
    from torchvision.models.swin_transformer import SwinTransformer

    torch.manual_seed(0)
    model = SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2], num_heads=[2], window_size=[4, 4],
                            num_classes=10).eval()
    x = torch.randn(1, 3, 32, 32)
    with torch.no_grad():
        y = model(x).numpy()
    base = os.path.join(folder, "swin_tiny")
    torch.onnx.export(model, x, base + ".onnx", opset_version=17, input_names=["x"], output_names=["logits"])
    with open(base + ".input.pb", "wb") as f:
        f.write(numpy_helper.from_array(x.numpy(), "x").SerializeToString())
    with open(base + ".torch.pb", "wb") as f:
        f.write(numpy_helper.from_array(y, "logits").SerializeToString())


def export(name, folder):
    make, inputs = MODELS[name]
    torch.manual_seed(0)
    model = make().eval()
    x = inputs()
    with torch.no_grad():
        y = model(x)
    if isinstance(y, dict):  # segmentation models
        y = y["out"]
    path = os.path.join(folder, name + ".onnx")
    torch.onnx.export(model, x, path, opset_version=17, input_names=["x"])
    np.save(os.path.join(folder, name + ".input.npy"), x.numpy())
    np.save(os.path.join(folder, name + ".torch.npy"), y.numpy())
    return path


def check(saturn, folder, name, target):
    base = os.path.join(folder, name)
    # Random weights make some outputs huge (inception_v3's reach 1e9), where
    # float32 sums cancel: ONNX Runtime differs from PyTorch by 1e-6 of the
    # largest output there too. The absolute tolerance scales with it.
    scale = float(np.abs(np.load(base + ".torch.npy")).max())
    cmd = [saturn, "run", base + ".onnx", "--target", target, "--inputs", base + ".input.npy", "--check",
           base + ".torch.npy", "--rtol", "1e-3", "--atol", f"{max(1e-4, 1e-5 * scale):g}"]
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    lines = (r.stdout + r.stderr).strip().splitlines()
    return r.returncode, time.time() - t0, lines[-1] if lines else ""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", help="models to check (default: all)")
    ap.add_argument("--saturn", default=os.path.join(os.path.dirname(__file__), "..", "build", "tools", "saturn"))
    ap.add_argument("--dir", help="keep the exported models here (default: a temporary folder)")
    ap.add_argument("--interp", action="store_true", help="also check the interpreter")
    ap.add_argument("--write-fixture", metavar="DIR", help="write the test suite's swin_tiny model into DIR and stop")
    args = ap.parse_args()
    if args.write_fixture:
        write_fixture(args.write_fixture)
        return
    names = args.names or list(MODELS)
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        sys.exit(f"unknown model(s): {' '.join(unknown)}; known: {' '.join(MODELS)}")
    folder = args.dir or tempfile.mkdtemp(prefix="saturn-torch-")
    os.makedirs(folder, exist_ok=True)
    targets = ["cpu"] + (["interp"] if args.interp else [])
    failed = 0
    for name in names:
        try:
            export(name, folder)
        except Exception as e:  # an export failure is torch's, not Saturn's: reported, not counted
            print(f"{name:30s} export failed: {str(e).splitlines()[0]}")
            continue
        for target in targets:
            rc, secs, last = check(args.saturn, folder, name, target)
            ok = rc == 0
            failed += not ok
            print(f"{name:30s} {target:6s} {'ok  ' if ok else 'FAIL'} {secs:6.1f} s  {last}", flush=True)
    print(f"{len(names)} models, {failed} failed ({folder})")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
