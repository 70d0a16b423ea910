"""Layer names in the plain-text tables: whole wherever there is room (a terminal wide enough,
a pipe, a file), cut to their ends only where a terminal's width leaves no room, and never in
Markdown, CSV or JSON. Before, every table cut them to 13 characters: Mixtral's expert_up and
expert_down both read ``blk.1.expert_``, a captured GPT-2's every row ``transformer.h``."""

from __future__ import annotations

import pytest

from roofline.output.table import CUT_FLOOR, Fit, aligned, cut_end, fitted_width

MIXTRAL = "examples/hf/mixtral-8x7b.json"
MIXTRAL_ARGS = ("--hw", "h100", "--batch", "1", "--seq", "512", "--mode", "inference")


def test_a_cut_name_keeps_its_end_behind_an_ellipsis():
    assert cut_end("blk.1.expert_up", 20) == "blk.1.expert_up"  # fits: whole
    assert cut_end("transformer.h.11.mlp.c_proj", 27) == "transformer.h.11.mlp.c_proj"
    # 27 characters into 20: "..." and the last 17, the block's number and the module
    assert cut_end("transformer.h.11.mlp.c_proj", 20) == "...r.h.11.mlp.c_proj"


def test_the_cut_column_takes_what_the_others_leave_down_to_the_floor():
    # columns 5, 27 and 10 wide, two spaces apart: 5 + 27 + 10 + 4 = 46 characters
    assert fitted_width([5, 27, 10], None) is None  # no width known: nothing cut
    assert fitted_width([5, 27, 10], Fit(46, 1)) is None  # fits exactly
    assert fitted_width([5, 27, 10], Fit(40, 1)) == 21  # 6 over: 27 - 6
    assert fitted_width([5, 27, 10], Fit(30, 1)) == CUT_FLOOR == 20  # 16 over: 11, floored
    assert fitted_width([5, 18, 10], Fit(30, 1)) is None  # under the floor: never cut


def test_an_aligned_table_cuts_only_its_name_column():
    header, rows = ("op", "layer", "time"), [("OP1", "transformer.h.0.attn.c_attn", "1 us"),
                                              ("OP2", "lm_head", "22 us")]
    assert aligned(header, rows, {0, 1}) == aligned(header, rows, {0, 1}, Fit(200, 1))
    # 3 + 27 + 5 + 4 = 39 characters into 35: the layer column 4 narrower, 23 wide
    assert aligned(header, rows, {0, 1}, Fit(35, 1)) == [
        "op   layer                     time",
        "-----------------------------------",
        "OP1  ...rmer.h.0.attn.c_attn   1 us",
        "OP2  lm_head                  22 us"]


def _table_lines(stdout: str) -> list[str]:
    """The GEMM table's lines: its header to the first empty line."""
    lines = stdout.splitlines()
    start = lines.index(next(line for line in lines if line.startswith("GEMM ")))
    end = lines.index("", start)
    return lines[start:end]


def _gemm_rows(stdout: str) -> list[list[str]]:
    return [line.split() for line in _table_lines(stdout)[2:]]


@pytest.mark.parametrize("columns", [None, "250"])
def test_mixtral_experts_read_whole_in_a_wide_terminal_and_a_pipe(invoke, monkeypatch,
                                                                     columns):
    if columns:
        monkeypatch.setenv("COLUMNS", columns)
    result = invoke("analyze", MIXTRAL, *MIXTRAL_ARGS)
    layers = [row[1] for row in _gemm_rows(result.stdout)]
    assert layers == ["blk.1.qkv", "blk.1.proj", "blk.1.router", "blk.1.expert_up",
                      "blk.1.expert_down", "lm_head"]
    assert "blk.1.experts" in result.stdout and "blk.1.expert_ " not in result.stdout


def _long_names(tmp_path):
    model = tmp_path / "deep-names.yaml"
    model.write_text(
        "name: deep-names\nbatch: 8\ndtype: fp16\nmode: inference\nlayers:\n"
        "  - {type: linear, in: 1024, out: 1024, name: transformer.h.0.attn.c_attn}\n"
        "  - {type: linear, in: 1024, out: 1024, name: transformer.h.0.attn.c_proj}\n"
        "  - {type: linear, in: 1024, out: 1024, name: transformer.h.11.mlp.c_proj}\n",
        encoding="utf-8")
    return model


def test_a_narrow_terminal_cuts_long_names_to_their_distinguishing_ends(invoke, monkeypatch,
                                                                         tmp_path):
    model = _long_names(tmp_path)
    whole = invoke("analyze", model, "--hw", "a100").stdout
    assert [row[1] for row in _gemm_rows(whole)] == [
        "transformer.h.0.attn.c_attn", "transformer.h.0.attn.c_proj",
        "transformer.h.11.mlp.c_proj"]
    monkeypatch.setenv("COLUMNS", "80")
    narrow = invoke("analyze", model, "--hw", "a100").stdout
    # the table needs more than 80 without its layer column: the names keep CUT_FLOOR
    assert [row[1] for row in _gemm_rows(narrow)] == [
        "...r.h.0.attn.c_attn", "...r.h.0.attn.c_proj", "...r.h.11.mlp.c_proj"]
    width = len(_table_lines(whole)[0])
    monkeypatch.setenv("COLUMNS", str(width - 3))  # three short: 27 characters cut to 24
    cut = invoke("analyze", model, "--hw", "a100").stdout
    assert [row[1] for row in _gemm_rows(cut)] == [
        "...ormer.h.0.attn.c_attn", "...ormer.h.0.attn.c_proj", "...ormer.h.11.mlp.c_proj"]
    assert max(map(len, _table_lines(cut))) == width - 3
    for nonsense in ("0", "wide"):  # a $COLUMNS that is no width: none known, nothing cut
        monkeypatch.setenv("COLUMNS", nonsense)
        assert invoke("analyze", model, "--hw", "a100").stdout == whole
    monkeypatch.setenv("COLUMNS", "80")
    for fmt in ("markdown", "csv", "json"):  # never cut, whatever the width
        assert "transformer.h.11.mlp.c_proj" in invoke("analyze", model, "--hw", "a100",
                                                       "--format", fmt).stdout


def test_compare_cuts_its_gemm_table_the_same_way(invoke, monkeypatch, tmp_path):
    model = _long_names(tmp_path)
    args = ("compare", model, "--hw", "a100", "--hw", "h100")
    assert "transformer.h.11.mlp.c_proj" in invoke(*args).stdout
    monkeypatch.setenv("COLUMNS", "60")
    narrow = invoke(*args).stdout
    assert "...r.h.11.mlp.c_proj" in narrow and "transformer.h.11" not in narrow
    assert "transformer.h.11.mlp.c_proj" in invoke(*args, "--format", "markdown").stdout
