"""Activation recomputation as a reader meets it (0.9.0): GPT-2 small's recomputed FLOPs worked
by hand from its config (h 768, 12 blocks, vocabulary 50257), the recompute line naming only
what the step runs again, and every output that gives a step time (analyze's header, compare's
and sweep's text, JSON, HTML and charts) saying that time holds the recomputation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
GPT2 = EXAMPLES / "hf" / "gpt2.json"
H, BLOCKS, BATCH, SEQ = 768, 12, 8, 1024  # GPT-2 small: n_embd 768, n_layer 12
T = BATCH * SEQ  # tokens a step
# one block's forward GEMMs: qkv 2 T h 3h, proj 2 T h h, ffn 2 x 2 T h 4h = 24 T h^2; naive
# attention's QK^T and attention over V 2 T s h each (not halved for the causal mask: the
# naive form computes every score)
PROJECTIONS = 24 * T * H * H
CORE = 4 * T * SEQ * H
GPT2_ARGS = ("--hw", "h100", "--batch", BATCH, "--seq", SEQ, "--dtype", "bf16")
MLP = ("batch: 512\ndtype: fp16\nmode: train\nlayers:\n"
       "  - {type: linear, in: 1024, out: 4096, activation: relu}\n"
       "  - {type: linear, in: 4096, out: 1000}\n")


def _json(invoke, command, model, *args):
    result = invoke(command, model, *args, "--format", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.parametrize("attention, recompute, expected", [
    ("naive", "full", BLOCKS * (PROJECTIONS + CORE)),  # = 1,700,807,049,216
    ("flash", "full", BLOCKS * PROJECTIONS),  # the core is the flash op's, not a GEMM
    ("naive", "selective", BLOCKS * CORE),
    ("flash", "selective", 0),  # flash's backward recomputes the scores itself
])
def test_gpt2_small_recomputed_gemm_flops_by_hand(invoke, attention, recompute, expected):
    data = _json(invoke, "analyze", GPT2, *GPT2_ARGS, "--attention", attention,
                 "--recompute", recompute)
    assert data["totals"]["recompute_gemm_flops"] == expected
    assert data["recompute"] == recompute


def test_mfu_and_hfu_as_the_readme_derives_them(invoke):
    """README: MFU = flops / (step time x peak_tflops x 10^12), HFU the same over flops +
    recompute_flops; GPT-2 at 8 x 1024 in bf16 on an H100 with full recomputation: 21%, 26%."""
    data = _json(invoke, "analyze", GPT2, *GPT2_ARGS, "--recompute", "full")
    t = data["totals"]
    peak = data["peak_tflops"] * 1e12
    assert data["peak_tflops"] == 989.5  # NVIDIA's H100 SXM5 dense bf16
    assert round(100 * t["flops"] / (t["predicted_time_s"] * peak)) == 21
    assert round(100 * (t["flops"] + t["recompute_flops"]) / (t["predicted_time_s"] * peak)) == 26
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    assert "runs at 21%\nMFU and 26% HFU" in readme or "runs at 21% MFU and 26% HFU" in readme


def test_the_recompute_line_names_only_what_the_step_runs_again(invoke, tmp_path):
    gpt2 = invoke("analyze", GPT2, *GPT2_ARGS, "--recompute", "full").stdout
    line = " ".join(gpt2.split("recompute full: +")[1].split("\nmemory:")[0].split())
    assert "each transformer block's whole forward" in line
    assert "linear layer" not in line  # GPT-2's output layer has no activation
    mlp = tmp_path / "mlp.yaml"
    mlp.write_text(MLP, encoding="utf-8")
    text = invoke("analyze", mlp, "--hw", "a100", "--recompute", "full").stdout
    line = " ".join(text.split("recompute full: +")[1].split("\nmemory:")[0].split())
    assert "each linear layer's product and bias before its activation" in line
    assert "transformer" not in line


def test_selective_says_why_nothing_runs_again(invoke, tmp_path):
    flash = " ".join(invoke("analyze", GPT2, *GPT2_ARGS, "--recompute", "selective")
                     .stdout.split())
    assert ("keeps no s x s matrix; with --attention naive its attention core would run "
            "again memory:") in flash  # a whole sentence, not one cut at "would be"
    mlp = tmp_path / "mlp.yaml"
    mlp.write_text(MLP, encoding="utf-8")
    text = " ".join(invoke("analyze", mlp, "--hw", "a100", "--recompute", "selective")
                    .stdout.split())
    assert ("recompute selective: nothing is run again here: selective recomputes a "
            "transformer block's naive attention core, and the step has no transformer "
            "block") in text
    assert "flash" not in text


def test_headers_name_the_recomputation_their_step_times_hold(invoke):
    text = invoke("analyze", GPT2, *GPT2_ARGS, "--recompute", "full").stdout
    assert text.startswith("gpt2 on h100-sxm5-80gb: bf16, batch 8, seq 1024, train, "
                           "recompute full\n")
    plain = invoke("analyze", GPT2, *GPT2_ARGS).stdout
    assert plain.startswith("gpt2 on h100-sxm5-80gb: bf16, batch 8, seq 1024, train\n")
    compare = invoke("compare", GPT2, "--hw", "a100", "--hw", "h100", "--batch", BATCH,
                     "--seq", SEQ, "--dtype", "bf16", "--recompute", "full").stdout
    assert compare.startswith("gpt2: batch 8, seq 1024, train, recompute full; baseline")
    assert ("summed over every GEMM and op, and the forward work recompute full runs again in "
            "the backward pass, at each entry's peak") in compare
    verdict = compare.split("verdict: ")[1]
    assert "other ops " in verdict and ", recomputation " in verdict.split(");")[0]
    sweep = invoke("sweep", GPT2, "--hw", "h100", "--batch", "1,2", "--seq", SEQ, "--dtype",
                   "bf16", "--recompute", "full").stdout
    assert sweep.startswith("gpt2 on h100-sxm5-80gb: bf16, train, recompute full (batch sweep)")
    assert "and the forward work recompute full runs again in the backward pass;" in sweep
    assert "(the predicted column: GEMMs, ops and recomputation)" in sweep
    plain_sweep = invoke("sweep", GPT2, "--hw", "h100", "--batch", "1,2", "--seq", SEQ,
                         "--dtype", "bf16").stdout
    assert "recomput" not in plain_sweep


def test_compare_and_sweep_json_carry_the_recomputation(invoke):
    """compare's devices and sweep's points give the share of their step times recomputation
    is, the same as analyze's totals at that device or batch; the top level names it."""
    analyzed = _json(invoke, "analyze", GPT2, *GPT2_ARGS, "--recompute", "full")["totals"]
    assert analyzed["recompute_time_s"] > 0
    compared = _json(invoke, "compare", GPT2, "--hw", "h100", "--hw", "a100", "--batch", BATCH,
                     "--seq", SEQ, "--dtype", "bf16", "--recompute", "full")
    swept = _json(invoke, "sweep", GPT2, "--hw", "h100", "--batch", f"1,{BATCH}", "--seq", SEQ,
                  "--dtype", "bf16", "--recompute", "full")
    h100, point = compared["devices"][0], swept["points"][1]
    assert compared["recompute"] == swept["recompute"] == "full"
    for item in (h100, point):
        assert item["recompute_time_s"] == analyzed["recompute_time_s"]
        assert item["predicted_recompute_time_s"] == analyzed["predicted_recompute_time_s"]
    plain = _json(invoke, "compare", GPT2, "--hw", "h100", "--hw", "a100", "--batch", BATCH,
                  "--seq", SEQ, "--dtype", "bf16")
    assert plain["recompute"] == "none" and plain["devices"][0]["recompute_time_s"] == 0


