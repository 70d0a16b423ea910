"""The rotary position embedding and the copy of a step's new K and V into the KV cache (0.9.0):
every engine runs both, and a Llama decode step timed on an H100 ran them where the count had
neither. Hand counts: rotary 3 FLOPs a value of q and k (x cos + rotate_half(x) sin), each read
and written; the cache write reads the new K and V at the activations' size and writes them at
the cache's."""

from __future__ import annotations

from pathlib import Path

from roofline.analysis.report import analyze
from roofline.api import analyze_model
from roofline.hardware.catalog import load_hardware
from roofline.model.network import network_from_yaml

ROOT = Path(__file__).parent.parent
# hidden 256, 4 heads of 64, 2 KV heads: hq = 256, hkv = 128
BLOCK = ("{type: transformer, hidden: 256, heads: 4, kv_heads: 2, ffn: 512, causal: %s, "
         "rotary: %s, name: blk}")


def _ops(mode: str, phase: str = "prefill", rotary: str = "true", causal: str = "true",
         kv_cache: str | None = None) -> dict[tuple[str, str], tuple[int, int]]:
    text = (f"batch: 2\nseq: 8\ndtype: fp16\nmode: {mode}\nphase: {phase}\n"
            + (f"kv_cache: {kv_cache}\n" if kv_cache else "")
            + f"layers:\n  - {BLOCK % (causal, rotary)}\n")
    report = analyze(network_from_yaml(text), load_hardware("a100"))
    return {(r.op.kind, r.op.pass_): (r.op.flops, r.op.bytes) for r in report.ops
            if r.op.kind.startswith(("rotary", "kv-cache"))}


def test_rotary_on_q_and_k_forward_and_backward():
    # T = 2 x 8 = 16 tokens; q and k: 16 x (256 + 128) = 6,144 values; 3 FLOPs each; fp16 read
    # and written: 4 bytes a value
    ops = _ops("train")
    assert ops == {("rotary", "forward"): (18_432, 24_576),
                   ("rotary-backward", "backward"): (18_432, 24_576)}
    assert _ops("train", rotary="false") == {}


def test_the_new_k_and_v_go_into_the_cache_in_inference_only_and_only_when_one_is_kept():
    # prefill: 16 tokens x 2 x 128 = 4,096 values, read and written at 2 bytes: 16,384 B
    assert _ops("inference")[("kv-cache-write", "forward")] == (0, 16_384)
    # decode: one token a sequence, 2 x 2 x 128 = 512 values
    assert _ops("inference", "decode")[("kv-cache-write", "forward")] == (0, 2_048)
    # an fp8 cache: read at 2 bytes, written at 1, 2 FLOPs a value to quantize
    assert _ops("inference", "decode", kv_cache="fp8")[("kv-cache-write", "forward")] == (
        1_024, 1_536)
    # training keeps no cache, nor does a bidirectional block (an encoder)
    assert ("kv-cache-write", "forward") not in _ops("train")
    assert ("kv-cache-write", "forward") not in _ops("inference", causal="false", rotary="false")


def test_the_config_adapters_give_rope_models_their_rotary_embedding():
    llama = analyze_model(str(ROOT / "examples" / "hf" / "llama-2-7b.json"), "h100", batch=1,
                          seq=16, mode="inference")
    gpt2 = analyze_model(str(ROOT / "examples" / "hf" / "gpt2.json"), "h100", batch=1, seq=16,
                         mode="inference", dtype="fp16")
    assert sum(r.op.kind == "rotary" for r in llama.ops) == 32
    assert not any(r.op.kind == "rotary" for r in gpt2.ops)  # learned positions
    assert sum(r.op.kind == "kv-cache-write" for r in gpt2.ops) == 12
