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

- gpt2, bert: the config.json examples (GPT-2's tied LM head; BERT as BertForMaskedLM),
  built by hand from each config's dimensions at batch 2, seq 128, fp32, with attention as
  two batched matmuls, which roofline counts as `--attention naive` (scores and context
  GEMMs, the full matrix even when causal, as torch computes it).

Where roofline differs from torch on purpose: with flash attention (the default for a
config.json) the scores and context are one fused op whose FLOPs are 4 B heads s^2 d, halved
when causal (the masked half is skipped), where torch would count two full bmm's; that op is
not a GEMM, so this file compares the naive form.

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
# model -> (example file, batch, input shape per sample, the options roofline runs it with)
MODELS: dict[str, tuple[str, int, tuple[int, ...], dict[str, object]]] = {
    "mlp": ("examples/mlp-1024-4096-1000.yaml", 512, (1024,), {}),
    "resnet50": ("examples/resnet50.yaml", 64, (3, 224, 224), {}),
    "gpt2": ("examples/hf/gpt2.json", 2, (128,), {"seq": 128, "attention": "naive",
                                                   "dtype": "fp32"}),
    "bert": ("examples/hf/bert-base-uncased.json", 2, (128,),
             {"seq": 128, "attention": "naive", "dtype": "fp32"}),
}


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


class Block(nn.Module):
    """A transformer block as GPT-2 and BERT run it: fused QKV, attention written as two
    batched matmuls (scores and context: what roofline's naive attention counts), output
    projection, a GELU MLP; layer norms (pre-norm for GPT-2, post-norm for BERT: the same
    GEMMs). A causal mask costs no FLOPs: both count the full scores matrix."""

    def __init__(self, hidden: int, heads: int, ffn: int, causal: bool) -> None:
        super().__init__()
        self.heads, self.causal = heads, causal
        self.ln1, self.ln2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
        self.qkv, self.proj = nn.Linear(hidden, 3 * hidden), nn.Linear(hidden, hidden)
        self.up, self.down = nn.Linear(hidden, ffn), nn.Linear(ffn, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, h = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(h, dim=-1)
        q, k, v = (t.view(b, s, self.heads, h // self.heads).transpose(1, 2) for t in (q, k, v))
        scores = torch.matmul(q, k.transpose(-1, -2)) / (h // self.heads) ** 0.5
        context = torch.matmul(scores.softmax(-1), v).transpose(1, 2).reshape(b, s, h)
        x = x + self.proj(context)
        return x + self.down(nn.functional.gelu(self.up(self.ln2(x))))


class LanguageModel(nn.Module):
    """Embeddings, blocks, a final norm and the head roofline's hf adapter builds: GPT-2's
    tied LM head, or BERT's masked-LM head (a dense layer with GELU, a norm, the tied decoder
    with a bias)."""

    def __init__(self, vocab: int, positions: int, hidden: int, heads: int, layers: int,
                 causal: bool, mlm: bool, types: int = 0) -> None:
        super().__init__()
        self.tokens, self.positions = nn.Embedding(vocab, hidden), nn.Embedding(positions, hidden)
        self.types = nn.Embedding(types, hidden) if types else None  # BERT's segment ids
        self.blocks = nn.ModuleList(Block(hidden, heads, 4 * hidden, causal)
                                    for _ in range(layers))
        self.norm = nn.LayerNorm(hidden)
        self.transform = nn.Linear(hidden, hidden) if mlm else None
        self.transform_norm = nn.LayerNorm(hidden) if mlm else None
        self.head = nn.Linear(hidden, vocab, bias=mlm)
        self.head.weight = self.tokens.weight  # tied, as both checkpoints are

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(ids.shape[1], device=ids.device)
        x = self.tokens(ids) + self.positions(positions)
        if self.types is not None:
            x = x + self.types(torch.zeros_like(ids))
        for block in self.blocks:
            x = block(x)
        x = self.norm(x)
        if self.transform is not None and self.transform_norm is not None:
            x = self.transform_norm(nn.functional.gelu(self.transform(x)))
        return self.head(x)


def gpt2() -> nn.Module:
    config = json.loads((ROOT / MODELS["gpt2"][0]).read_text())
    return LanguageModel(config["vocab_size"], config["n_positions"], config["n_embd"],
                         config["n_head"], config["n_layer"], causal=True, mlm=False)


def bert() -> nn.Module:
    config = json.loads((ROOT / MODELS["bert"][0]).read_text())
    return LanguageModel(config["vocab_size"], config["max_position_embeddings"],
                         config["hidden_size"], config["num_attention_heads"],
                         config["num_hidden_layers"], causal=False, mlm=True,
                         types=config["type_vocab_size"])


def mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(1024, 4096, bias=False), nn.Linear(4096, 1000, bias=False))


BUILDERS = {"mlp": mlp, "resnet50": resnet50, "gpt2": gpt2, "bert": bert}


def count(name: str, mode: str) -> dict:
    """FLOPs of one step of ``name`` in ``mode`` (inference: forward; train: + backward)."""
    _, batch, shape, _ = MODELS[name]
    with torch.device("meta"):
        model = BUILDERS[name]()
        x = (torch.zeros(batch, *shape, dtype=torch.long) if name in ("gpt2", "bert")
             else torch.empty(batch, *shape))
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
            "differences": "none in these runs: roofline's GEMM FLOPs (2MNK per GEMM, "
                           "convolutions' data gradient in scatter form, naive attention's "
                           "scores and context as batched GEMMs over the full matrix) equal "
                           "torch's. On purpose, roofline's default flash attention is one "
                           "fused op of 4 B heads s^2 d FLOPs, halved when causal; the "
                           "transformers here run with attention naive to compare GEMMs",
            "models": {}}
    for name, (example, batch, _, options) in MODELS.items():
        data["models"][name] = {"example": example, "batch": batch, "options": options,
                                "parameters": parameters(name),
                                "inference": count(name, "inference"),
                                "train": count(name, "train")}
    from roofline.files.atomic import write_atomic

    write_atomic(OUT, json.dumps(data, indent=2) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
