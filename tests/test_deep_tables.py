"""A deep model's GEMMs are named when read, never built one by one for a table or JSON
(model.repeats.Numbered.named, output.report.Shown, output.table.aligned_shared); its text
leaves in large writes (cli.console._Chunked); a plain integer list parses at once
(files.safe_yaml). Names, layers and lines checked against values written out by hand."""

from __future__ import annotations

import io
import json
import sys

import pytest
import yaml

from roofline.analysis.memory import memory_parts
from roofline.analysis.report import analyze
from roofline.files.safe_yaml import parse
from roofline.hardware.catalog import load_hardware
from roofline.model.gemm import Gemm
from roofline.model.network import network_from_yaml
from roofline.output.report import View, report_table, shown_results
from roofline.output.table import aligned_lines, aligned_shared

# fc1, fc3 alike (8 -> 8), fc2 alike them too; a repeat of three after them; logits at the end
_MODEL = """
batch: 4
dtype: fp16
layers:
  - {type: linear, in: 8, out: 8}
  - {type: linear, in: 8, out: 8}
  - {type: linear, in: 8, out: 8, name: blk, repeat: 3}
  - {type: linear, in: 8, out: 16, name: head}
"""


def test_named_gives_each_gemm_its_name_layer_and_copy_in_order():
    gemms, _ = network_from_yaml(_MODEL).expand()
    # forward: fc1, fc2, blk.1..blk.3, head (MM1..MM6); backward from head: its data and
    # weight gradient, then blk.3, blk.2, blk.1 (copies 2, 1, 0), fc2 (data, weight), fc1
    # (weight only: nothing before it has weights): 6 + 2 + 6 + 2 + 1 = 17
    expected = [("MM1", "fc1", 0), ("MM2", "fc2", 0), ("MM3", "blk.1", 0), ("MM4", "blk.2", 1),
                ("MM5", "blk.3", 2), ("MM6", "head", 0),
                ("MM7", "head", 0), ("MM8", "head", 0),
                ("MM9", "blk.3", 2), ("MM10", "blk.3", 2), ("MM11", "blk.2", 1),
                ("MM12", "blk.2", 1), ("MM13", "blk.1", 0), ("MM14", "blk.1", 0),
                ("MM15", "fc2", 0), ("MM16", "fc2", 0), ("MM17", "fc1", 0)]
    assert [row[:3] for row in gemms.named()] == expected
    # the objects, built when read, say the same, in order and by index
    assert [(g.name, g.layer, g.copy) for g in gemms] == expected
    assert [(gemms[i].name, gemms[i].layer) for i in (0, 8, 16, -1)] == [
        ("MM1", "fc1"), ("MM9", "blk.3"), ("MM17", "fc1"), ("MM17", "fc1")]
    # firsts: copy 0 only (the rows a table shows of a repeat)
    assert [row[0] for row in gemms.named(firsts=True)] == [
        "MM1", "MM2", "MM3", "MM6", "MM7", "MM8", "MM13", "MM14", "MM15", "MM16", "MM17"]


def test_layers_alike_share_one_template_and_one_analysis():
    report = analyze(network_from_yaml(_MODEL), load_hardware("a100"))
    forward = [r for name, layer, _, r in report.results.named() if name in ("MM1", "MM2")]
    # fc1 and fc2 (8 -> 8 at batch 4) are one template: one result object stands for both
    assert forward[0] is forward[1]
    assert (forward[0].gemm.m, forward[0].gemm.n, forward[0].gemm.k) == (4, 8, 8)
    # 2 x 4 x 8 x 8 = 512 FLOP an 8 -> 8 GEMM: five forward (fc1, fc2, blk x 3), four data
    # gradients (blk x 3, fc2) and five weight gradients (blk x 3, fc2, fc1): 14 x 512; the
    # head's three (4 x 16 x 8, 4 x 8 x 16, 8 x 16 x 4) are 2 x 512 = 1,024 each
    assert report.totals["gemm_flops"] == 14 * 512 + 3 * 1024 == 10_240


def test_a_table_builds_no_gemm_per_row(monkeypatch):
    # 2,000 layers of seven widths: 5,999 rows. Reading them builds nothing per row: no GEMM
    # renamed, no result made (a deep model's table reads names beside shared results)
    widths = [64 + 8 * (i % 7) for i in range(2001)]
    net = network_from_yaml(f"batch: 32\ndtype: fp16\nmlp: {widths}\n")
    report = analyze(net, load_hardware("a100"))
    calls = []
    real = Gemm.renamed
    monkeypatch.setattr(Gemm, "renamed", lambda self, *a: calls.append(a) or real(self, *a))
    lines = report_table(report).splitlines()
    # (the step's verdict names its few templates for the layers they were made for: a
    # handful of calls, not one a row)
    assert len(calls) < 10
    assert lines[6].split()[:3] == ["MM1", "fc1", "fwd"]
    assert lines[6 + 5998].split()[:3] == ["MM5999", "fc1", "bwd-wgt"]


def test_shown_rows_are_the_first_copies_and_count_them():
    report = analyze(network_from_yaml(_MODEL), load_hardware("a100"))
    gemms, ops = shown_results(report, View())
    # 17 GEMMs less the copies of blk after the first: blk.2 and blk.3, 3 GEMMs each
    assert len(gemms) == 11 and bool(gemms) and not ops
    assert [r.gemm.name for r in gemms][:4] == ["MM1", "MM2", "MM3", "MM6"]
    every, _ = shown_results(report, View(expand=True))
    assert len(every) == 17
    assert [r.gemm.layer for r in every][3:5] == ["blk.2", "blk.3"]


