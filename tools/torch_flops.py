"""Count the examples' FLOPs with PyTorch, to cross-check roofline's GEMM FLOPs.

    .venv/bin/python tools/torch_flops.py          # writes tests/data/torch_flops.json

Each model is built by hand in torch.nn, equivalent to its example file, on the meta device (no
memory, no arithmetic), and counted with ``torch.utils.flop_counter.FlopCounterMode``: the
forward pass ("inference") and the forward and backward passes ("train"). The input needs no
gradient, so, as in roofline, the first weighted layer computes no data gradient.

- mlp: examples/mlp-1024-4096-1000.yaml (two linear layers, no biases).
- resnet50: examples/resnet50.yaml, torchvision's v1.5 ResNet-50 (Bottleneck blocks, the
  stride on the 3x3 convolution, a 1x1 projection shortcut with batch norm in each stage's
  first block). Batch norm, ReLU, pooling and the adds have no FLOPs in FlopCounterMode; its
  convolutions and the classifier's addmm are what roofline's GEMMs count.

Not counted here: the GPT-2 and BERT config.json examples (building equivalent modules by hand
was left for later). Where roofline intentionally differs from torch for those, causal
attention counted as half and flash attention as one fused op, the comparison would add the
``flash-attention`` ops' FLOPs and double the causal ones (docs/design.md).

The file records the torch version and, per model and mode, the total and per-aten-op FLOPs.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "data" / "torch_flops.json"
# model -> (example file, batch the example gives, input shape per sample)
MODELS = {"mlp": ("examples/mlp-1024-4096-1000.yaml", 512, (1024,)),
          "resnet50": ("examples/resnet50.yaml", 64, (3, 224, 224))}


class Bottleneck(nn.Module):
    """torchvision's Bottleneck (v1.5: the stride on the 3x3 convolution)."""

    def __init__(self, inp: int, width: int, stride: int) -> None:
        super().__init__()
        out = 4 * width
        self.conv1, self.bn1 = nn.Conv2d(inp, width, 1, bias=False), nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3, self.bn3 = nn.Conv2d(width, out, 1, bias=False), nn.BatchNorm2d(out)
        self.relu = nn.ReLU()
        self.downsample = None
        if stride != 1 or inp != out:
            self.downsample = nn.Sequential(nn.Conv2d(inp, out, 1, stride=stride, bias=False),
                                            nn.BatchNorm2d(out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        return self.relu(y + (self.downsample(x) if self.downsample is not None else x))


def resnet50() -> nn.Module:
    layers: list[nn.Module] = [nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False),
                               nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1)]
    inp = 64
    for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for b in range(blocks):
            layers.append(Bottleneck(inp, width, stride if b == 0 else 1))
            inp = 4 * width
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2048, 1000)]
    return nn.Sequential(*layers)


def mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(1024, 4096, bias=False), nn.Linear(4096, 1000, bias=False))


BUILDERS = {"mlp": mlp, "resnet50": resnet50}


def count(name: str, mode: str) -> dict:
    """FLOPs of one step of ``name`` in ``mode`` (inference: forward; train: + backward)."""
    _, batch, shape = MODELS[name]
    with torch.device("meta"):
        model = BUILDERS[name]()
        x = torch.empty(batch, *shape)
    counter = FlopCounterMode(display=False)
    with counter:
        if mode == "train":
            model(x).sum().backward()
        else:
            with torch.no_grad():
                model(x)
    ops = {str(op).removeprefix("aten."): int(v)
           for op, v in counter.get_flop_counts()["Global"].items()}
    return {"total": int(counter.get_total_flops()), "by_op": dict(sorted(ops.items()))}


def parameters(name: str) -> int:
    with torch.device("meta"):
        return sum(p.numel() for p in BUILDERS[name]().parameters())


def main() -> int:
    data = {"torch": torch.__version__, "tool": "tools/torch_flops.py",
            "counter": "torch.utils.flop_counter.FlopCounterMode, meta device",
            "differences": "none for these models: roofline's GEMM FLOPs (2MNK per GEMM, "
                           "convolutions' data gradient in scatter form) equal torch's; for "
                           "transformers roofline counts causal attention as half and flash "
                           "attention as one fused op (not counted here)",
            "models": {}}
    for name, (example, batch, _) in MODELS.items():
        data["models"][name] = {"example": example, "batch": batch,
                                "parameters": parameters(name),
                                "inference": count(name, "inference"),
                                "train": count(name, "train")}
    OUT.write_text(json.dumps(data, indent=2) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
