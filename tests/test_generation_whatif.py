"""sweep and compare of whole generations (``--prompt P --generate G``): a sweep point's TTFT,
TPOT and tokens/s worked by hand from FLOPs and bytes on a one-block decoder; the generation's
memory limit by hand (the prefill's P tokens against the last decode step's KV cache of
P + G - 1); each point and device equal to analyze's generation at its batch; the refusals
analyze makes, in one line, exit 2."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from roofline import analyze_model, compare, sweep
from roofline.errors import InputError

ROOT = Path(__file__).parent.parent
LLAMA = str(ROOT / "examples" / "hf" / "llama-2-7b.json")
A100 = "a100-sxm4-80gb"
PEAK, BW = 312e12, 2039e9  # A100 SXM4 80GB (hwdb): dense fp16 FLOP/s, HBM bytes/s
CAPACITY = 85_100_068_864  # what CUDA reports on one (hwdb memory.reported_bytes, deviceQuery)
WORKSPACE = 1e9  # the stated GPU workspace allowance (analysis.memory.WORKSPACE_BYTES)

# One transformer block (hidden 256, 4 heads of 64, FFN 1024 with GELU, LayerNorm, causal
# flash attention) and an output layer to 1000: every size small enough to follow by hand.
H, HEADS, D, FFN, VOCAB = 256, 4, 64, 1024, 1000
TINY = """\
name: tiny-decoder
batch: 2
dtype: fp16
mode: inference
layers:
  - {type: transformer, hidden: 256, heads: 4, causal: true}
  - {type: linear, in: 256, out: 1000}
"""


@pytest.fixture
def tiny(tmp_path):
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY)
    return path


def roof(flops, nbytes):
    """An item's roofline time on the A100: max(FLOPs / peak, bytes / bandwidth)."""
    return max(flops / PEAK, nbytes / BW)


def gemm(m, n, k):
    """An fp16 GEMM: 2mnk FLOPs, 2 (mk + kn + mn) bytes."""
    return roof(2 * m * n * k, 2 * (m * k + k * n + m * n))


def elementwise(values, flops_each, tensors):
    """An fp16 op over ``values`` elements: FLOPs each, ``tensors`` read or written (2 B)."""
    return roof(flops_each * values, tensors * values * 2)