@pytest.mark.parametrize("rows, left", [
    # (cells..., tail key): tails shared, one short, left and right columns
    ([("MM1", "fc1", "a"), ("MM10", "layer-long", "b"), ("MM2", "x", "a")], {0, 1, 2}),
    ([("MM1", "fc1", "a"), ("MM2", "fc2", "short")], {0}),
    ([("MM1", "fc1", "blank")], {0, 1, 3}),
])
def test_shared_tails_print_as_the_plain_table(rows, left):
    every = {"a": ("fwd", "256", "1.73 us"), "b": ("bwd-data", "64", "10 us"),
             "short": ("fwd",), "blank": ("", "", "")}
    tails = {row[-1]: every[row[-1]] for row in rows}  # the rows' own tails, no other
    header = ("GEMM", "layer", "pass", "M", "time")
    full = [(*row[:-1], *tails[row[-1]]) for row in rows]
    widths = [max(len(r[i]) for r in rows) for i in range(2)]
    assert list(aligned_shared(header, rows, tails, left, widths)) == list(
        aligned_lines(header, full, left))


def test_shared_tails_by_hand():
    lines = list(aligned_shared(("GEMM", "time"), [("MM1", "t"), ("MM10", "t")],
                                {"t": ("1 us",)}, {0}, [4]))
    assert lines == ["GEMM  time", "----------", "MM1   1 us", "MM10  1 us"]


def test_a_deep_table_leaves_in_large_writes(invoke, tmp_path, monkeypatch):
    widths = [64 + 8 * (i % 7) for i in range(3001)]
    model = tmp_path / "deep.yaml"
    model.write_text(f"batch: 32\ndtype: fp16\nmlp: {widths}\n")
    writes: list[int] = []

    class Counting(io.StringIO):
        def write(self, text: str) -> int:
            writes.append(len(text))
            return super().write(text)

    out = Counting()
    monkeypatch.setattr(sys, "stdout", out)
    from roofline.cli import main

    monkeypatch.setattr(sys, "argv", ["roofline", "analyze", str(model), "--hw", "a100"])
    with pytest.raises(SystemExit) as exit_:
        main()
    assert exit_.value.code in (0, None)
    text = out.getvalue()
    # 8,999 GEMM rows twice (the table and the time table) and the rest: under 1 MB a write
    lines = text.count("\n")
    assert lines > 2 * 8999
    assert len(writes) < 10 and max(writes) <= 2**20 + 200
    assert text.splitlines()[6].startswith("MM1 ")


@pytest.mark.parametrize("text", [
    "[1, 2, 012, 089, 0, 10_000, +3, -4, 0x10, 0o7, 1e3, 3.5, 1:30, '5', !!str 7, 0b11]",
    "{a: 100000, b: [0001, 9999999999999], c: '17', d: 00}",
    "- 1\n- 2\n- 'x'\n- !!int 12\n- !!float 3\n",
])
def test_plain_integers_parse_as_yaml_reads_them(text):
    # the fast path for plain decimal integers gives what PyYAML's safe loader gives
    assert parse(text, "t") == yaml.safe_load(text)


def test_an_overlong_integer_in_a_list_is_still_refused():
    from roofline.errors import InputError

    with pytest.raises(InputError, match="digits is out of range"):
        parse("mlp: [8, " + "9" * 5000 + "]", "t")


def test_memory_of_layers_alike_counts_each_layer():
    # inference, seq 10, logits last: the head (8 -> 16) runs on one token per sequence;
    # live bytes of a layer: its input and output, 2 B each. Layers before the head see
    # 4 x 10 tokens: (8 + 8) x 40 x 2 = 1,280 B; the head at 4 tokens: (8 + 16) x 4 x 2 = 192
    net = network_from_yaml(_MODEL + "mode: inference\nseq: 10\nlogits: last\n")
    parts = memory_parts(net, workspace=0)
    assert parts["activations"] == 1280
    # weights (no bias): five 8 x 8 and one 8 x 16: 5 x 64 + 128 = 448 parameters, 2 B each
    assert net.parameters == 448 and parts["weights"] == 896


def test_json_of_a_deep_model_names_each_gemm(invoke, tmp_path):
    widths = [64 + 8 * (i % 3) for i in range(301)]
    model = tmp_path / "deep.yaml"
    model.write_text(f"batch: 32\ndtype: fp16\nmlp: {widths}\n")
    result = invoke("analyze", str(model), "--hw", "a100", "--format", "json")
    data = json.loads(result.output)
    # 300 layers: 300 forward, 300 weight and 299 data gradients
    assert len(data["gemms"]) == 899
    assert [(g["name"], g["layer"], g["pass"]) for g in data["gemms"][299:302]] == [
        ("MM300", "fc300", "forward"), ("MM301", "fc300", "backward-data"),
        ("MM302", "fc300", "backward-weight")]
    # fc1 and fc4 alike (64 -> 72): the same figures under their own names
    one, four = data["gemms"][0], data["gemms"][3]
    assert (one["layer"], four["layer"]) == ("fc1", "fc4")
    assert {k: v for k, v in one.items() if k not in ("name", "layer")} == {
        k: v for k, v in four.items() if k not in ("name", "layer")}
    assert one["flops"] == 2 * 32 * 72 * 64
