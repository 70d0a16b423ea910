"""Advice worth reading: tiers, grouping by dimension value, no padding for matrix-vector
products, batch advice in the same tier, and tile/wave quantization as a number."""

from __future__ import annotations

import pytest

from roofline import analyze, load_hardware, network_from_yaml
from roofline.analysis.alignment import alignment_notes
from roofline.analysis.quantization import quantization_of as quantization
from roofline.analysis.quantization import split_k, tile_wave_efficiency
from roofline.hardware.spec import Alignment
from roofline.model.gemm import Gemm
from roofline.output.report import report_table

A100_TILES = ((256, 128), (128, 256), (128, 128), (64, 64))


def _gemm(m, n, k, dtype="fp16", roles=("batch", "out", "in")):
    return Gemm("MM1", "fc1", "forward", m, n, k, dtype, roles, (1, 0, 0))


def test_tiers_16_byte_warning_128_byte_advice_fp8_error():
    a100 = Alignment(8, 64)
    # 1002 misses 8 (16 bytes of fp16): a warning; 1000 is a multiple of 8 but not of 64: advice
    tiers = {n.value: n.tier for n in alignment_notes(_gemm(1002, 1000, 4096), a100)}
    assert tiers == {1002: "warning", 1000: "advice"}
    # fp8: 1 byte, so 16 elements. torch's _scaled_mm refuses K or N off 16 (mat1's trailing
    # dimension, both of mat2's: pytorch ScaledBlas.cpp): an error; M (mat1's rows, the batch)
    # is free there and in cuBLASLt's conditions: a warning, as for any other dtype
    fp8 = alignment_notes(_gemm(1000, 4096, 4096, "fp8"), Alignment(16, 128))
    assert [(n.dim, n.value, n.tier, n.pad_to) for n in fp8] == [("M", 1000, "warning", 1008)]
    fp8 = alignment_notes(_gemm(4096, 1000, 4095, "fp8"), Alignment(16, 128))
    assert [(n.dim, n.tier, n.pad_to) for n in fp8] == [("N", "error", 1008), ("K", "error", 4096)]
    # a dimension of 1 is no excuse for N or K (1 byte a row); M = 1 is a GEMV's batch: free
    fp8 = alignment_notes(_gemm(1, 1, 4096, "fp8"), Alignment(16, 128))
    assert [(n.dim, n.tier, n.pad_to) for n in fp8] == [("N", "error", 16)]


def test_no_padding_advice_for_matrix_vector_products():
    # batch-1 inference: M = 1, a GEMV; padding M to 8 would do 8x the work for nothing
    assert alignment_notes(_gemm(1, 1000, 1002), Alignment(8, 64)) == []
    assert alignment_notes(_gemm(1000, 1, 1002), Alignment(8, 64)) == []
    report = analyze(network_from_yaml("batch: 1\ndtype: fp16\nmode: inference\n"
                                       "mlp: [1002, 1000]"), load_hardware("a100"))
    assert "pad to" not in report_table(report)


def test_warnings_are_grouped_by_the_dimension_value():
    # a 4-layer MLP on an A100: 1000 is in fc1.in, fc2.out, fc3.in; 10 is fc4.out
    report = analyze(network_from_yaml("batch: 512\ndtype: fp16\n"
                                       "mlp: [784, 1000, 1000, 1000, 10]"), load_hardware("a100"))
    table = report_table(report).replace("\n       ", " ")
    notes = table.split("warnings and advice:\n")[1].splitlines()
    assert ("  warning: width 10 (fc4.out): MM4, MM5, MM6: pad to 16 (16-byte rule: multiples of 8 "
            "for fp16 Tensor Cores)") in notes
    width_1000 = [n for n in notes if "width 1000" in n]
    assert len(width_1000) == 1 and width_1000[0].startswith(
        "  advice: width 1000 (fc1.out, fc2.out, fc2.in, fc3.out, fc3.in, fc4.in):")
    # every GEMM keeps its own lists in JSON (the contract)
    mm4 = report.to_dict()["gemms"][3]
    assert any("N=10 (out)" in w for w in mm4["warnings"])
    assert mm4["alignment"][0] == {"dim": "N", "role": "out", "value": 10, "tier": "warning",
                                   "multiple": 8, "pad_to": 16}
    # 30 per-GEMM lines before grouping; 6 now
    assert len(notes) <= 8


