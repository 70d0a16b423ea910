"""Generation: TTFT, TPOT, tokens/s and latency against hand arithmetic; the closed-form sum of
the decode steps against the steps one by one; bad lengths as one line, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from roofline import analyze_model
from roofline.analysis.report import analyze
from roofline.errors import InputError
from roofline.model.network import load_network

LLAMA = "examples/hf/llama-2-7b.json"
A100 = "a100-sxm4-80gb"
PEAK, BW = 312e12, 2039e9  # A100 SXM4 80GB: dense fp16 FLOP/s, HBM bytes/s
H, FFN, VOCAB, LAYERS = 4096, 11008, 32000, 32


@pytest.fixture(autouse=True)
def _root(monkeypatch):
    monkeypatch.chdir(Path(__file__).parent.parent)


def roof(flops, nbytes):
    """An item's roofline time: max(FLOPs / peak, bytes / bandwidth)."""
    return max(flops / PEAK, nbytes / BW)


def gemm(m, n, k):
    """A fp16 GEMM: 2mnk FLOPs, 2 (mk + kn + mn) bytes."""
    return roof(2 * m * n * k, 2 * (m * k + k * n + m * n))


def test_ttft_by_hand_llama_2_7b_prompt_1024():
    """Batch 1, prompt 1024: one prefill step; the output layer on the last token only."""
    t = 1024
    block = (2 * roof(4 * t * H, 2 * t * H * 2)            # two rmsnorms: 4 FLOPs, read + write
             + gemm(t, 3 * H, H)                            # qkv
             + roof(3 * t * 2 * H, 2 * t * 2 * H * 2)       # rotary on q and k: 3 FLOPs, r + w
             + roof(0, t * 2 * H * (2 + 2))                 # K and V into the cache: r + w
             # causal flash attention: 4 x heads x q x s x head_dim / 2; reads Q, K, V, writes O
             + roof(4 * 32 * t * t * 128 // 2, t * 4 * H * 2)
             + gemm(t, H, H)                                # proj
             + 2 * roof(t * H, 3 * t * H * 2)               # two residual adds
             + gemm(t, 2 * FFN, H)                          # ffn_up (gated: 2 x ffn)
             + roof(4 * t * FFN, 2 * t * FFN * 2)           # silu
             + roof(t * FFN, 3 * t * FFN * 2)               # gate product
             + gemm(t, H, FFN))                             # ffn_down
    embedding = roof(0, 2 * t * H * 2 + t * 8)  # gather: read and write rows, int64 ids
    final_norm = roof(4 * t * H, 2 * t * H * 2)
    lm_head = gemm(1, VOCAB, H)  # last-token logits: M = batch = 1
    ttft = LAYERS * block + embedding + final_norm + lm_head
    report = analyze_model(LLAMA, A100, batch=1, prompt=1024, generate=3)
    assert report.generation.ttft_s == pytest.approx(ttft, rel=1e-12)
    # scoring (every token's logits) costs the full lm_head: M = 1024
    scoring = analyze_model(LLAMA, A100, batch=1, prompt=1024, generate=3, logits="all")
    assert scoring.generation.ttft_s == pytest.approx(ttft - lm_head + gemm(t, VOCAB, H),
                                                      rel=1e-12)


def decode_bytes(s):
    """One decode step's bytes at batch 1 with s keys (everything is memory-bound there)."""
    gemms = sum(2 * (k + k * n + n) for n, k in ((3 * H, H), (H, H), (2 * FFN, H), (H, FFN)))
    ops = (2 * 2 * H * 2                  # two rmsnorms
           + 2 * 2 * H * 2                # rotary on q and k: read, write
           + 2 * H * (2 + 2)              # the new K and V into the cache: read, write
           + (2 * H + s * 2 * H) * 2      # flash attention: Q and O, then K and V of s keys
           + 2 * 3 * H * 2                # two residual adds
           + 2 * FFN * 2 + 3 * FFN * 2)   # silu, gate
    head = (2 * H * 2 + 8) + 2 * H * 2 + 2 * (H + H * VOCAB + VOCAB)  # embed, norm, lm_head
    return LAYERS * (gemms + ops) + head


def test_tpot_by_hand_over_the_growing_kv_cache():
    """Prompt 1024, 3 tokens: the prefill gives the first, then 2 decode steps with 1025 and
    1026 keys; all memory-bound at batch 1, so each step takes its bytes / bandwidth."""
    report = analyze_model(LLAMA, A100, batch=1, prompt=1024, generate=3)
    g = report.generation
    steps = [decode_bytes(1025) / BW, decode_bytes(1026) / BW]
    assert g.tpot_s == pytest.approx(sum(steps) / 2, rel=1e-12)
    assert g.latency_s == pytest.approx(g.ttft_s + sum(steps), rel=1e-12)
    assert g.tokens_per_s == pytest.approx(1 * 3 / g.latency_s)
    assert g.tokens_per_s_per_sequence == pytest.approx(3 / g.latency_s)
    # the table and JSON show the last decode step: 1026 keys
    assert report.network.seq == 1026 and report.network.step_phase == "decode"


@pytest.mark.parametrize("attention, batch", [("flash", 4), ("naive", 2), ("flash", 256)])
def test_decode_sum_equals_the_steps_one_by_one(attention, batch):
    """The closed-form sum against analyzing every decode step (batch 256 puts some GEMMs on
    the compute side)."""
    prompt, count = 100, 9
    report = analyze_model(LLAMA, "h100", batch=batch, prompt=prompt, generate=count,
                           attention=attention)
    net = load_network(LLAMA).with_overrides(batch=batch, mode="inference", phase="decode",
                                             attention=attention)
    spec = report.hardware
    steps = sum(analyze(net.with_overrides(seq=prompt + i), spec).totals["time_s"]
                for i in range(1, count))
    assert report.generation.decode_s == pytest.approx(steps, rel=1e-9)


def test_one_output_token_is_the_prefill_alone():
    report = analyze_model(LLAMA, A100, batch=2, prompt=64, generate=1)
    g = report.generation
    assert g.tpot_s is None and g.latency_s == g.ttft_s
    assert report.network.step_phase == "prefill" and report.network.logits == "last"


def test_generation_json_and_table(invoke):
    args = [LLAMA, "--hw", A100, "--batch", "8", "--prompt", "1024", "--generate", "256"]
    data = json.loads(invoke("analyze", *args, "--format", "json").stdout)
    g = data["generation"]
    assert {"ttft_s", "tpot_s", "tokens_per_s", "latency_s"} <= set(g)
    assert g["latency_s"] == pytest.approx(g["ttft_s"] + 255 * g["tpot_s"])
    assert g["tokens_per_s"] == pytest.approx(8 * 256 / g["latency_s"])
    assert g["kv_cache_tokens"] == [1025, 1279] and data["seq"] == 1279
    table = " ".join(invoke("analyze", *args).stdout.split())
    assert "generation: prompt 1024 + 256 tokens, batch 8: time to first token" in table
    assert "mean of 255 decode steps, KV cache 1025 to 1279 tokens" in table
    # two tokens: one decode step, over a cache of prompt + 1 = 1025 tokens
    two = " ".join(invoke("analyze", *args[:-1], "2").stdout.split())
    assert "mean of 1 decode step, KV cache 1025 tokens)" in two


@pytest.mark.parametrize("options, message", [
    (["--prompt", "4000", "--generate", "200"],
     "prompt: prompt 4000 + generate 200 = 4200 tokens is longer than the model's context "
     "(4096 tokens)"),
    (["--prompt", "10"], "generate: a generation needs both a prompt length and an output"),
    (["--prompt", "10", "--generate", "5", "--seq", "64"],
     "seq: a generation sets the sequence lengths"),
])
def test_bad_lengths_are_one_line_and_exit_2(invoke, options, message):
    result = invoke("analyze", LLAMA, "--hw", A100, "--batch", "1", *options)
    assert result.exit_code == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_prefill_keeps_every_tokens_logits_unless_asked():
    """Plain analyze is unchanged (scoring: all logits); --logits last shrinks the output
    layer to one row per sequence."""
    plain = analyze_model(LLAMA, A100, batch=2, seq=128, mode="inference")
    last = analyze_model(LLAMA, A100, batch=2, seq=128, mode="inference", logits="last")
    head = [r.gemm for r in plain.results if r.gemm.layer == "lm_head"][0]
    head_last = [r.gemm for r in last.results if r.gemm.layer == "lm_head"][0]
    assert (head.m, head_last.m) == (2 * 128, 2)


@pytest.mark.parametrize("command, extra", [
    ("analyze", ()), ("sweep", ("--batch", "1,2")), ("compare", ("--hw", "h100")),
])
@pytest.mark.parametrize("logits", ["last", "all"])
def test_logits_in_a_decode_step_is_refused_naming_both_options(invoke, command, extra,
                                                                 logits):
    """A decode step makes one token a sequence, so the output layer has one row a sequence
    whatever --logits says (its GEMM's M is the batch): --logits there changes nothing, and is
    refused as --kv-cache in training is, one line naming both options, exit 2."""
    result = invoke(command, LLAMA, "--hw", A100, *extra, "--batch", "2", "--seq", "128",
                    "--mode", "inference", "--phase", "decode", "--logits", logits)
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        f"Error: {LLAMA}: logits: --logits is a prefill setting (every token's logits or each "
        "sequence's last), but the step decodes (--phase decode: one new token a sequence, its "
        "logits alone): give --phase prefill, or leave --logits out"]