def test_compare_chart_and_page_label_the_recomputation(invoke):
    pytest.importorskip("matplotlib")
    from roofline import compare
    from roofline.output.html import comparison_page
    from roofline.plot.compare import plot_comparison

    c = compare(str(GPT2), ["a100", "h100"], batch=BATCH, seq=SEQ, dtype="bf16",
                recompute="full")
    ax = plot_comparison(c)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "memory-bound roofline time (GEMMs, other ops and recomputation)" in legend
    assert "recompute full" in ax.get_title()
    page = comparison_page(c)
    assert "the forward work recompute full runs again in the backward pass" in page
    assert "memory-bound (GEMMs, ops and recomputation)" in page


TINY = ("name: tiny\nbatch: 2\nseq: 128\ndtype: fp16\nmode: train\nlayers:\n"
        "  - {type: embedding, vocab: 1000, dim: 256, name: emb}\n"
        "  - {type: transformer, hidden: 256, heads: 4, ffn: 1024, attention: naive, "
        "dropout: 0.1, repeat: 2, name: blk}\n"
        "  - {type: linear, in: 256, out: 1000, name: head}\n")


def _csv_rows(invoke, model, *args):
    import csv
    import io

    result = invoke("analyze", model, "--hw", "h100", *args, "--format", "csv")
    assert result.exit_code == 0, result.output
    header = result.stdout.splitlines()[0].split(",")
    assert header[-2:] == ["predicted_basis", "recomputed"]  # appended: other columns stay
    return list(csv.DictReader(io.StringIO(result.stdout)))