def test_batch_advice_names_the_tier_alignment_advice_uses():
    # 1024 -> 4096 fp16 on A100 80GB: ridge 312/2.039 = 153.016; 2*1024*4096 B / (2*(5120 B
    # + 4,194,304)) >= 153.016 gives B >= 153.016*4,194,304 / (4,194,304 - 153.016*5120)
    # = 641,797,987 / 3,410,862 = 188.2 -> 189; the 128-byte tier (64) rounds it up to 192
    report = analyze(network_from_yaml("batch: 64\ndtype: fp16\nmode: inference\n"
                                       "mlp: [1024, 4096]"), load_hardware("a100"))
    assert report.results[0].advice == (
        "batch >= 189 makes it compute-bound; 192 also meets the 128-byte tier (a multiple of 64)",)
    # on a V100 (no 128-byte tier) the 16-byte rule: 168 is already a multiple of 8
    v100 = analyze(report.network, load_hardware("v100"))
    assert v100.results[0].advice == ("batch >= 168 makes it compute-bound",)


def test_nvidia_tile_example_257_by_256():
    # 128x128 tiles: 256x256 -> 2*2 = 4 tiles; 257x256 -> 3*2 = 6 tiles, 50% more tiles for
    # 0.4% more work: 257*256 / (6*128*128) = 65,792 / 98,304 = 0.669 (one SM: no wave effect)
    q = quantization(_gemm(257, 256, 4096), sms=1, tiles=((128, 128),))
    assert (q.tiles, q.tile) == (6, (128, 128))
    assert q.efficiency == pytest.approx(65_792 / 98_304)
    assert quantization(_gemm(256, 256, 4096), sms=1, tiles=((128, 128),)).tiles == 4


def test_nvidia_wave_example_on_a100():
    # M = 2304, 256x128 tiles, 108 SMs: 2304/256 = 9 tile rows; N = 1536 -> 1536/128 = 12
    # columns: 9*12 = 108 tiles = one full wave, 100% busy. N = 1664 -> 13 columns, 117 tiles:
    # two waves, 2304*1664 / (2*108*256*128) = 3,833,856 / 7,077,888 = 54%
    q = quantization(_gemm(2304, 1536, 4096), sms=108, tiles=((256, 128),))
    assert (q.tiles, q.waves, q.efficiency) == (108, 1, 1.0)
    assert tile_wave_efficiency(2304, 1664, (256, 128), 108) == pytest.approx(3_833_856 / 7_077_888)


def test_split_k_for_few_output_tiles_and_a_long_k():
    # SLIDE's 256x128 output with K = 135,909 on an A100: 64x64 tiles give 4*2 = 8 tiles,
    # 8 < 108/2 and K >= 4*256: split-K x min(108 // 8, 135,909 // 256) = x13, 104 tiles in
    # one wave: 256*128*13 / (108*64*64) = 425,984 / 442,368 = 96% busy instead of
    # 32,768 / 442,368 = 7%; partial sums 2 * 4 B * 13 * 256 * 128 = 3,407,872 B
    q = quantization(_gemm(256, 128, 135_909), sms=108, tiles=A100_TILES)
    assert q.efficiency == pytest.approx(32_768 / 442_368)
    assert (q.split_k.factor, q.split_k.extra_bytes) == (13, 3_407_872)
    assert q.effective == pytest.approx(425_984 / 442_368)
    # a wide output (many tiles) or a short K: no split
    assert split_k(4096, 4096, 4096, (256, 128), 108) is None
    assert split_k(256, 128, 512, (64, 64), 108) is None


def test_quantization_flag_folds_the_loss_into_compute_bound_times():
    # 512 x 512 x 8192 fp16 on A100 (compute-bound, 248 FLOP/B): 59% of slots busy
    text = "batch: 512\ndtype: fp16\nmlp: [8192, 512]\nmode: inference"
    spec = load_hardware("a100")
    plain = analyze(network_from_yaml(text), spec)
    folded = analyze(network_from_yaml(text), spec, quantization=True)
    eff = plain.results[0].quantization.effective
    assert folded.results[0].time_s == pytest.approx(plain.results[0].time_s / eff)
    assert "quantization: on" in report_table(folded)
    assert "quantization: on" not in report_table(plain)
    data = folded.to_dict()
    assert data["quantization_in_time"] is True
    assert set(data["gemms"][0]["quantization"]) >= {"efficiency", "tile", "tiles", "waves",
                                                     "split_k"}