def test_logits_is_still_a_prefill_and_generation_setting(tmp_path):
    """Decode's output layer: M = batch = 2 rows, as --logits last gives a prefill. --logits
    goes on with a prefill and a generation, even of a model file whose own phase is decode
    (the generation runs its own phases); the library names the keywords."""
    decode = analyze_model(LLAMA, A100, batch=2, seq=128, mode="inference", phase="decode")
    assert [r.gemm.m for r in decode.results if r.gemm.layer == "lm_head"] == [2]
    with pytest.raises(InputError, match=r"llama-2-7b.json: logits: logits=\.\.\. is a "
                                         r"prefill setting.*give phase='prefill'"):
        analyze_model(LLAMA, A100, batch=2, seq=128, mode="inference", phase="decode",
                      logits="last")
    model = tmp_path / "decoder.yaml"
    model.write_text("batch: 2\nseq: 64\ndtype: fp16\nmode: inference\nphase: decode\n"
                     "layers:\n  - {type: transformer, hidden: 256, heads: 4, causal: true}\n"
                     "  - {type: linear, in: 256, out: 1000}\n")
    scored = analyze_model(model, A100, logits="all", prompt=32, generate=4)
    assert scored.generation is not None and scored.generation.logits == "all"
    # the prefill of 32 tokens kept every token's logits: its output layer had 2 x 32 rows
    head = [r.gemm for r in scored.generation.prefill.results if r.gemm.layer == "fc2"]
    assert [g.m for g in head] == [64]


