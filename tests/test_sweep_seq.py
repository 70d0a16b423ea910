"""sweep over sequence lengths (--seq LIST|A..B) and over a batch x seq grid: the seq at which
each GEMM turns compute-bound, against the roofline solved by hand, and the fit marks against
the memory arithmetic of tests/test_memory.py."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from roofline.analysis.whatif import sweep

ROOT = Path(__file__).parent.parent
LLAMA = ROOT / "examples" / "hf" / "llama-2-7b.json"
MLP = ROOT / "examples" / "mlp-1024-4096-1000.yaml"
RESNET = ROOT / "examples" / "resnet50.yaml"

# A100 SXM4 80GB, dense fp16: 312 TFLOP/s over 2039 GB/s
RIDGE = 312e12 / 2039e9  # 153.016 FLOP/B


def _min_tokens(n: int, k: int) -> int:
    """The fewest rows m at which an fp16 GEMM (m x n x k, C fp16 written once) reaches the
    ridge: intensity 2mnk / 2(mk + kn + mn) >= R  <=>  m >= R k n / (n k - R (k + n))."""
    return math.ceil(RIDGE * k * n / (n * k - RIDGE * (k + n)))


def test_seq_transitions_solve_the_roofline_by_hand():
    # Llama-2-7B prefill at batch 16: a weight GEMM's rows are batch x seq tokens.
    # qkv (n = 3 x 4096, k = 4096): m >= 153.016 x 4096 x 12288 / (50,331,648 - 153.016 x
    # 16,384) = 161.04 -> 162 tokens -> seq >= ceil(162 / 16) = 11.
    # logits (n = 32000, k = 4096, every token in a plain prefill): m >= 159.75 -> 160 -> 10.
    assert _min_tokens(12288, 4096) == 162 and _min_tokens(32000, 4096) == 160
    s = sweep(LLAMA, "a100-sxm4-80gb", [16], seqs=[128, 256], mode="inference", dtype="fp16")
    found = s.seq_transitions()
    assert found is not None
    assert found["MM1"] == math.ceil(162 / 16) == 11
    assert found["MM129"] == 10
    # the FFN (n = 11008, k = 4096; and down: n = 4096, k = 11008) and proj (4096 x 4096)
    for name, (n, k) in {"MM2": (4096, 4096), "MM3": (22016, 4096),
                         "MM4": (4096, 11008)}.items():
        assert found[name] == math.ceil(_min_tokens(n, k) / 16), name


def test_decode_gemms_never_turn_compute_bound_by_seq():
    # decode: a weight GEMM has one row per sequence whatever the KV cache holds
    s = sweep(LLAMA, "a100-sxm4-80gb", [64], seqs="128..4096", mode="inference",
              phase="decode", dtype="fp16")
    assert s.axis == "seq" and s.seqs == (128, 256, 512, 1024, 2048, 4096)
    assert set((s.seq_transitions() or {}).values()) == {None}


def test_seq_sweep_marks_the_sequences_that_do_not_fit(invoke):
    # decode at batch 64 against the 85,100,068,864 B CUDA reports on an A100 80GB (hwdb):
    # (85,100,068,864 - 14,476,831,232 - 4,751,360) // (64 x 524,288) = 2104 tokens fit
    # (80e9 said 1952); 2176 does not: 14,481,582,592 + 64 x 2176 x 524,288 = 87.5 GB
    out = invoke("sweep", LLAMA, "--hw", "a100-sxm4-80gb", "--batch", "64", "--seq",
                 "1024,2176", "--mode", "inference", "--phase", "decode", "--dtype", "fp16",
                 "--format", "json")
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["axis"] == "seq" and data["seqs"] == [1024, 2176] and data["batches"] == [64]
    assert data["max_seq"] == 2104
    assert [(p["seq"], p["fits"]) for p in data["points"]] == [(1024, True), (2176, False)]
    table = invoke("sweep", LLAMA, "--hw", "a100-sxm4-80gb", "--batch", "64", "--seq",
                   "1024,2176", "--mode", "inference", "--phase", "decode", "--dtype",
                   "fp16").output
    assert "seq <= 2104 fits in memory at batch 64" in table
    assert "87.5 GB: does not fit" in table


def test_a_grid_has_every_pair_and_batch_transitions_per_seq(invoke):
    out = invoke("sweep", LLAMA, "--hw", "a100-sxm4-80gb", "--batch", "1,16", "--seq",
                 "1024,4096", "--mode", "inference", "--phase", "decode", "--dtype", "fp16",
                 "--format", "json")
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert [(p["batch"], p["seq"]) for p in data["points"]] == [
        (1, 1024), (16, 1024), (1, 4096), (16, 4096)]
    by_seq = {t["seq"]: t for t in data["transitions_by_seq"]}
    assert sorted(by_seq) == [1024, 4096]
    # decode's logits GEMM: m = batch rows, n = 32000, k = 4096 -> 160 rows whatever the seq
    assert by_seq[1024]["transitions"]["MM129"] == by_seq[4096]["transitions"]["MM129"] == 160
    # at seq 4096 less fits: the KV cache is 4x as large per sequence
    assert by_seq[4096]["max_batch"] < by_seq[1024]["max_batch"]
    csv = invoke("sweep", LLAMA, "--hw", "a100-sxm4-80gb", "--batch", "1,16", "--seq",
                 "1024,4096", "--mode", "inference", "--phase", "decode", "--dtype", "fp16",
                 "--format", "csv").output.splitlines()
    assert csv[0].endswith(",seq,compute_bound_from_seq,predicted_time_s,predicted_step_time_s")
    assert len(csv) == 1 + 4 * 129


def test_a_batch_sweep_keeps_its_json_and_gains_the_seq(invoke):
    out = invoke("sweep", LLAMA, "--hw", "h100", "--batch", "1,2", "--seq", "512", "--mode",
                 "inference", "--format", "json")
    data = json.loads(out.output)
    assert data["axis"] == "batch" and data["seq"] == 512 and data["seqs"] == [512]
    assert data["transitions_by_seq"] is None
    assert all(p["seq"] == 512 for p in data["points"])


def test_a_model_without_a_sequence_has_no_seq_transitions(invoke):
    data = json.loads(invoke("sweep", MLP, "--hw", "h100", "--batch", "1,64", "--format",
                             "json").output)
    assert data["seqs"] == [] and data["seq_transitions"] is None
    assert all(p["seq"] is None for p in data["points"])


def test_an_mlp_takes_a_seq_in_sweep_as_in_analyze_and_compare(invoke):
    """An MLP applied per token (analyze's and compare's reading: M = batch x seq rows, a
    prefill) takes --seq in sweep too; it was refused ("no sequence length to sweep").
    On an A100 (ridge 312e12 / 2039e9 = 153.016 FLOP/B) each fp16 GEMM of the 1024-4096-1000
    MLP, forward and backward, reaches the ridge at T >= R k n / (k n - R (k + n)) rows:
    fc1 (k n = 1024 x 4096) 188.2 and fc2 (4096 x 1000) 188.99, so 189 tokens; at seq 128 that
    is batch ceil(189 / 128) = 2, and at batch 1 seq 189."""
    out = invoke("sweep", MLP, "--hw", "a100", "--seq", "128", "--batch", "1,2", "--format",
                 "json")
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["seq"] == 128 and data["seqs"] == [128] and data["batches"] == [1, 2]
    assert [(p["batch"], p["seq"]) for p in data["points"]] == [(1, 128), (2, 128)]
    assert set(data["transitions"].values()) == {2}
    assert set(data["seq_transitions"].values()) == {189}
    # the point at batch 2, seq 128 is analyze's at 256 tokens: the same GEMMs
    report = json.loads(invoke("analyze", MLP, "--hw", "a100", "--seq", "128", "--batch", "2",
                               "--format", "json").output)
    assert [g["m"] for g in report["gemms"][:3]] == [256, 256, 256]
    assert [g["intensity"] for g in data["points"][1]["gemms"]] == [
        g["intensity"] for g in report["gemms"]]
    # a seq sweep of the MLP at batch 1: 189 tokens is the crossing, so 256 is compute-bound
    data = json.loads(invoke("sweep", MLP, "--hw", "a100", "--seq", "128,256", "--batch", "1",
                             "--format", "json").output)
    assert data["axis"] == "seq"
    assert [p["memory_bound_time_fraction"] > 0 for p in data["points"]] == [True, False]


@pytest.mark.parametrize("args, message", [
    ((LLAMA, "--hw", "h100", "--mode", "inference"), "give the batches or the sequence"),
    ((RESNET, "--hw", "h100", "--batch", "8", "--seq", "1,2"),
     "seq is tokens per sample, but the model starts from an image"),
    ((RESNET, "--hw", "h100", "--batch", "1,8", "--seq", "128"),
     "seq is tokens per sample, but the model starts from an image"),
    ((LLAMA, "--hw", "h100", "--seq", "1,2"), "--batch"),
    ((LLAMA, "--hw", "h100", "--batch", "1,2", "--seq", "0..4"), "--seq"),
    ((LLAMA, "--hw", "h100", "--batch", "1,2", "--seq", "x"), "--seq"),
    ((LLAMA, "--hw", "h100", "--batch", "1,2", "--seq", "8,16", "--plot", "grid.png"),
     "--plot draws one swept axis"),
])
def test_bad_sweeps_are_one_line(invoke, tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    out = invoke("sweep", *args)
    assert out.exit_code == 2, out.output
    lines = out.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error:") and message in lines[0], lines
    assert not (tmp_path / "grid.png").exists()


def test_a_seq_sweep_chart_has_seq_on_its_x_axis(tmp_path):
    # 2104 tokens fit at batch 64 (test_seq_sweep_marks_the_sequences_that_do_not_fit)
    s = sweep(LLAMA, "a100-sxm4-80gb", [64], seqs=[1024, 2176], mode="inference",
              phase="decode", dtype="fp16")
    ax = s.plot()
    assert ax.get_xlabel() == "sequence length (tokens)"
    assert "vs seq" in ax.get_title() and "seq 1024" not in ax.get_title()
    labels = ax.get_legend_handles_labels()[1]
    assert "does not fit in memory (seq > 2104)" in labels


def test_a_seq_sweeps_csv_gives_each_row_the_batch_crossing_at_its_own_seq():
    import csv
    import io

    from roofline.output.whatif_sweep import sweep_csv

    # Llama-2-7B prefill at batch 1: the attention output projection (4096 x 4096) reaches the
    # A100's ridge from _min_tokens(4096, 4096) = 166 tokens: batch ceil(166 / 64) = 3 at seq
    # 64, batch 1 at seq 4096 (the CSV gave every row the first seq's 3)
    s = sweep(LLAMA, "a100-sxm4-80gb", [1], seqs=[64, 4096], mode="inference", dtype="fp16")
    assert _min_tokens(4096, 4096) == 166
    proj = next(r.gemm.name for r in s.reports[0].results if r.gemm.n == r.gemm.k == 4096)
    rows = [row for row in csv.DictReader(io.StringIO(sweep_csv(s))) if row["name"] == proj]
    assert {(row["seq"], row["compute_bound_from"]) for row in rows} == {("64", "3"),
                                                                         ("4096", "1")}


def test_past_the_context_the_memory_line_does_not_promise_marks_memory_does_not_make(invoke):
    # Llama-2-7B's context is 4096 tokens: a seq past it fits in 80 GB at batch 1, unmarked
    out = invoke("sweep", LLAMA, "--hw", "a100-sxm4-80gb", "--batch", "1", "--seq",
                 "1024,8192", "--mode", "inference", "--dtype", "fp16")
    assert out.exit_code == 0, out.output
    memory = next(line for line in out.output.splitlines() if line.startswith("memory:"))
    assert "up to the model's context (4096)" in memory
    assert "a row whose step does not fit is marked 'does not fit'" in memory
    assert "longer sequences are marked" not in memory


def test_when_no_seq_fits_the_sweep_says_so_not_at_most_seq_0(invoke):
    # batch 2^33 of GPT-2 needs petabytes at any seq: nothing fits in 80 GB (2^33 x 128 =
    # 2^40, the most rows a step may have)
    out = invoke("sweep", ROOT / "examples" / "hf" / "gpt2.json", "--hw", "h100", "--batch",
                 str(2**33), "--seq", "64,128", "--mode", "inference", "--dtype", "fp16")
    assert out.exit_code == 0, out.output
    assert "memory: no seq fits in memory at batch 8589934592" in out.output
    assert "every row is marked 'does not fit'" in out.output
    assert "(does not fit in memory: no seq fits)" in out.output
    assert "at most seq 0" not in out.output


def test_a_sweep_says_what_its_times_are_based_on(invoke):
    # the ridge with its figures (989.5 TFLOP/s / 3350 GB/s = 295.4 FLOP/B), the step time as
    # the roof, and in decode what a sample is
    out = invoke("sweep", LLAMA, "--hw", "h100", "--batch", "1,8", "--seq", "1024", "--mode",
                 "inference", "--phase", "decode", "--dtype", "fp16")
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert "ridge 295.4 FLOP/B = dense peak 989.5 TFLOP/s / 3350 GB/s (datasheet)" in lines
    roof = next(line for line in lines if line.startswith("step time, tokens/s:"))
    assert "the pure roofline time of each GEMM and op as a pass of its own, a lower bound from " \
        "DRAM" in roof
    assert roof.endswith("; a decode step makes one token a sequence")
    # a prefill's tokens are batch x seq a step: at batch 8, 8 x 1024 = 8,192 over its time
    # (a sequence a sample read 1/1024 of that as samples/s)
    prefill = invoke("sweep", LLAMA, "--hw", "h100", "--batch", "1,8", "--seq", "1024",
                     "--mode", "inference", "--dtype", "fp16", "--format", "json").output
    point = json.loads(prefill)["points"][1]
    assert point["batch"] == 8 and point["tokens_per_s"] == pytest.approx(
        8 * 1024 / point["time_s"], rel=1e-12)
    assert point["samples_per_s"] == pytest.approx(8 / point["time_s"], rel=1e-12)
    text = invoke("sweep", LLAMA, "--hw", "h100", "--batch", "1,8", "--seq", "1024",
                  "--mode", "inference", "--dtype", "fp16").output
    assert "; tokens/s: batch x seq tokens a step" in text and "samples/s" not in text


def test_a_gemm_that_crosses_past_the_context_is_not_called_never(invoke):
    # GPT-2's projection (768 x 768, fp16) reaches the H100's ridge (295.4) from 1280 tokens
    # (T >= R k n / (n k - R (k + n)) = 1279.8), past the 1024-token context the search stops at
    out = invoke("sweep", ROOT / "examples" / "hf" / "gpt2.json", "--hw", "h100", "--batch",
                 "1", "--seq", "256,512", "--mode", "inference", "--dtype", "fp16").output
    assert math.ceil(295.373 * 768 * 768 / (768 * 768 - 295.373 * 2 * 768)) == 1280
    lines = [line.strip() for line in out.splitlines()]
    assert any(line.startswith("not up to 1024: MM2,") for line in lines), out
    assert not any(line.startswith("never:") for line in lines)


def test_a_sweep_ends_with_the_whole_steps_verdict(invoke):
    """Each GEMM's crossing is its own; the step with its ops may never follow. The MLP in
    fp16 on a V100 (no ops): compute-bound from batch 168, the closed form of
    tests/test_step_verdict.py; GPT-2 prefill on an H100: never (its ops hold it at 232
    FLOP/B against a 295 ridge), though every GEMM but the projections crosses by seq 607."""
    mlp = invoke("sweep", MLP, "--hw", "v100", "--batch", "1..1024", "--mode", "inference")
    assert mlp.output.splitlines()[-1] == ("step: compute-bound from batch 168 (the whole "
                                           "step's FLOP time reaches its byte time)")
    out = invoke("sweep", ROOT / "examples" / "hf" / "gpt2.json", "--hw", "h100", "--batch",
                 "1", "--seq", "256,1024", "--mode", "inference", "--dtype", "fp16").output
    assert out.splitlines()[-1].startswith("step: memory-bound at every batch")
    assert out.splitlines()[-1].endswith("(at seq 256)")
    data = json.loads(invoke("sweep", MLP, "--hw", "v100", "--batch", "1,8", "--mode",
                             "inference", "--format", "json").output)
    assert data["step"]["min_compute_bound_batch"] == 168


def test_a_seq_sweep_takes_its_batch_as_an_override_from_the_library():
    # a config.json gives no seq and no batch: sweep(seqs=..., batch=8) is one batch at each seq
    # (the library's override, as --batch 8 is on the command line); it asked for a seq the
    # sweep itself supplies
    s = sweep(ROOT / "examples" / "hf" / "gpt2.json", "a100", seqs=[128, 256], batch=8,
              dtype="fp16")
    assert [(r.batch, r.network.seq) for r in s.reports] == [(8, 128), (8, 256)]


def test_a_sweep_chart_draws_the_ops_the_sweep_moves():
    """The ops a sweep moves are drawn beside the GEMMs (``plot.data.op_sweep_series``), by
    hand on Llama-2-7B (32 layers, 32 heads of 128, no GQA: h d = 4096; fp16, e = 2):
    - decode at batch b = 8: one query over s keys a head. FLOPs 4 b h d s, bytes Q and O
      2 b h d e plus K and V 2 b s h d e: intensity 4 b h d s / 4 b h d (s + 1) e/2 =
      s / (s + 1), 512/513 and 8192/8193, flat; but its bytes, 32 x 4 b h d (s + 1) = 2.15 GB
      at 512 and 34.36 GB at 8192, against 13.48 GB of weights (6.74 B parameters), grow from
      at most 2.15 / 15.63 = 14% of the step's to at least 34.36 / 47.84 > 25%: drawn;
    - prefill at batch 1: causal, FLOPs 4 b h d s^2 / 2, bytes Q, K, V, O 4 b s h d e:
      intensity s / 4, 128 at 512 and 2048 at 8192: it moves, drawn;
    - a training batch sweep at seq 2048: every op flat, its share of the bytes steady: none.
    The GEMMs' curves are unchanged beside them."""
    from roofline.plot.data import op_sweep_series

    s = sweep(LLAMA, "h100", [8], seqs=[512, 8192], mode="inference", phase="decode")
    ((label, ys),) = op_sweep_series(s.reports, "intensity")
    assert label == "flash-attention x32 (op)"
    assert ys == pytest.approx([512 / 513, 8192 / 8193], rel=1e-9)
    s = sweep(LLAMA, "h100", [1], seqs=[512, 8192], mode="inference")
    ((label, ys),) = op_sweep_series(s.reports, "intensity")
    assert label == "flash-attention x32 (op)" and ys == pytest.approx([128, 2048], rel=1e-9)
    assert ("flash-attention x32 (op)" in s.plot().get_legend_handles_labels()[1])
    s = sweep(LLAMA, "h100", [1, 4], seqs=[2048], mode="train")
    assert op_sweep_series(s.reports, "intensity") == []
