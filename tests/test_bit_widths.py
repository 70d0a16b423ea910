"""Separate bit widths for weights, activations and the KV cache: bytes, peaks and memory against
hand arithmetic; bad combinations as one line, exit 2."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from roofline import analyze_model

LLAMA = "examples/hf/llama-2-7b.json"
A100 = "a100-sxm4-80gb"
H, FFN, VOCAB, LAYERS = 4096, 11008, 32000, 32


@pytest.fixture(autouse=True)
def _root(monkeypatch):
    monkeypatch.chdir(Path(__file__).parent.parent)


def _decode(**options):
    return analyze_model(LLAMA, A100, batch=1, seq=1024, mode="inference", phase="decode",
                         **options)


def _w4(k, n):
    """int4 B of k x n: half a byte per value, plus one fp16 scale per 128 values."""
    return k * n // 2 + k * n // 128 * 2


def test_w4a16_decode_step_bytes_with_group_size_128():
    report = _decode(weights="int4", group_size=128)
    # per block at batch 1 (M = 1), fp16 A and C:
    # (k, n): qkv 4096 x 12288, proj 4096 x 4096, ffn_up 4096 x 22016, ffn_down 11008 x 4096
    shapes = [(H, 3 * H), (H, H), (H, 2 * FFN), (FFN, H)]
    block = sum(2 * k + _w4(k, n) + 2 * n for k, n in shapes)
    # qkv: 8,192 + 25,165,824 + 786,432 + 24,576 = 25,985,024
    assert 2 * H + _w4(H, 3 * H) + 2 * 3 * H == 25_985_024
    # the LM head stays fp16 under --weights (vLLM quantizes LinearBase layers, not its
    # ParallelLMHead: model.lm_head): A 2 h, B 2 h V, C 2 V
    lm_head = 2 * H + 2 * H * VOCAB + 2 * VOCAB
    gemm_bytes = LAYERS * block + lm_head
    assert sum(r.gemm.bytes for r in report.results) == gemm_bytes
    first = report.results[0].gemm
    assert first.bytes == 25_985_024 and first.bytes_by_operand == {
        "a": 8_192, "b": 25_165_824 + 786_432, "c": 24_576}
    # ops per block, fp16, one token, KV cache of 1024 tokens: two rmsnorms (read, write h),
    # the rotary embedding (read, write q and k: 2 x 4096), the new K and V into the cache
    # (read, write 2 x 4096), flash attention (Q and O: 2 x 4096; K and V: 1024 x 2 x 4096),
    # two residual adds (read 2, write 1), silu (read, write ffn) and the gate (read 2, write
    # 1 x ffn)
    ops = (2 * 2 * H * 2 + 2 * 2 * H * 2 + 2 * 2 * H * 2 + (2 * H + 1024 * 2 * H) * 2
           + 2 * 3 * H * 2 + 2 * FFN * 2 + 3 * FFN * 2)
    # embedding gather: read a row, write a row, one int64 id; the final rmsnorm
    head = 2 * H * 2 + 8 + 2 * H * 2
    assert report.totals["bytes"] == gemm_bytes + LAYERS * ops + head


def test_w4a16_weights_in_memory():
    # the blocks' matrices 6,476,005,376 at 0.5 B plus their scales; the LM head (131,072,000,
    # kept fp16 as vLLM keeps it), embedding and norms at 2 B
    matrices = LAYERS * (H * 3 * H + H * H + H * 2 * FFN + FFN * H)
    assert matrices == 6_476_005_376
    rest = 6_738_415_616 - matrices  # LM head and embedding 2 x 131,072,000 + norms 266,240
    expected = matrices // 2 + matrices // 128 * 2 + rest * 2
    assert expected == 3_864_010_752
    assert _decode(weights="int4").memory.weights == expected


def test_weight_only_math_runs_at_the_activations_peak_and_counts_the_dequantization():
    result = _decode(weights="int4").results[0]
    g = result.gemm
    assert (g.dtype, g.stored_b, g.c_dtype) == ("fp16", "int4", "fp16")
    assert g.flops == 2 * 12288 * 4096
    assert g.dequant_flops == 2 * 4096 * 12288  # convert and scale each weight once
    # time = max(work / fp16 peak, bytes / bandwidth) = max(201.3 MFLOP / 312 T, 26 MB / 2039 G)
    assert result.time_s == pytest.approx(max((g.flops + g.dequant_flops) / 312e12,
                                              25_985_024 / 2039e9))
    data = _decode(weights="int4").to_dict()
    assert data["weights"] == "int4" and data["group_size"] == 128
    assert data["gemms"][0]["b_dtype"] == "int4"
    assert data["gemms"][0]["dequant_flops"] == 100_663_296


def test_w4a16_batch_advice_counts_the_dequantization():
    g = _decode(weights="int4").results[0]
    ridge = 312e12 / 2039e9
    # (2 n k B + 2 n k) / (2 k B + B bytes + 2 n B) >= R, k = 4096, n = 12288:
    # B >= (R x 25,952,256 - 100,663,296) / (100,663,296 - R x 32,768)
    nk2 = 2 * 12288 * 4096
    expected = math.ceil((ridge * _w4(4096, 12288) - nk2) / (nk2 - ridge * (2 * 4096 + 2 * 12288)))
    assert g.min_compute_bound_batch == expected


def test_w8a8_runs_at_the_int8_peak_and_attention_stays_fp16():
    report = analyze_model(LLAMA, A100, batch=8, seq=1024, mode="inference", phase="decode",
                           weights="int8", activations="int8", attention="naive")
    qkv = report.results[0]
    assert (qkv.gemm.dtype, qkv.gemm.stored_b, qkv.gemm.c_dtype) == ("int8", "int8", "fp16")
    assert qkv.gemm.dequant_flops == 0
    # A 8 x 4096 int8, B 4096 x 12288 int8, C 8 x 12288 fp16
    assert qkv.gemm.bytes == 8 * 4096 + 4096 * 12288 + 2 * 8 * 12288
    scores = next(r.gemm for r in report.results if r.gemm.layer.endswith("scores"))
    assert scores.dtype == "fp16"
    assert report.to_dict()["activations"] == "int8"


def test_fp8_kv_cache_halves_the_cache_and_its_reads():
    fp16, fp8 = _decode(), _decode(kv_cache="fp8")
    assert fp16.memory.kv_cache == 1024 * 524_288
    assert fp8.memory.kv_cache == 1024 * 524_288 // 2
    attn16 = next(o.op for o in fp16.ops if o.op.kind == "flash-attention")
    attn8 = next(o.op for o in fp8.ops if o.op.kind == "flash-attention")
    # Q and O fp16 (2 x 4096 x 2 B); K and V of 1024 tokens at 2 B, then 1 B
    assert attn16.bytes == 2 * 4096 * 2 + 1024 * 2 * 4096 * 2
    assert attn8.bytes == 2 * 4096 * 2 + 1024 * 2 * 4096 * 1
    # dequantizing K and V: 2 FLOPs per element
    assert attn8.flops == attn16.flops + 2 * 1024 * 2 * 4096


def test_model_yaml_takes_the_bit_widths(tmp_path):
    model = tmp_path / "m.yaml"
    model.write_text("batch: 4\ndtype: fp16\nmode: inference\nweights: int4\ngroup_size: 64\n"
                     "kv_cache: fp8\nmlp: [1024, 4096]\n")
    g = analyze_model(model, A100).results[0].gemm
    assert (g.stored_b, g.group_size) == ("int4", 64)
    assert g.bytes_by_operand["b"] == 1024 * 4096 // 2 + 1024 * 4096 // 64 * 2


@pytest.mark.parametrize("options, message", [
    (["--weights", "int4", "--group-size", "100"],
     "group_size: group size 100 does not divide qkv.in (4096) of layer 'blk.1.qkv'"),
    (["--weights", "int8", "--group-size", "64"],
     "group_size: a group size needs group-quantized weights (int4); the weights are int8"),
    (["--weights", "fp16", "--activations", "int8"],
     "weights: fp16 weights cannot meet int8 activations"),
    (["--activations", "fp8"],
     "a100-sxm4-80gb cannot run fp8 activations: its entry has no fp8 peak"),
    (["--weights", "int4", "--mode", "train"],
     "int4 weights with fp16 activations are modelled for inference only"),
])
def test_bad_bit_widths_are_one_line_and_exit_2(invoke, options, message):
    args = [LLAMA, "--hw", A100, "--batch", "1", "--seq", "64", "--mode", "inference", *options]
    result = invoke("analyze", *args)
    assert result.exit_code == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_precision_line_names_each_width(invoke, tmp_path):
    out = invoke("analyze", LLAMA, "--hw", A100, "--batch", "1", "--seq", "64", "--mode",
                 "inference", "--weights", "int4", "--kv-cache", "fp8").stdout
    assert ("precision: weights int4-g128 (fp16 scales) x activations fp16 -> C fp16; embedding "
            "and LM head fp16 (vLLM quantizes neither); KV cache fp8; rest fp16") in out
    plain = json.loads(invoke("analyze", LLAMA, "--hw", A100, "--batch", "1", "--seq", "64",
                              "--format", "json").stdout)
    assert (plain["weights"], plain["activations"], plain["kv_cache"]) == ("fp16",) * 3
    assert plain["group_size"] is None
    # a model without attention keeps no KV cache: its line names none, whatever kv_cache says
    model = tmp_path / "mlp.yaml"
    model.write_text("batch: 8\ndtype: fp16\nmode: inference\nkv_cache: fp8\nweights: int8\n"
                     "mlp: [64, 128, 64]\n")
    mlp = invoke("analyze", str(model), "--hw", A100).stdout
    assert ("precision: weights int8 (scales not counted) x activations fp16 -> C fp16; "
            "rest fp16") in mlp


def test_the_total_flops_count_a_weight_formats_dequantization_as_an_fp8_caches():
    """An fp8 KV cache's dequantization was in totals.flops (inside its attention op) and an int4
    weight's was not. By hand: 2 FLOPs a stored weight element, the 32 blocks' qkv, proj and
    FFN (the LM head stays fp16: nothing to dequantize): 2 x 32 x (4096 x 12288 + 4096^2 +
    4096 x 22016 + 11008 x 4096) = 2 x 6,476,005,376."""
    matrices = LAYERS * (H * 3 * H + H * H + H * 2 * FFN + FFN * H)
    assert matrices == 6_476_005_376
    plain, int4 = _decode().totals, _decode(weights="int4").totals
    assert int4["gemm_flops"] == plain["gemm_flops"]  # 2MNK: the format changes no product
    assert int4["flops"] - plain["flops"] == 2 * matrices


@pytest.mark.parametrize("weights", ["int4", "int8", "fp8"])
def test_a_tied_output_layer_reads_the_embedding_as_memory_stores_it(weights):
    """GPT-2 ties its output layer to the token embedding: one 50257 x 768 table, which memory
    keeps at the model's dtype (embeddings are not in a weight format; GPTQ and AWQ leave them
    in 16 bits). The logits GEMM reads that table, 768 x 50257 x 2 B = 77,194,752 B in fp16,
    not a quantized copy no one stores (int4: 768 x 50257 / 2 + 768 x 50257 / 128 x 2 =
    19,901,772 B, 57 MB a decode step short). Memory by hand: the 12 blocks' matrices, 12 x
    (768 x 2304 + 768 x 768 + 2 x 768 x 3072) = 84,934,656 values in the format, every other
    parameter (124,439,808 in all) at 2 B."""
    matrices, others = 84_934_656, 124_439_808 - 84_934_656
    stored = {"int4": matrices // 2 + matrices // 128 * 2, "int8": matrices,
              "fp8": matrices}[weights]
    report = analyze_model("examples/hf/gpt2.json", "h100", batch=1, seq=512, dtype="fp16",
                           mode="inference", phase="decode", weights=weights)
    assert report.memory is not None and report.memory.weights == stored + 2 * others
    (head,) = [r.gemm for r in report.results if r.gemm.layer == "lm_head"]
    assert head.bytes_by_operand["b"] == 768 * 50257 * 2 == 77_194_752
    assert (head.dtype, head.b_dtype, head.dequant_flops) == ("fp16", "", 0)
    # a block's projections stay in the format
    (qkv,) = [r.gemm for r in report.results if r.gemm.layer == "blk.1.qkv"]
    assert qkv.b_dtype == weights


def test_naive_attention_dequantizes_a_shared_kv_head_once():
    """Mistral-7B (32 query heads sharing 8 KV heads, head_dim 128) decodes with naive
    attention against an fp8 cache of 2048 tokens, batch 16: scores reads K, 16 x 8 x 2048 x
    128 = 33,554,432 fp8 values (1 B each: its B bytes), and dequantizes each once, 2 FLOPs a
    value, 67,108,864 FLOPs, as flash attention's op counts it; not once per query head that
    reads it (4 x: 268,435,456, as many FLOPs as the product itself, 2 x 1 x 2048 x 128 x 512).
    The same for context's V."""
    report = analyze_model("examples/hf/mistral-7b.json", "h100", batch=16, seq=2048,
                           mode="inference", phase="decode", attention="naive",
                           kv_cache="fp8")
    scores, context = (next(r.gemm for r in report.results if r.gemm.layer == f"blk.1.{name}")
                       for name in ("scores", "context"))
    kv = 16 * 8 * 2048 * 128
    for g in (scores, context):
        assert g.b_dtype == "fp8" and g.bytes_by_operand["b"] == kv == 33_554_432
        assert g.flops == 2 * 1 * 2048 * 128 * 16 * 32 == 268_435_456
        assert g.dequant_flops == 2 * kv == 67_108_864


