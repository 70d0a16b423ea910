"""A group of GEMMs held as runs (``model.item_numbers``) is labelled as the names written out
one by one are (``output.report.compact_names``): the pieces worked out by hand for runs whose
copies stay apart, join across a copy's seam, or join the run before, and the same labels as
the written-out names over many random runs."""

from __future__ import annotations

import random

import pytest

from roofline.model.item_numbers import ItemNumbers, grouped, grouped_names
from roofline.output.report import compact_names


def _numbers(*blocks: tuple[int, int, int, tuple[int, ...]]) -> ItemNumbers:
    out = ItemNumbers("MM")
    for block in blocks:
        out.add(*block)
    return out


def test_copies_that_stay_apart():
    """first 1, 4 items a copy, 3 copies, offsets 0 and 2: MM1, MM3, MM5, MM7, MM9, MM11 (1 +
    4c + {0, 2}), no two consecutive: six pieces; past 4 the rest is counted, 6 - 4 + 1 = 3."""
    group = _numbers((1, 4, 3, (0, 2)))
    assert list(group) == [1, 3, 5, 7, 9, 11]
    assert group.pieces(8) == ([(n, n) for n in (1, 3, 5, 7, 9, 11)], 6)
    assert compact_names(group, 4) == "MM1,MM3,MM5,+3"


def test_a_range_across_each_seam():
    """first 1, 4 items a copy, 3 copies, offsets 0, 1, 3: 1 2 . 4 | 5 6 . 8 | 9 10 . 12. Copy
    c's last (4c + 4) and copy c + 1's first two join: MM1-MM2 (two, so two pieces), MM4-MM6,
    MM8-MM10 (ranges of three), MM12: 2 + 1 + 1 + 1 = 5 pieces."""
    group = _numbers((1, 4, 3, (0, 1, 3)))
    assert group.pieces(8) == ([(1, 1), (2, 2), (4, 6), (8, 10), (12, 12)], 5)
    assert compact_names(group, 8) == "MM1,MM2,MM4-MM6,MM8-MM10,MM12"
    assert compact_names(group, 3) == "MM1,MM2,+3"


def test_every_item_of_every_copy_is_one_range_joining_its_neighbours():
    """A run taking every item of 100,000 copies of 12 (MM2 .. MM1,200,001) after MM1 and
    before MM1,200,002 (two runs of one item): one range MM1-MM1200002, one piece."""
    group = _numbers((1, 1, 1, (0,)), (2, 12, 100_000, tuple(range(12))), (1_200_002, 1, 1, (0,)))
    assert group.pieces(8) == ([(1, 1_200_002)], 1)
    assert compact_names(group, 8) == "MM1-MM1200002"
    assert len(group) == 1_200_002


def test_a_million_copies_are_counted_not_walked():
    """offset 1 of 4 in 10**6 copies from MM1: MM2, MM6, MM10, ... 10**6 singles; shown 7 and
    +999,993 (10**6 - 8 + 1), without walking them (only the first few are written)."""
    group = _numbers((1, 4, 10**6, (1,)))
    shown, total = group.pieces(8)
    assert total == 10**6
    assert shown == [(2, 2), (6, 6), (10, 10), (14, 14), (18, 18), (22, 22), (26, 26),
                     (30, 30)]
    assert compact_names(group, 8) == "MM2,MM6,MM10,MM14,MM18,MM22,MM26,+999993"


def test_more_offsets_of_the_same_run_extend_its_block():
    group = ItemNumbers("MM")
    group.add(5, 3, 2, (0,))
    group.add(5, 3, 2, (2,))
    assert group.blocks == [(5, 3, 2, (0, 2))]
    assert list(group) == [5, 7, 8, 10]


@pytest.mark.parametrize("seed", range(4))
def test_runs_label_as_the_names_written_out(seed):
    rng = random.Random(seed)
    for _ in range(2_000):
        group, first = ItemNumbers("MM"), 1
        for _ in range(rng.randint(0, 4)):
            first += rng.choice([0, 0, 1, 2, 5])
            period, count = rng.randint(1, 6), rng.choice([1, 2, 3, 4, 7])
            offsets = tuple(sorted(rng.sample(range(period), rng.randint(1, period))))
            group.add(first, period, count, offsets)
            first += period * count
        names = group.names()
        assert len(group) == len(names)
        for limit in (1, 2, 3, 4, 6, 8):
            assert compact_names(group, limit) == compact_names(names, limit)


def test_plain_items_are_grouped_by_name():
    """Items not in runs (a captured module's) keep their names, in order."""
    class Item:
        def __init__(self, name: str, value: int) -> None:
            self.name, self.layer, self.copy, self.value = name, "l", 0, value

    items = [Item("MM1", 1), Item("MM2", 2), Item("MM3", 1)]
    groups = grouped([items], lambda at: at[0].value, lambda item: item)
    assert groups == {1: ["MM1", "MM3"], 2: ["MM2"]}
    assert grouped_names({"MM1": None, "MM2": 4, "MM3": None}) == {None: ["MM1", "MM3"],
                                                                   4: ["MM2"]}
