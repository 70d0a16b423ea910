"""What a step counts, and says it leaves out (issue 19, items 6 and 7)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from roofline import analyze_model

HF = Path(__file__).parent.parent / "examples" / "hf"


def test_optimizer_option_adds_adams_update_to_a_config_json_step():
    """Adam on fp32 master weights: 13 FLOPs and 28 bytes per parameter (docs/design.md);
    Llama-2-7B has 6,738,415,616 parameters (the published count of the HF checkpoint)."""
    kwargs = dict(batch=1, seq=512, dtype="bf16", mode="train")
    plain = analyze_model(str(HF / "llama-2-7b.json"), "a100-sxm4-80gb", **kwargs)
    adam = analyze_model(str(HF / "llama-2-7b.json"), "a100-sxm4-80gb", optimizer="adam",
                         **kwargs)
    params = 6_738_415_616
    assert adam.totals["parameters"] == params
    update = [r for r in adam.ops if r.op.kind == "adam-update"]
    assert len(update) == 1 and update[0].op.bytes == 28 * params
    assert update[0].op.flops == 13 * params
    assert adam.totals["bytes"] - plain.totals["bytes"] == 28 * params
    assert "optimizer" in plain.not_counted() and "optimizer" not in adam.not_counted()


def test_cli_optimizer_and_not_counted(invoke):
    out = invoke("analyze", HF / "gpt2.json", "--hw", "a100", "--batch", "2", "--seq", "64",
                 "--dtype", "fp16", "--mode", "train", "--format", "json")
    data = json.loads(out.stdout)
    assert data["optimizer"] == "none"
    assert data["not_counted"] == ["optimizer", "loss", "dropout"]
    out = invoke("analyze", HF / "gpt2.json", "--hw", "a100", "--batch", "2", "--seq", "64",
                 "--dtype", "fp16", "--mode", "train", "--optimizer", "sgd")
    assert "not counted: the loss and its gradient, dropout" in " ".join(out.stdout.split())
    # a config.json's dropout rates are not read (model.hf), so not "the model's rate is 0":
    # transformers' GPT2Config trains at resid_pdrop = embd_pdrop = attn_pdrop = 0.1
    assert ("dropout (a config.json's rates are not read: the blocks are taken without it, "
            "where transformers trains GPT-2 and BERT at 0.1; a model.yaml block's dropout "
            "counts it)") in " ".join(out.stdout.split())
    assert "rate is 0" not in out.stdout
    inference = invoke("analyze", HF / "gpt2.json", "--hw", "a100", "--batch", "2", "--seq",
                       "64", "--dtype", "fp16", "--mode", "inference", "--format", "json")
    assert json.loads(inference.stdout)["not_counted"] == []


def test_predicted_step_covers_the_ops_not_only_the_gemms():
    """Llama-2-7B decode at batch 64 with 1024 tokens: the KV cache is read by the fused
    attention ops, not by GEMMs. By hand, per layer 2 (K and V) x 32 heads x 128 x 1024 tokens
    x 64 sequences x 2 bytes = 1.07 GB; 32 layers: 34.4 GB, at 2039 GB/s about 16.8 ms. The
    predicted step must include it (it was in the roof total only); on a GPU the ops stream at
    88% of the DRAM bandwidth (analysis.gpu_ops), so at least 34.4 GB / (0.88 x 2039 GB/s)."""
    report = analyze_model(str(HF / "llama-2-7b.json"), "a100-sxm4-80gb", batch=64, seq=1024,
                           dtype="fp16", mode="inference", phase="decode")
    t = report.totals
    kv_bytes = 32 * 2 * 32 * 128 * 1024 * 64 * 2
    attention = sum(r.op.bytes for r in report.ops if r.op.kind == "flash-attention")
    assert attention >= kv_bytes
    assert kv_bytes / 2039e9 == pytest.approx(16.85e-3, rel=0.01)
    assert t["predicted_time_s"] == pytest.approx(t["predicted_gemm_time_s"]
                                                  + t["predicted_op_time_s"])
    assert t["predicted_time_s"] - t["predicted_gemm_time_s"] >= kv_bytes / (0.88 * 2039e9)
