"""A weight read from DRAM at every use: does the prediction follow? Run on demand (not a test):

    .venv/bin/python benchmarks/bench_kept_weights.py --hw NAME [--markdown]

A timing loop repeats one GEMM with the same operands, and the calibrated CPU model
(``analysis.predict``) takes a GEMM whose working set fits in the last-level cache as resident,
as the probe's loops saw it. A network's step reads each weight once, after every other weight
and activation of the step has passed through the cache: when the step keeps more than the
cache holds, the weight comes from DRAM however small the GEMM (``analysis.residency``).

For GEMMs whose weight B fits in the LLC (M = 1, 4, 16, 64, 128 rows against a 768 x 768,
2304 x 768 and 4096 x 1024 fp32 weight: GPT-2's and the README MLP's layers at decode and
small batch), this times through the library ``NAME``'s calibration was timed with (numpy's
BLAS, or torch with ``probe --library torch``):

- *repeated*: one A, one B, the GEMM repeated (what the probe times, and ``--measure`` where the
  step keeps its weights in the cache);
- *cycled*: one A and distinct weights B totalling at least 4x the LLC, each call the next one
  (what a step does to its weights, and what ``--measure`` times when the step keeps more than
  the cache);

both by ``analysis.measure.time_kernels`` (round-robin rounds, the best of each kept), and holds
them against the prediction for a repeated GEMM and for one whose weight is read from DRAM
(``predict_gemm``'s ``weights_from_dram``, as ``analyze`` predicts a weight GEMM of a step that
keeps more than the cache). Per shape: both times, their ratio, both predictions and measured /
predicted; then the share within 1.25x and 2x of the cycled times, predicted with and without
the weight read from DRAM. The host's speed moves between runs: run it twice and report both;
the kernel the entry's fp32 peak was measured with is timed in the same rounds, and its
``host:`` line says how fast this host ran against the entry (``_host``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from typing import Any

from _host import host_line, peak_kernel
from _tables import table_lines

ROWS = (1, 4, 16, 64, 128)
WEIGHTS = ((768, 768), (2304, 768), (4096, 1024))  # (N, K) of B: GPT-2's qkv, proj; the MLP
CYCLE_LLC = 4  # the distinct weights of a cycled GEMM: at least this many LLCs of them


def kernels(m: int, n: int, k: int, copies: int, library: str) -> tuple[Any, Any]:
    """The repeated and the cycled fp32 GEMM through ``library``: ``--measure``'s own kernels
    (``kernels.cpu.shaped_gemm`` or ``kernels.torch_cpu.shaped_gemm``, ``weights`` copies of
    B for the cycled one), each checked against a reference before it is timed."""
    if library == "torch":
        from roofline.kernels.torch_cpu import shaped_gemm
    else:
        from roofline.kernels.cpu import shaped_gemm
    return shaped_gemm(m, n, k, 1, "fp32"), shaped_gemm(m, n, k, 1, "fp32", weights=copies)


def within(ratios: list[float], band: float) -> float:
    return sum(max(r, 1 / r) <= band for r in ratios) / len(ratios)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--hw", required=True,
                        help="a calibrated CPU entry (roofline probe --save NAME)")
    parser.add_argument("--markdown", action="store_true", help="tables in Markdown")
    args = parser.parse_args(argv)
    from roofline.analysis.measure import time_kernels
    from roofline.analysis.predict import library_of, predict_gemm
    from roofline.errors import RooflineError
    from roofline.hardware.catalog import load_hardware
    from roofline.model.gemm import Gemm
    from roofline.units import seconds

    try:
        hw = load_hardware(args.hw)
    except RooflineError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    library = library_of(hw)
    if hw.kind != "cpu" or library is None or not hw.llc_mb or "fp32" not in (
            hw.calibration.efficiency if hw.calibration else {}):
        print(f"error: {args.hw} is not a CPU entry calibrated in fp32 with a last-level cache",
              file=sys.stderr)
        return 2
    llc = hw.llc_mb * 2**20
    shapes = [(m, n, k) for m in ROWS for n, k in WEIGHTS if 4 * (m * k + k * n + m * n) <= llc]
    runs, copies = [], []
    for m, n, k in shapes:
        count = max(2, -(-CYCLE_LLC * round(llc) // (4 * k * n)))
        copies.append(count)
        runs += [kernel.run for kernel in kernels(m, n, k, count, library["name"])]
    reference = peak_kernel(hw)  # timed in the same rounds: how fast the host ran
    if reference is not None:
        runs.append(reference[1].run)
    print(f"timing {len(shapes)} shapes, repeated and cycled, through {library['name']} ...",
          file=sys.stderr)
    timed = time_kernels(runs)
    header = ["M x N x K", "B", "repeated", "cycled", "cycled / repeated", "predicted repeated",
              "meas / pred", "predicted kept", "meas / pred", "meas / pred, kept 0"]
    body, kept_r, warm_r, repeat_r = [], [], [], []
    for i, (m, n, k) in enumerate(shapes):
        rep, cyc = timed[2 * i].best_s, timed[2 * i + 1].best_s
        gemm = Gemm("MM", "x", "forward", m, n, k, "fp32", b_operand="weight")
        warm = predict_gemm(gemm, hw).time_s
        cold = predict_gemm(gemm, hw, weights_from_dram=True).time_s
        repeat_r.append(rep / warm)
        kept_r.append(cyc / cold)
        warm_r.append(cyc / warm)
        body.append([f"{m} x {n} x {k}", f"{4 * n * k / 2**20:.1f} MiB", seconds(rep),
                     seconds(cyc), f"{cyc / rep:.2f}", seconds(warm), f"{rep / warm:.2f}",
                     seconds(cold), f"{cyc / cold:.2f}", f"{cyc / warm:.2f}"])
    print(f"{args.hw}: {hw.name}, calibrated through {library['name']} {library['version']}"
          f" ({library['threads']} threads); LLC {hw.llc_mb:g} MiB, DRAM "
          f"{hw.bandwidth_gbs:.1f} GB/s; cycled over {min(copies)}-{max(copies)} weights")
    if reference is not None:
        print(host_line(reference[0], [reference[1].work / timed[-1].best_s],
                        hw.peak_flops_per_s("fp32")))
    print("\n".join(table_lines(header, body, markdown=args.markdown)))
    print(f"\nrepeated vs predicted repeated: within 1.25x {within(repeat_r, 1.25):.0%}, 2x "
          f"{within(repeat_r, 2):.0%}; median {statistics.median(repeat_r):.2f}")
    print(f"cycled vs predicted with the weight from DRAM (analyze, a step beyond the cache): "
          f"within 1.25x {within(kept_r, 1.25):.0%}, 2x {within(kept_r, 2):.0%}; median "
          f"{statistics.median(kept_r):.2f}")
    print(f"cycled vs predicted as repeated (before 0.8.1): within 1.25x "
          f"{within(warm_r, 1.25):.0%}, 2x {within(warm_r, 2):.0%}; median "
          f"{statistics.median(warm_r):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
