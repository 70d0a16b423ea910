"""Markdown output escapes what Markdown would read as markup: ``|`` in a table's cell (a layer
``fc|1`` split its row into one cell more than the header) and ``<``, ``>``, ``&`` everywhere
(a model named ``<script>...</script>`` came through raw, markup on a rendered page), in
analyze's, compare's and sweep's Markdown alike; a fenced code block is left as it is."""

from __future__ import annotations

import re

import pytest

from roofline.output.table import markdown, markdown_cell, markdown_text

HOSTILE = """\
name: "<script>alert(1) & co</script>"
batch: 512
dtype: fp16
mode: inference
layers:
  - {type: linear, in: 1024, out: 4096, name: "fc|1"}
  - {type: linear, in: 4096, out: 1000, name: "fc<2>"}
"""


def test_the_helpers_escape_by_hand():
    assert markdown_text("A, B fp16 -> C fp16 & <b>") == "A, B fp16 -&gt; C fp16 &amp; &lt;b&gt;"
    assert markdown_text("fc|1") == "fc|1"  # outside a table a pipe is text
    assert markdown_cell("fc|1") == "fc\\|1"
    assert markdown_cell("fc<2>") == "fc&lt;2&gt;"
    assert markdown_cell("&amp;") == "&amp;amp;"  # what was typed, not what it would render
    assert markdown(["layer", "time"], [["fc|1", "1 us"], ["fc2", "2 us"]], {0}) == [
        "| layer | time |", "|---|--:|", "| fc\\|1 | 1 us |", "| fc2 | 2 us |"]


def _cells(line: str) -> int:
    """The cells of a Markdown table row: the pipes not escaped, less one."""
    return len(re.findall(r"(?<!\\)\|", line)) - 1


@pytest.mark.parametrize("command", [
    ("analyze", "--hw", "a100"),
    ("compare", "--hw", "a100", "--hw", "h100"),
    ("sweep", "--hw", "a100", "--batch", "256..512"),
])
def test_every_markdown_output_escapes_names(invoke, tmp_path, command):
    model = tmp_path / "hostile.yaml"
    model.write_text(HOSTILE, encoding="utf-8")
    text = invoke(command[0], model, *command[1:], "--format", "markdown").stdout
    assert "<" not in text and ">" not in text
    assert "&lt;script&gt;alert(1) &amp; co&lt;/script&gt;" in text.splitlines()[0]
    tables = [[line for line in block.splitlines() if line.startswith("| ")]
              for block in text.split("\n\n")]
    tables = [table for table in tables if table]
    assert len(tables) >= 1
    for table in tables:  # every row has its header's cells
        assert {_cells(line) for line in table} == {_cells(table[0])}, table
    if command[0] != "sweep":  # the sweep's table has no layer names
        assert "| fc\\|1 |" in text and "| fc&lt;2&gt; |" in text


def test_a_code_block_is_left_as_it_is(invoke):
    text = invoke("analyze", "examples/mlp-1024-4096-1000.yaml", "--hw", "a100",
                  "--data-parallel", "8", "--interconnect", "nvlink3",
                  "--format", "markdown").stdout
    block = text.split("```\n")[1]
    assert block.startswith("data parallel: ring all-reduce of 16.6 MB of gradients")
    assert "&" not in block
    assert "precision: A, B fp16 -&gt; C fp16" in text  # outside it, escaped


def test_a_served_headers_lines_are_whole_lines_in_markdown(invoke):
    # the terminal's header wraps a long line at 100 columns, continuing it indented; in
    # Markdown each header line ends in a hard break ("  "), so a wrapped one broke mid-sentence
    # ("... (DGX H100 / HGX H100," / "8 GPUs) ..."): each is one line there
    llama = "examples/hf/llama-2-7b.json"
    out = invoke("analyze", llama, "--hw", "h100-sxm5-80gb", "--tp", "2", "--pp", "2",
                 "--batch", "8", "--prompt", "128", "--generate", "16",
                 "--format", "markdown").stdout
    header = out.split("\n\n")[0].split("\n")
    assert len(header) == 5  # title, precision, ridge, tensor- and pipeline-parallel lines
    assert all(line.endswith("  ") for line in header[:-1])
    assert not any(line.startswith(" ") for line in header)
    assert header[3].startswith("tensor-parallel over 2 GPUs") and header[3].endswith(
        "(DGX H100 / HGX H100, 8 GPUs) (450 GB/s, 3.4 us a step), exposed  ")