def test_a_gemm_just_under_the_ridge_by_its_flops_says_its_dequantization_binds_it(invoke):
    # Llama-2-7B's QKV at batch 41, int4 B: 2 x 41 x 12288 x 4096 = 4,127,195,136 FLOPs over
    # 41 x 4096 x 2 + _w4(4096, 12288) + 41 x 12288 x 2 = 27,295,744 bytes: 151.2 FLOP/B,
    # under the A100's ridge of 153.0; with B's dequantization, 2 x 12288 x 4096 more FLOPs,
    # 154.9, over it: compute-bound, which the report now says beside the column
    g = analyze_model(LLAMA, A100, batch=41, seq=2047, mode="inference", phase="decode",
                      weights="int4").results[0]
    assert g.gemm.bytes == 41 * 4096 * 2 + _w4(4096, 12288) + 41 * 12288 * 2 == 27_295_744
    assert round(g.gemm.intensity, 1) == 151.2 and g.bound == "compute"
    out = invoke("analyze", LLAMA, "--hw", A100, "--batch", "41", "--seq", "2047", "--mode",
                 "inference", "--phase", "decode", "--weights", "int4", "--gemms-only").stdout
    assert " ".join(out.split()).count(
        "over its bytes: MM1 151.2 FLOP/B in the column, 154.9 with it") == 1
    plain = invoke("analyze", LLAMA, "--hw", A100, "--batch", "41", "--seq", "2047",
                   "--mode", "inference", "--phase", "decode", "--gemms-only").stdout
    assert "dequantized B" not in plain


