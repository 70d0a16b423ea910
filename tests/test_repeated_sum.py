"""A float added once per copy of a repeat, at once, is the loop's sum to the last bit
(``model.repeated_sum``): an identity, checked against the loop itself on values drawn from
every magnitude and on ties (a value whose last bit falls half-way between the sum's
doubles), not a timing."""

from __future__ import annotations

import math
import random
from itertools import chain, repeat

import pytest

from roofline.model.repeated_sum import repeated_sum, run_sum


def loop(start, values, times):
    s = start
    for _ in range(times):
        for v in values:
            s = s + v
    return s


def same(a, b):
    return type(a) is type(b) and (a == b or (math.isnan(a) and math.isnan(b)))


def test_one_value_many_times_is_the_loops_sum_bit_for_bit():
    rng = random.Random(20261128)
    for _ in range(300):
        value = rng.uniform(1, 2) * 10.0 ** rng.randint(-9, 3)
        start = rng.choice([0, 0.0, rng.uniform(0, 1) * 10.0 ** rng.randint(-9, 3)])
        times = rng.choice([1, 2, 3, 17, 1000, rng.randint(1, 20_000)])
        assert same(repeated_sum(start, (value,), times), loop(start, (value,), times))


def test_a_pattern_of_values_repeated_is_the_loops_sum():
    rng = random.Random(7)
    for _ in range(200):
        values = tuple(rng.uniform(0, 1) * 10.0 ** rng.randint(-8, 0)
                       for _ in range(rng.randint(1, 4)))
        start = rng.uniform(0, 1) * 10.0 ** rng.randint(-8, 0)
        times = rng.randint(1, 5_000)
        assert same(repeated_sum(start, values, times), loop(start, values, times))


def test_ties_round_as_the_loop_does():
    """A value whose lowest set bit is 2^-20 (k / 2^20, few bits) lies half-way between the
    sum's neighbouring doubles once the sum's spacing is 2^-19: round-half-to-even then depends
    on the sum's last bit, which the loop's own additions settle."""
    rng = random.Random(3)
    for _ in range(150):
        value = rng.randrange(1, 2**12, 2) / 2**20  # odd numerator: its last bit at 2^-20
        start = rng.choice([0.0, 2.0**30, 2.0**33 - 2.0**-19, rng.randrange(2**20) / 2**19])
        times = rng.randint(1, 20_000)
        assert same(repeated_sum(start, (value,), times), loop(start, (value,), times))
    for _ in range(50):  # a period of several values, few bits each
        values = tuple(rng.randrange(0, 2**8) / 2**rng.randint(4, 24) for _ in range(3))
        times = rng.randint(1, 5_000)
        assert same(repeated_sum(1.0, values, times), loop(1.0, values, times))
    # exactly half a spacing: 2^33 + 2^-20 x n, the spacing there 2^-19
    assert same(repeated_sum(2.0**33, (2.0**-20,), 10_000), loop(2.0**33, (2.0**-20,), 10_000))
    assert same(repeated_sum(2.0**33, (3 * 2.0**-20, 2.0**-20), 9_999),
                loop(2.0**33, (3 * 2.0**-20, 2.0**-20), 9_999))


def test_what_it_cannot_step_through_the_loop_adds():
    """Zeros, an int start, negative, infinite and tiny values, a sum near the largest double:
    each the loop's result, bit for bit."""
    for start, values, times in ((0, (0.0,), 5), (0, (1e-310,), 1000), (1.0, (-1e-3,), 1000),
                                 (0.0, (math.inf,), 3), (0, (2, 3), 4), (1e307, (1e306,), 100),
                                 (5, (), 7), (0, (0.1,), 0), (0.0, (0.0, 1e-7), 100)):
        assert same(repeated_sum(start, values, times), loop(start, values, times))
    assert repeated_sum(0, (), 3) == 0 and type(repeated_sum(0, (), 3)) is int


def test_a_run_sum_is_sum_over_the_values_written_out():
    rng = random.Random(11)
    pieces = [(rng.uniform(0, 1) * 10.0 ** rng.randint(-7, -3), rng.randint(1, 30_000))
              for _ in range(6)]
    assert same(run_sum(pieces), sum(chain.from_iterable(repeat(v, n) for v, n in pieces)))
    assert run_sum([]) == 0 and type(run_sum([])) is int


@pytest.mark.parametrize("times", [10**5, 2**20])
def test_a_million_copies_at_once(times):
    value = 1.3e-5  # a block's time, seconds
    assert same(repeated_sum(0, (value,), times), sum(repeat(value, times)))