def prefill_by_hand(batch, prompt):
    """The prefill of T = batch x prompt tokens, keeping each sequence's last logits:
    two LayerNorms (8 FLOPs an element, read + write), qkv T x 3h x h, the new K and V into
    the cache (T x 2h values read and written), causal flash attention (4 x batch x heads x
    s^2 x d / 2 FLOPs; reads Q, K, V, writes O: 4 T h values), proj T x h x h, two residual
    adds (1 FLOP, two reads and a write), ffn_up T x 4h x h, GELU (8 FLOPs, read + write),
    ffn_down T x h x 4h, and the output layer on the last token: batch x 1000 x h."""
    t = batch * prompt
    return (2 * elementwise(t * H, 8, 2) + gemm(t, 3 * H, H)
            + elementwise(t * 2 * H, 0, 2)
            + roof(4 * batch * HEADS * prompt * prompt * D // 2, 4 * t * H * 2)
            + gemm(t, H, H) + 2 * elementwise(t * H, 1, 3) + gemm(t, FFN, H)
            + elementwise(t * FFN, 8, 2) + gemm(t, H, FFN) + gemm(batch, VOCAB, H))


def decode_by_hand(batch, keys):
    """One decode step (a token a sequence, T = batch) against ``keys`` keys: the same items
    at T = batch, the attention now 4 x batch x heads x keys x d FLOPs reading each query and
    writing each output (2 batch h values) and reading the cache's K and V of ``keys`` tokens
    (keys x batch x 2h values)."""
    t = batch
    return (2 * elementwise(t * H, 8, 2) + gemm(t, 3 * H, H)
            + elementwise(t * 2 * H, 0, 2)
            + roof(4 * batch * HEADS * keys * D, (2 * t * H + keys * batch * 2 * H) * 2)
            + gemm(t, H, H) + 2 * elementwise(t * H, 1, 3) + gemm(t, FFN, H)
            + elementwise(t * FFN, 8, 2) + gemm(t, H, FFN) + gemm(batch, VOCAB, H))


def test_a_sweep_point_by_hand(tiny):
    """Batch 2, prompt 16, 4 tokens: TTFT is the prefill of 32 tokens; the 3 decode steps
    attend to 17, 18 and 19 keys; latency = TTFT + their sum; tokens/s = 2 x 4 / latency. The
    batch-1 point alike (prompt 16 a sequence, 16 tokens)."""
    s = sweep(tiny, A100, [1, 2], prompt=16, generate=4)
    for batch, point in zip((1, 2), s.to_dict()["points"]):
        g = point["generation"]
        ttft = prefill_by_hand(batch, 16)
        steps = [decode_by_hand(batch, keys) for keys in (17, 18, 19)]
        latency = ttft + sum(steps)
        assert g["ttft_s"] == pytest.approx(ttft, rel=1e-12)
        assert g["tpot_s"] == pytest.approx(sum(steps) / 3, rel=1e-12)
        assert g["latency_s"] == pytest.approx(latency, rel=1e-12)
        assert g["tokens_per_s"] == pytest.approx(batch * 4 / latency, rel=1e-12)
        assert g["kv_cache_tokens"] == [17, 19] and g["batch"] == batch
        # the sweep contract's own keys are the last decode step's (19 keys), and say so
        assert point["time_s"] == pytest.approx(steps[-1], rel=1e-12)
        assert point["samples_per_s"] == pytest.approx(batch / steps[-1], rel=1e-12)
        assert point["batch"] == batch and point["seq"] == 19
    data = s.to_dict()
    assert (data["prompt"], data["generate"], data["point_step"]) == (16, 4, "last-decode")
    assert data["seq_transitions"] is None  # the lengths are given: nothing to search


def test_the_generation_memory_limit_by_hand(tiny):
    """Memory a sequence, on top of the weights (2 x 1,043,456 parameters = 2,086,912 B:
    qkv 256 x 768, proj 256 x 256, FFN 2 x 256 x 1024, two LayerNorms' 2 x 2 x 256, the
    output layer 256 x 1000) and the 1 GB workspace, against the 85,100,068,864 B CUDA reports:
    84,097,981,952 B left.

    Prefill of P tokens a sequence: its KV cache P x 2h x 2 B = 1024 P, and the most one layer
    holds at once, the residual stream P h 2 B = 512 P plus the FFN's up and GELU outputs
    P x 2 x 1024 x 2 B = 4096 P (the attention's Q, K, V and O, 2048 P, are fewer):
    5632 P B. Last decode step: its KV cache of P + G - 1 tokens, 1024 (P + G - 1), and one
    token's 512 + 4096 = 4608 B.

    P = 1000, G = 1000: the prefill holds 5,632,000 B a sequence (14,932 sequences fit), the
    last step 2,051,584 (40,991): the generation fits up to 14,932, where a decode sweep at
    seq 1999 says 40,991. P = 100, G = 3000: 563,200 (149,321) against 3,177,984 (26,462):
    the last decode step is the limit."""
    left = int(CAPACITY - WORKSPACE - 2_086_912)
    assert left == 84_097_981_952
    for prompt, generate, limit, step in ((1000, 1000, 14_932, "prefill"),
                                          (100, 3000, 26_462, "decode")):
        prefill, last = 5632 * prompt, 1024 * (prompt + generate - 1) + 4608
        assert limit == left // max(prefill, last)
        s = sweep(tiny, A100, [1, limit, limit + 1], prompt=prompt, generate=generate)
        assert s.max_batch == limit
        points = s.to_dict()["points"]
        assert [p["fits"] for p in points] == [True, True, False]  # not dropped: marked
        assert points[1]["generation"]["memory_step"] == step
        assert points[1]["memory_bytes"] == 2_086_912 + WORKSPACE + limit * max(prefill, last)
        # a decode sweep at the last step's seq judges that step alone
        decode = sweep(tiny, A100, [1], seqs=prompt + generate - 1, phase="decode")
        assert decode.max_batch == left // last
    table = sweep(tiny, A100, [1, 14_933], prompt=1000, generate=1000)
    from roofline.output.whatif_sweep import sweep_table

    text = sweep_table(table)
    assert ("memory at the generation's peak, the prefill (1000 tokens a sequence): the whole "
            "generation fits up to batch 14932") in text
    row = next(line for line in text.splitlines() if line.startswith("14933 "))
    # 2,086,912 + 10^9 + 14,933 x 5,632,000 = 85,104,642,912 B, over 85,100,068,864
    assert row.endswith("85.1 GB: does not fit                99%")  # marked, not dropped


@pytest.mark.parametrize("batches", [[1, 8, 64], [256]])
def test_each_sweep_point_is_analyze_s_generation(batches):
    """Llama-2-7B on an H100, prompt 1024 + 256: each point's generation, memory and step
    equal analyze's at that batch (batch 64 and 256 do not fit, and are still points)."""
    s = sweep(LLAMA, "h100", batches, prompt=1024, generate=256)
    for point in s.to_dict()["points"]:
        report = analyze_model(LLAMA, "h100", batch=point["batch"], prompt=1024, generate=256)
        assert point["generation"] == report.generation.to_dict()
        assert point["memory_bytes"] == report.memory.total_bytes
        assert point["fits"] == report.memory.fits
        assert point["time_s"] == report.totals["time_s"]
    assert s.max_batch == report.memory.max_batch


def test_compare_runs_each_device_s_generation():
    """Each device's generation is analyze's; the speedup is of tokens/s (latency over
    latency); the step figures (time_s, speedup) are the last decode step's; the verdict says
    it compares the whole generation."""
    c = compare(LLAMA, ["h100", A100], batch=8, prompt=1024, generate=256)
    data = c.to_dict()
    assert (data["prompt"], data["generate"], data["point_step"]) == (1024, 256, "last-decode")
    for device in data["devices"]:
        report = analyze_model(LLAMA, device["hardware"], batch=8, prompt=1024, generate=256)
        g = report.generation.to_dict()
        assert {k: device["generation"][k] for k in g} == g
        assert device["time_s"] == report.totals["time_s"]
    h100, a100 = (d["generation"] for d in data["devices"])
    assert a100["speedup"] == pytest.approx(h100["latency_s"] / a100["latency_s"])
    assert a100["speedup"] == pytest.approx(a100["tokens_per_s"] / h100["tokens_per_s"])
    from roofline.output.whatif import comparison_dict, comparison_table

    verdict = comparison_dict(c)["verdict"]
    assert verdict.startswith("h100-sxm5-80gb (the baseline) stays fastest over the whole "
                              "generation (prompt 1024 + 256 tokens, batch 8)")
    table = comparison_table(c)
    assert "the step and GEMM tables: the last decode step (KV cache 1279 tokens)" in table
    assert "TTFT" in table and "tokens/s" in table


def test_cli_sweep_and_compare_of_generations(invoke, tmp_path):
    args = [LLAMA, "--hw", "h100", "--prompt", "1024", "--generate", "256"]
    data = json.loads(invoke("sweep", *args, "--batch", "1,8", "--format", "json").stdout)
    assert [p["generation"]["batch"] for p in data["points"]] == [1, 8]
    assert {"batch", "time_s", "samples_per_s", "memory_bound_time_fraction",
            "gemms"} <= set(data["points"][0]) and "transitions" in data
    rows = list(csv.DictReader(io.StringIO(invoke("sweep", *args, "--batch", "1,8",
                                                  "--format", "csv").stdout)))
    assert float(rows[0]["tokens_per_s"]) == pytest.approx(
        data["points"][0]["generation"]["tokens_per_s"])
    for fmt in ("table", "markdown", "html"):
        assert invoke("sweep", *args, "--batch", "1,8", "--format", fmt).exit_code == 0
    compared = json.loads(invoke("compare", *args, "--hw", A100, "--batch", "8",
                                 "--format", "json").stdout)
    assert [d["generation"]["batch"] for d in compared["devices"]] == [8, 8]
    for fmt in ("table", "markdown", "csv", "html"):
        assert invoke("compare", *args, "--hw", A100, "--batch", "8",
                      "--format", fmt).exit_code == 0


@pytest.mark.parametrize("command, extra", [("sweep", ("--batch", "1,2")),
                                            ("compare", ("--hw", A100, "--batch", "2"))])
@pytest.mark.parametrize("options, message", [
    (["--prompt", "4000", "--generate", "200"],
     "prompt: prompt 4000 + generate 200 = 4200 tokens is longer than the model's context "
     "(4096 tokens)"),
    (["--prompt", "10"], "generate: a generation needs both a prompt length and an output"),
    (["--generate", "10"], "prompt: a generation needs both a prompt length and an output"),
    (["--prompt", "10", "--generate", "5", "--phase", "decode"],
     "phase: a generation (prompt and generate) runs its prefill and decode steps itself"),
    (["--prompt", "10", "--generate", "5", "--mode", "train"],
     "mode: a generation (prompt and generate) is an inference"),
])
def test_refusals_are_analyze_s_one_line_exit_2(invoke, command, extra, options, message):
    result = invoke(command, LLAMA, "--hw", "h100", *extra, *options)
    assert result.exit_code == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_seq_with_a_generation_is_refused(invoke):
    result = invoke("sweep", LLAMA, "--hw", "h100", "--batch", "1", "--seq", "64,128",
                    "--prompt", "10", "--generate", "5")
    assert result.exit_code == 2 and len(result.stderr.strip().splitlines()) == 1
    assert "seq: a generation sets the sequence lengths" in result.stderr
    with pytest.raises(InputError, match="seq: a generation sets the sequence lengths"):
        sweep(LLAMA, "h100", 1, seqs=64, prompt=10, generate=5)


def test_repr_and_charts_say_it_is_a_generation(tmp_path):
    s = sweep(LLAMA, "h100", [1, 128], prompt=1024, generate=256)
    c = compare(LLAMA, ["h100", A100], batch=8, prompt=1024, generate=256)
    assert repr(s) == ("<Sweep llama-2-7b on h100-sxm5-80gb: generations of prompt 1024 + 256, "
                       "batch 1..128 (2); 2 points>")
    assert repr(c).endswith("a generation of prompt 1024 + 256>")
    assert "output tokens per second by batch" in s._repr_html_()
    assert "the whole generation on each device" in c._repr_html_()
    ax = s.plot()
    labels = [line.get_label() for line in ax.get_lines()]
    assert "tokens/s, roofline" in labels
    bands = [a.get_label() for a in ax.get_children() if a.get_gid() == "sweep-no-fit"]
    assert bands == [f"the generation does not fit in memory (batch > {s.max_batch})"]
    bars = c.plot()  # each device's latency: its prefill and its decode steps
    assert "roofline latency of the whole generation" in bars.get_xlabel()
    assert {"bars-ttft", "bars-decode"} <= {a.get_gid() for a in bars.patches}