def test_split_k_partial_sums_bound_a_folded_time_when_they_pass_the_compute():
    # 320 x 320 x 16384 fp16 on an A100 (compute-bound, 158 FLOP/B): 64x64 tiles, 5 x 5 = 25;
    # split-K x min(108 // 25, 16384 // 256) = x4, 100 tiles of 108: 92.6% busy; compute
    # 2 x 320^2 x 16384 / (312e12 x 100/108) = 11.61 us; the traffic, A and B and C
    # 2 (2 x 320 x 16384 + 320^2) = 21,176,320 B, plus the partial sums 2 x 4 B x 4 x 320^2 =
    # 3,276,800 B, over 2039 GB/s = 11.99 us: the longer, so the time
    folded = analyze(network_from_yaml("batch: 320\ndtype: fp16\nmlp: [16384, 320]\n"
                                       "mode: inference"), load_hardware("a100"),
                     quantization=True).results[0]
    assert folded.quantization.split_k.factor == 4
    assert folded.time_s == pytest.approx((21_176_320 + 3_276_800) / 2039e9)
    assert 2 * 320**2 * 16384 / (312e12 * 100 / 108) < folded.time_s


def test_the_nearest_better_shape_sits_on_the_tier_the_advice_asks_for():
    # 1536 x 1536 x 4096 fp16 on an A100: 89% of slots busy (576 64x64 tiles, 6 waves of 108);
    # the suggestion was 1536 x 1712, which the 128-byte advice (multiples of 64) flags; now
    # 1536 x 1728 = 27 x 64: 648 tiles, 6 full waves
    q = analyze(network_from_yaml("batch: 1536\ndtype: fp16\nmlp: [4096, 1536]\n"
                                  "mode: inference"), load_hardware("a100")).results[0].quantization
    assert q.better == (1536, 1728, 4096, 1.0)
    assert 1728 % 64 == 0 and 1536 * 1728 // (64 * 64) == 6 * 108


def test_no_quantization_on_a_cpu():
    report = analyze(network_from_yaml("batch: 512\ndtype: bf16\nmlp: [1024, 4096]"),
                     load_hardware("xeon-platinum-8480plus"))
    assert all(r.quantization is None for r in report.results)


def test_stream_k_gpus_lose_no_wave_and_suggest_no_reshape():
    # GPT-2's FFN weight gradient, 3072 x 768 x 8192 bf16, on an H100 SXM (132 SMs): 128x128
    # tiles give 24 x 6 = 144, one wave and 12 of a second. Waves alone: 64x64 tiles, 48 x 12 =
    # 576 in 5 waves, 3072 x 768 / (5 x 132 x 4096) = 87%, and the advice suggested 2816 x 768.
    # Hopper's stream-K deals the 144 tiles' K iterations evenly over the SMs (a lent H100 ran
    # it at the full rate): only edge tiles lose, and 128 divides 3072 and 768: 100%.
    q = analyze(network_from_yaml("batch: 3072\ndtype: bf16\nmlp: [8192, 768]\n"
                                  "mode: inference"), load_hardware("h100-sxm5-80gb")
                ).results[0].quantization
    assert (q.tile, q.tiles, q.stream_k, q.efficiency, q.better) == ((128, 128), 144, True,
                                                                     1.0, None)
    assert q.to_dict()["stream_k"] is True
    # the same GEMM on an A100 (Ampere: no stream-K): 64x64 tiles, 576 in 6 waves of 108,
    # 2,359,296 / (6 x 108 x 4096) = 88.9%
    a100 = analyze(network_from_yaml("batch: 3072\ndtype: bf16\nmlp: [8192, 768]\n"
                                     "mode: inference"), load_hardware("a100")
                   ).results[0].quantization
    assert not a100.stream_k and a100.efficiency == pytest.approx(2_359_296 / (6 * 108 * 4096))
    # fp32 on an H100 runs CUDA cores, no TMA kernels: waves as before
    assert not analyze(network_from_yaml("batch: 3072\ndtype: fp32\nmlp: [8192, 768]\n"
                                         "mode: inference"), load_hardware("h100-sxm5-80gb")
                       ).results[0].quantization.stream_k