@pytest.mark.parametrize("attention", ["flash", "naive"])
def test_predicted_times_are_the_steps_predictions(attention):
    """Predicted TTFT is the prefill step's predicted time; the decode steps are summed by the
    trapezoid rule from the first and last step's predicted times, each analyzed on its own
    here; on H100 flash decode attention is a launch plus its bytes, affine in the keys, so the
    rule matches the steps one by one (naive attention's GEMMs step with tiles and waves:
    within 2%)."""
    prompt, count = 100, 9
    report = analyze_model(LLAMA, "h100", batch=4, prompt=prompt, generate=count,
                           attention=attention)
    g = report.generation
    net = load_network(LLAMA).with_overrides(batch=4, mode="inference", attention=attention)
    spec = report.hardware
    prefill = analyze(net.with_overrides(phase="prefill", seq=prompt, logits="last"), spec)
    assert g.predicted_ttft_s == prefill.totals["predicted_time_s"]
    steps = [analyze(net.with_overrides(phase="decode", seq=prompt + i), spec)
             .totals["predicted_time_s"] for i in range(1, count)]
    assert g.predicted_tpot_s == pytest.approx((steps[0] + steps[-1]) / 2, rel=1e-12)
    assert g.predicted_decode_s == pytest.approx(sum(steps),
                                                 rel=1e-9 if attention == "flash" else 0.02)
    assert g.predicted_latency_s == pytest.approx(g.predicted_ttft_s + sum(steps), rel=0.02)
    assert g.predicted_tokens_per_s == pytest.approx(4 * count / g.predicted_latency_s)
    # a prediction is never under the roofline bound it refines
    assert g.predicted_ttft_s >= g.ttft_s and g.predicted_tpot_s >= g.tpot_s


