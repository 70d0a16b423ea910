"""compare's and sweep's text name a repeat's copies as runs (``model.item_numbers``): a block
repeated 100,000 times reads as the same block repeated 10 times with the counts changed, in
every line that names GEMMs (the GEMM table and its note, the why lines, the memory-bound
cells, the transitions), and its lines that count them are the counts worked by hand."""

from __future__ import annotations

import re

import pytest

from roofline.analysis.whatif import compare, sweep
from roofline.model.network import network_from_yaml
from roofline.output.whatif import comparison_markdown, comparison_table
from roofline.output.whatif_sweep import sweep_markdown, sweep_table

# A trained transformer block whose GEMMs split between the bounds on an a100 (its ridge 153
# FLOP/B falls among their intensities, 110 to 216), so the why lines and transitions group
# GEMMs taken a few from each copy: 4 forward GEMMs a block (qkv, proj, ffn_up, ffn_down),
# MM4c+1 .. MM4c+4 for copy c; the head's 3 (forward, data and weight gradient) MM4N+1 ..
# MM4N+3; then 8 backward GEMMs a block from the last copy to the first: 12N + 3 in all.
MODEL = """name: r
batch: 8
seq: 512
dtype: bf16
mode: train
layers:
  - {type: embedding, vocab: 1000, dim: 256, name: emb}
  - {type: transformer, hidden: 256, heads: 4, ffn: 1024, gated: true, norm: rmsnorm,
     causal: true, repeat: %d, name: blk}
  - {type: linear, in: 256, out: 1000, name: head}
"""
SMALL, NEXT, HUGE = 10, 11, 100_000
#: Where a memory figure, not a count, tells the copies apart: a step of 100,000 blocks fits
#: nowhere, and a transition says so.
NO_FIT = re.compile(r" \(does not fit in memory: [^)]*\)")


def _texts(copies: int) -> list[str]:
    """The lines that name GEMMs, of compare (h100, a100, l4) and of sweeps over batch and
    over seq, whitespace and table rules aside (a wider name pads its column)."""
    network = network_from_yaml(MODEL % copies)
    lines = []
    table = comparison_table(compare(network, ["h100", "a100", "l4"]))
    lines += table[table.index("\nGEMM ") + 1:table.index("\nverdict:")].splitlines()
    for swept in (sweep(network, "a100", "1..64"),
                  sweep(network, "h100", 8, seqs="64..4096", mode="inference")):
        text = sweep_table(swept)
        rows, _, transitions = text[text.index("\nbatch ") + 1:].partition("\n\n")
        lines += [row.split()[-1] for row in rows.splitlines()[2:]]  # the memory-bound GEMMs
        lines += [NO_FIT.sub("", line) for line in transitions.splitlines()
                  if not line.startswith("step")]  # (the step's verdict has its figures)
    return [" ".join(line.split()) for line in lines if line.strip("- ")]


def _counted(small: list[str], following: list[str], copies: int) -> list[str]:
    """``small`` (``SMALL`` copies) with each number that ``following`` (``NEXT`` copies)
    changes moved to ``copies``: a GEMM's number or a count that grows by the same step each
    copy (its names and counts are affine in the copies); every other number kept."""
    assert len(small) == len(following)
    out = []
    for a, b in zip(small, following, strict=True):
        pieces, others = re.split(r"(\d+)", a), re.split(r"(\d+)", b)
        assert len(pieces) == len(others), (a, b)
        for i in range(1, len(pieces), 2):
            step = int(others[i]) - int(pieces[i])
            if step:  # (a figure's digits, 0.0896, kept as written)
                pieces[i] = str(int(pieces[i]) + step * (copies - SMALL))
        out.append("".join(pieces))
    return out


@pytest.fixture(scope="module")
def huge() -> list[str]:
    return _texts(HUGE)


def test_a_huge_repeat_reads_as_a_small_one_with_its_counts(huge):
    expected = _counted(_texts(SMALL), _texts(NEXT), HUGE)
    assert huge == expected


