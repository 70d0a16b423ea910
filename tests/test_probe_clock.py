"""The core-clock measurement: the machine code it runs, and its arithmetic on injected timers."""

from __future__ import annotations

import itertools

import pytest

from roofline.probe import clock


def test_machine_code_is_the_add_chain_it_says():
    code = clock._machine_code(5)
    assert code[:1] == b"\xb9" and int.from_bytes(code[1:5], "little") == 5  # mov ecx, 5
    assert code.count(bytes.fromhex("4801d0")) == 16  # add rax, rdx
    assert code[-3:-1] == b"\x75" + (-(16 * 3 + 2 + 2)).to_bytes(1, "little", signed=True)
    assert code[-1:] == b"\xc3"  # ret


def test_clock_from_an_injected_timer():
    ticks = itertools.count(0, 0.004)  # every run takes 4 ms
    chain = lambda: 16 * 1000  # noqa: E731 - a stand-in that returns what the chain returns
    # 16 adds x 1000 iterations = 16,000 cycles in 4 ms = 4 MHz
    ghz = clock.chain_clock_ghz(1, repeats=3, iterations=1000, timer=lambda: next(ticks),
                                function=chain)
    assert ghz == pytest.approx(16_000 / 0.004 / 1e9)


def test_a_chain_that_returns_the_wrong_count_is_not_trusted():
    assert clock.chain_clock_ghz(1, iterations=1000, function=lambda: 7) is None


def test_the_real_chain_counts_its_adds():
    function = clock._chain_function(1000)
    if function is None:
        pytest.skip("no executable memory or not Linux x86-64")
    assert function() == 16 * 1000  # correctness only; no timing is asserted