def test_predicted_generation_in_json_and_table(invoke):
    args = [LLAMA, "--hw", "h100", "--batch", "8", "--prompt", "1024", "--generate", "256"]
    g = json.loads(invoke("analyze", *args, "--format", "json").stdout)["generation"]
    assert g["predicted_latency_s"] == pytest.approx(
        g["predicted_ttft_s"] + 255 * g["predicted_tpot_s"])
    assert g["predicted_tokens_per_s"] == pytest.approx(8 * 256 / g["predicted_latency_s"])
    table = invoke("analyze", *args).stdout
    assert "predicted: time to first token" in " ".join(table.split())
    one = json.loads(invoke("analyze", LLAMA, "--hw", "h100", "--batch", "1", "--prompt", "64",
                            "--generate", "1", "--format", "json").stdout)["generation"]
    assert one["predicted_tpot_s"] is None
    assert one["predicted_latency_s"] == one["predicted_ttft_s"]


def test_decode_steps_across_a_sliding_window_one_by_one(tmp_path):
    """A windowed block's decode step grows with the KV cache up to its window and stays put
    beyond it: the steps are summed in two pieces, here against every step analyzed on its
    own (Mistral's blocks with a window of 110, prompt 100, 29 decode steps over KV 101..129),
    roofline and predicted (a GPU's decode attention is affine in the keys on each piece)."""
    mistral = json.loads(Path("examples/hf/mistral-7b.json").read_text())
    assert mistral["sliding_window"] == 4096
    path = tmp_path / "mistral-window-110.json"
    path.write_text(json.dumps(mistral | {"sliding_window": 110}))
    net = load_network(path)
    prompt, count = 100, 30
    report = analyze_model(net, "h100", batch=4, prompt=prompt, generate=count)
    g = report.generation
    decode = net.with_overrides(batch=4, mode="inference", phase="decode")
    spec = report.hardware
    steps = [analyze(decode.with_overrides(seq=prompt + i), spec).totals
             for i in range(1, count)]
    assert g.decode_s == pytest.approx(sum(t["time_s"] for t in steps), rel=1e-9)
    assert g.predicted_decode_s == pytest.approx(sum(t["predicted_time_s"] for t in steps),
                                                 rel=1e-9)
    # KV 109 < KV 110 = the window; KV 111 and 129 read its 110 keys too
    assert steps[8]["time_s"] < steps[9]["time_s"] == steps[10]["time_s"] == steps[-1]["time_s"]


def test_the_batch_advice_says_the_batch_the_whole_generation_fits():
    """With Mistral's window the cache stops growing at 4096 tokens, and a 6000-token prompt's
    prefill fits fewer sequences than the last decode step: the memory line and every GEMM's
    'at most batch N fits' say the same N, the smaller."""
    report = analyze_model("examples/hf/mistral-7b.json", "h100", batch=2, prompt=6000,
                           generate=4000)
    limit = report.memory.max_batch
    prefill = report.generation.prefill.memory.max_batch
    assert limit == prefill and limit is not None
    told = {r.batch_advice.max_batch for r in report.results
            if r.batch_advice is not None and r.batch_advice.max_batch is not None}
    assert told == {limit}
    said = [text for r in report.results for text in r.advice if "fits" in text]
    assert said and all(f"at most batch {limit} fits" in text for text in said)


def test_a_generation_fills_the_context_and_the_help_says_why_seq_only_warns(invoke):
    # Llama-2-7B's context is 4096: a prompt of 4000 and 96 new tokens use positions 1..4096,
    # one more is a position the model has not; a --seq past it is a shape, only warned of
    base = ("analyze", LLAMA, "--hw", A100, "--batch", "1", "--prompt", "4000", "--generate")
    assert invoke(*base, "96").exit_code == 0
    assert "4097 tokens is longer than the model's context (4096 tokens)" in invoke(
        *base, "97").stderr
    seq = invoke("analyze", LLAMA, "--hw", A100, "--batch", "1", "--seq", "4097",
                 "--mode", "inference")
    assert seq.exit_code == 0 and "seq 4097 is past the model's context" in seq.stdout
    helps = " ".join(invoke("analyze", "--help").stdout.split())
    assert "Past the model's context the step is still analyzed, with a warning" in helps
    assert "P + G must fit the model's context" in helps


def test_a_one_token_prompt_reads_one_token(invoke):
    """A prompt of 1 read "the prefill (1 tokens a sequence)"; the generation of one token is
    its prefill alone, so that step is the memory line's."""
    out = invoke("analyze", "examples/hf/llama-2-7b.json", "--hw", "h100", "--batch", "4",
                 "--prompt", "1", "--generate", "1").output
    text = " ".join(out.split())
    assert "the prefill (1 token a sequence)" in text and "(1 tokens" not in text