def test_the_counts_are_the_hand_worked_ones(huge):
    """12N + 3 = 1,200,003 GEMMs, all memory-bound on an l4; on an a100 qkv turns
    compute-bound in its forward (MM4c+1) and both its gradients (a pair of consecutive
    numbers, two pieces): 3 pieces a copy, 300,000, of which 7 are shown and 300,000 - 7 =
    299,993 counted; the head MM400,001 .. MM400,003; a table row per first copy's GEMM, the
    other 99,999 copies' 12 each (1,199,988) left out; at batch 2 onward every copy's proj and
    its two gradients are memory-bound (MM4c+2 and a pair), 300,000 pieces, 5 shown, 299,995
    counted."""
    assert "MM1-MM1200003: memory-bound on both: the bandwidth ratio 300/3350 = 0.0896x" in huge
    assert ("MM1,MM5,MM9,MM13,MM17,MM21,MM25,+299993: turns compute-bound (intensity 183.4 >= "
            "ridge 153.0; memory-bound on h100-sxm5-80gb)") in huge
    assert ("MM400001-MM400003: turns compute-bound (intensity 194.2 >= ridge 153.0; "
            "memory-bound on h100-sxm5-80gb)") in huge
    assert ("(1199988 rows of repeated layer copies not shown: each repeats its first copy's; "
            "the step times count every copy)") in huge
    assert huge.count("MM2,MM6,MM10,MM14,MM18,+299995") == 6  # batch 2 .. 64
    assert "not up to 1048576: MM1-MM400001" in huge  # inference: 4 a block and the head


def test_markdown_names_the_same_runs():
    network = network_from_yaml(MODEL % HUGE)
    assert ("  - MM1,MM5,MM9,MM13,MM17,MM21,MM25,+299993: turns compute-bound (intensity 183.4 "
            "&gt;= ridge 153.0; memory-bound on h100-sxm5-80gb)"
            in comparison_markdown(compare(network, ["h100", "a100"])).splitlines())
    assert "- batch &gt;= 1: MM3,MM7,MM11,MM15,MM19,MM23,MM27,+299993" in sweep_markdown(
        sweep(network, "a100", "1,2"))


def test_runs_group_as_the_gemms_named_one_by_one():
    """Each group held as runs holds the GEMMs a name-by-name grouping gives (the JSON's
    per-GEMM why and transitions), in the same order of groups."""
    from roofline.model.item_numbers import grouped_names
    from roofline.output.whatif_why import why_groups, why_texts

    network = network_from_yaml(MODEL % SMALL)
    c = compare(network, ["h100", "a100", "l4"])
    for report in c.reports[1:]:
        by_name = grouped_names(dict(why_texts(c, report)))
        assert {why: group.names() for why, group in why_groups(c, report).items()} == by_name
        assert list(why_groups(c, report)) == list(by_name)
    s = sweep(network, "a100", "1..64")
    assert {b: g.names() for b, g in s.transition_groups().items()} == grouped_names(
        s.transitions())
    seq = s.seq_transition_groups()
    assert seq is not None and {n: g.names() for n, g in seq.items()} == grouped_names(
        s.seq_transitions() or {})


@pytest.mark.parametrize("names", [("MM7", "blk.2.qkv"), ("MM1", ""), ("a,b", 'say "x"'),
                                   ("line\nbreak", "cr\r"), (" spaced ", "tab\there")])
def test_a_row_written_in_two_parts_is_the_writer_s_row(names):
    """compare's and sweep's CSV write a row's names, then its rest once per stored result
    (``output.csv_rows``): the same line as csv.writer gives the whole row, quoting included."""
    import csv
    import io

    from roofline.output.csv_rows import csv_line, names_cells

    rest = [0.1, "memory", None, "", 3, True]
    whole = io.StringIO()
    csv.writer(whole, lineterminator="\n").writerow([*names, *rest])
    assert f"{names_cells(*names)},{csv_line(rest)}" == whole.getvalue()
