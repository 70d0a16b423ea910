"""roofline's GEMM FLOPs against PyTorch's FlopCounterMode (tools/torch_flops.py wrote
tests/data/torch_flops.json): compared on every run from the file, and recounted live when
torch is installed. The MLP, ResNet-50, GPT-2 and BERT examples; the transformers run with
attention naive (two batched GEMMs, as torch counts them): roofline's default flash attention
is one fused op, halved when causal, on purpose (the file's ``differences``, docs/design.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from roofline.model.network import load_network

ROOT = Path(__file__).resolve().parent.parent
DATA = json.loads((ROOT / "tests" / "data" / "torch_flops.json").read_text())
MODES = ("inference", "train")


def _ours(model: str, mode: str) -> dict[str, int]:
    """roofline's GEMM FLOPs grouped as torch's aten ops count them: convolutions' forward
    (convolution), their gradients (convolution_backward), and linear layers (mm, addmm)."""
    entry = DATA["models"][model]
    net = load_network(ROOT / entry["example"]).with_overrides(
        batch=entry["batch"], mode=mode, **entry.get("options", {}))
    convs = {layer.name for layer in net.layers if type(layer).__name__ == "Conv2d"}
    kinds = {"convolution": 0, "convolution_backward": 0, "linear": 0, "bmm": 0}
    for g in net.gemms():
        if g.layer in convs:
            kinds["convolution" if g.pass_ == "forward" else "convolution_backward"] += g.flops
        elif g.layer.endswith((".scores", ".context")):  # naive attention's batched GEMMs
            kinds["bmm"] += g.flops
        else:
            kinds["linear"] += g.flops
    return kinds


def _theirs(counts: dict) -> dict[str, int]:
    by_op = counts["by_op"]
    return {"convolution": by_op.get("convolution", 0),
            "convolution_backward": by_op.get("convolution_backward", 0),
            "linear": by_op.get("mm", 0) + by_op.get("addmm", 0),
            "bmm": by_op.get("bmm", 0)}


@pytest.mark.parametrize("model", sorted(DATA["models"]))
@pytest.mark.parametrize("mode", MODES)
def test_gemm_flops_equal_torchs(model, mode):
    counts = DATA["models"][model][mode]
    ours = _ours(model, mode)
    assert ours == _theirs(counts)
    assert sum(ours.values()) == counts["total"]


@pytest.mark.parametrize("model", sorted(DATA["models"]))
def test_parameters_equal_torchs(model):
    entry = DATA["models"][model]
    assert load_network(ROOT / entry["example"]).parameters == entry["parameters"]


@pytest.mark.slow  # about 10 s of meta-device runs, and only where torch is installed
def test_live_count_matches_the_file():
    pytest.importorskip("torch")
    import importlib.util

    spec = importlib.util.spec_from_file_location("torch_flops", ROOT / "tools" / "torch_flops.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    for model in DATA["models"]:
        for mode in MODES:
            assert tool.count(model, mode) == DATA["models"][model][mode], (model, mode)