def test_the_dequantization_note_shows_the_gemm_it_moves_and_says_when_it_moves_none(invoke):
    """Mistral-7B's int4 prefill on an L4, batch 64 x 1024 tokens. MM1 (65,536 rows) is what
    the dequantization moves most, hardly: 2 x 65536 x 6144 x 4096 = 3,298,534,883,328 FLOPs
    over 536,870,912 + 12,976,128 (_w4) + 805,306,368 = 1,355,153,408 bytes: 2434.06; plus
    50,331,648: 2434.10. With the last token's logits the output layer runs on 64 rows, but
    its B stays bf16 (the LM head, as vLLM keeps it): no dequantization to move it (it moved
    232.4 -> 236.0 FLOP/B while it was counted int4), so the note names MM1 again; the head's
    bytes by hand: A 64 x 4096 x 2 = 524,288 + B 32000 x 4096 x 2 = 262,144,000 + C 64 x
    32000 x 2 = 4,096,000."""
    mistral = "examples/hf/mistral-7b.json"
    args = [mistral, "--hw", "l4", "--batch", "64", "--seq", "1024", "--mode", "inference",
            "--weights", "int4", "--gemms-only"]
    assert _w4(4096, 6144) == 12_976_128
    head = analyze_model(mistral, "l4", batch=64, seq=1024, mode="inference", weights="int4",
                         logits="last").results[-1].gemm
    assert (head.layer, head.stored_b, head.dequant_flops) == ("lm_head", "bf16", 0)
    assert head.bytes == 524_288 + 262_144_000 + 4_096_000
    out = " ".join(invoke("analyze", *args, "--logits", "last").stdout.split())
    assert "MM129" not in out.partition("dequantized B:")[2].partition(")")[0]
    out = " ".join(invoke("analyze", *args).stdout.split())
    assert ("over its bytes: MM1 2434.1 FLOP/B in the column and with it (to 0.1 FLOP/B: its "
            "rows share each weight's dequantization)") in out


def test_an_lm_head_stays_16_bit_on_a_pipeline_stage_without_the_embedding():
    """Llama-2-7B at pp 2, int4: stage 1 runs blk.17 .. blk.32, the final norm and the LM head,
    but not the embedding whose vocabulary names the head (its int4 count read the head as a
    block's matrix: 67,584,000 B where vLLM holds 262,144,000). By hand: 16 blocks' matrices
    16 x 202,375,168 = 3,238,002,688 at half a byte (1,619,001,344) plus a scale per 128
    (50,593,792); their norms 16 x 2 x 4096 x 2 B = 262,144; the final norm 8,192; the head
    32000 x 4096 x 2 B = 262,144,000: 1,932,009,472."""
    report = _decode(weights="int4", pp=2)
    stages = report.to_dict()["pipeline_parallel"]["stages"]
    assert (stages[1]["first_layer"], stages[1]["last_layer"]) == ("blk.17", "lm_head")
    assert stages[1]["memory"]["weights"] == (1_619_001_344 + 50_593_792 + 262_144 + 8_192
                                              + 262_144_000) == 1_932_009_472