@pytest.mark.parametrize("recompute, marked", [
    # selective: each block's naive attention core, QK^T and attention over V, its softmax and
    # the dropout on the probabilities (Korthikanti et al. 2022, sec. 5), in both copies
    ("selective", {("blk.1.scores", "forward"), ("blk.1.context", "forward"),
                   ("blk.2.scores", "forward"), ("blk.2.context", "forward"),
                   ("blk.1.attn", "forward"), ("blk.2.attn", "forward")}),
    # full: every forward GEMM and op of both blocks (not the embedding's, not the output
    # layer's, which has no activation after it)
    ("full", {(f"blk.{c}{part}", "forward") for c in (1, 2)
              for part in ("", ".qkv", ".scores", ".context", ".proj", ".ffn_up",
                           ".ffn_down", ".attn", ".ffn")}),
    ("none", set()),
])
def test_analyze_csv_marks_the_rows_recomputation_runs_again(invoke, tmp_path, recompute,
                                                             marked):
    """A two-block naive-attention model (T = B s = 2 x 128 = 256 tokens, h 256, ffn 1024):
    the rows marked are those the rule names, and their GEMM FLOPs are worked by hand:
    selective, per block QK^T and attention over V, 2 x 2 T s h = 4 x 256 x 128 x 256 =
    33,554,432; full, per block also qkv 2 T h 3h = 100,663,296, proj 2 T h^2 = 33,554,432,
    ffn up and down 2 x 2 T h 4h = 268,435,456: 436,207,616 (24 T h^2 + 4 T s h)."""
    model = tmp_path / "tiny.yaml"
    model.write_text(TINY)
    rows = _csv_rows(invoke, model, "--recompute", recompute)
    again = [r for r in rows if r["recomputed"] == "True"]
    assert {r["recomputed"] for r in rows} <= {"True", "False"}
    assert {(r["layer"], r["pass"]) for r in again} == marked
    gemm_flops = sum(int(r["flops"]) for r in again if r["kind"] == "gemm")
    per_block = {"selective": 4 * 256 * 128 * 256, "full": 436_207_616, "none": 0}[recompute]
    assert gemm_flops == 2 * per_block
    ops = {r["kind"] for r in again if r["kind"] != "gemm"}
    assert ops == {"selective": {"softmax", "dropout"},
                   "full": {"layernorm", "softmax", "dropout", "residual", "gelu"},
                   "none": set()}[recompute]
    # the step's own count of what runs again: its GEMMs' FLOPs are these rows'
    data = _json(invoke, "analyze", model, "--hw", "h100", "--recompute", recompute)
    assert data["totals"]["recompute_gemm_flops"] == gemm_flops


def test_analyze_csv_marks_a_linear_layers_product_before_its_activation(invoke, tmp_path):
    """Under full recomputation the MLP's fc1 (relu after it) runs its product again: MM1, the
    forward GEMM, is marked, and nothing else (fc2 has no activation; relu's output is fc2's
    kept input); --gemms-only and a second device mark the same GEMM."""
    model = tmp_path / "mlp.yaml"
    model.write_text(MLP)
    rows = _csv_rows(invoke, model, "--recompute", "full")
    assert [(r["name"], r["recomputed"]) for r in rows] == [
        ("MM1", "True"), ("MM2", "False"), ("MM3", "False"), ("MM4", "False"),
        ("MM5", "False"), ("OP1", "False"), ("OP2", "False")]
    both = _csv_rows(invoke, model, "--hw", "a100", "--recompute", "full", "--gemms-only")
    assert [(r["hardware"], r["name"]) for r in both if r["recomputed"] == "True"] == [
        ("h100-sxm5-80gb", "MM1"), ("a100-sxm4-80gb", "MM1")]
    inference = _csv_rows(invoke, model, "--mode", "inference", "--batch", "64")
    assert {r["recomputed"] for r in inference} == {"False"}