def test_stream_k_keeps_the_edge_tiles_loss():
    # 129 x 257 in 128x128 tiles on 4 SMs: 2 x 3 = 6 tiles. Waves: 2 of 4 slots, 33,153 /
    # (8 x 16,384) = 25.3%; stream-K: 33,153 / (6 x 16,384) = 33.7%
    assert tile_wave_efficiency(129, 257, (128, 128), 4) == pytest.approx(33_153 / 131_072)
    assert tile_wave_efficiency(129, 257, (128, 128), 4, stream_k=True) == pytest.approx(
        33_153 / 98_304)
    # fewer tiles than SMs: one part-empty wave either way (split-K's case, not stream-K's)
    assert tile_wave_efficiency(129, 257, (128, 128), 8, stream_k=True) == pytest.approx(
        33_153 / 131_072)
    from roofline.output.advice import quantization_text

    q = quantization(_gemm(129, 257, 64), 4, ((128, 128),), stream_k=True)
    # nearest better: 129 x 256 (multiples of 8 from 257), 2 x 2 = 4 tiles in one whole wave,
    # 33,024 / 65,536 = 50%
    assert q.stream_k and quantization_text(q) == (
        "tile/wave quantization: best tile 128x128 (6 tiles, 4 SMs, dealt evenly by stream-K) "
        "keeps 34% of slots busy; nearest shape losing less: 129 x 256 x 64 (50%)")
    # whole waves (8 tiles on 4 SMs) keep the wording of waves: stream-K changes nothing there
    assert not quantization(_gemm(256, 512, 64), 4, ((128, 128),), stream_k=True).stream_k


def test_a_batched_gemm_fills_the_waves_with_all_its_outputs():
    # GPT-2's attention scores at seq 128, 12 heads: 12 GEMMs 128 x 128 x 64 in one batched
    # kernel; 64x64 tiles, 4 x 12 = 48 on an A100's 108 SMs: one wave,
    # 128 x 128 x 12 / (108 x 4096) = 44.4% (each GEMM alone counted 4 tiles: 3.7%)
    scores = Gemm("MM2", "attn", "forward", 128, 128, 64, "bf16", ("q", "s", "head"),
                  (1, 0, 0), batch_count=12)
    q = quantization(scores, 108, A100_TILES)
    assert (q.tile, q.tiles, q.waves) == ((64, 64), 48, 1)
    assert q.efficiency == pytest.approx(196_608 / 442_368)


def test_the_measured_sweep_backs_the_stream_k_advice():
    # benchmarks/data/h100_live_waves.csv: bf16 F.linear timed on lent H100 SXM5s, each shape's
    # best run. Where the stream-K advice names no nearer shape but the wave-only one did
    # (WAVE_SUGGESTIONS, timed too), the named shape ran per FLOP no faster at the median.
    # H100 SXM's entry lists A100's four tiles
    assert load_hardware("h100-sxm5-80gb").tiles == A100_TILES
    import csv
    import math
    import statistics
    from pathlib import Path

    data = Path(__file__).parents[1] / "benchmarks" / "data" / "h100_live_waves.csv"
    best: dict[tuple[int, int, int], float] = {}
    with open(data, newline="") as f:
        for row in csv.DictReader(f):
            shape = (int(row["m"]), int(row["n"]), int(row["k"]))
            best[shape] = min(best.get(shape, math.inf), float(row["time_ms"]))
    gains = []
    for shape, time in best.items():
        old = quantization(_gemm(*shape, dtype="bf16"), 132, A100_TILES, 64)
        new = quantization(_gemm(*shape, dtype="bf16"), 132, A100_TILES, 64, stream_k=True)
        if old.better and old.better[:3] in best and new.better is None:
            other = old.better[:3]
            gains.append(math.prod(other) / best[other] / (math.prod(shape) / time))
    assert len(gains) == 27
    assert statistics.median(gains) < 1.05 and sum(g < 1 for g in gains) == 14


def test_a_width_off_the_rule_is_shown_the_tier_too_where_it_costs_little():
    # GPT-2's vocabulary of 50257 on an A100 in fp16: the 16-byte rule's next multiple of 8 is
    # 50264; the 128-byte tier's of 64 is 786 x 64 = 50304, 47 more (0.09%): both are said. A
    # 10-class output: 16, never 64 (+540%)
    report = analyze(network_from_yaml("batch: 512\ndtype: fp16\nmlp: [768, 50257, 10]"),
                     load_hardware("a100"))
    notes = report_table(report).replace("\n       ", " ").split("warnings and advice:\n")[1]
    assert ("pad to 50264 (16-byte rule: multiples of 8 for fp16 Tensor Cores); 50304 also "
            "meets the 128-byte tier (a multiple of 64)") in notes
    ten = next(line for line in notes.splitlines() if "width 10 " in line)
    assert ten.endswith("pad to 16 (16-byte rule: multiples of 8 for fp16 Tensor Cores)")
