"""Do Hopper's GEMMs lose a part-empty last wave, as the tile/wave advice said before 0.9.0?
On demand (no test; no GPU: it reads what benchmarks/gpu_measure.py --parts waves --graph timed
on lent H100 SXM5s and an H200, benchmarks/data/h1?0_live_waves.csv):

    .venv/bin/python benchmarks/bench_gpu_waves.py [--markdown]

The data: bf16 GEMMs ``x @ W.t()`` (``F.linear``'s) swept in M at three (N, K)
(``gpu_measure.WAVE_SWEEPS``), across the tile counts where a wave of one 128x128 tile per SM
fills and the next starts part-empty, and the shapes the wave-only advice suggested for them
(``WAVE_SUGGESTIONS``); each shape's best run kept. Two tables per GPU:

1. The time model (``analysis.gpu_gemm``) with its stream-K candidate and without it (waves
   only), on the datasheet entry and on the entry a probe saved on a lent GPU of that kind
   (data/h1?0_live_probe_graph.yaml): measured / predicted, share within 1.25x, median, range.
   The sweeps were timed after stream-K entered the model: not fitted on, nor used to choose
   the term; the H200 was never fitted at all.
2. The advice: for each sweep shape the wave-only advice (no stream-K: ``runs_stream_k`` off)
   had a nearer better shape for, the speed-up per FLOP it claimed (its efficiency there over
   here) and the one measured; the advice with stream-K claims none on any of them.
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from _tables import table_lines

HERE = Path(__file__).resolve().parent / "data"
#: each GPU's timings and the entries it is predicted on: the datasheet's and its probe's
GPUS = {"h100-sxm5-80gb": (HERE / "h100_live_waves.csv", HERE / "h100_live_probe_graph.yaml"),
        "h200-sxm-141gb": (HERE / "h200_live_waves.csv", HERE / "h200_live_probe_graph.yaml")}


def best_times(path: Path) -> dict[tuple[int, int, int], float]:
    """Each shape's best time over the runs, in seconds."""
    best: dict[tuple[int, int, int], float] = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if row["time_ms"]:
                shape = (int(row["m"]), int(row["n"]), int(row["k"]))
                best[shape] = min(best.get(shape, math.inf), float(row["time_ms"]) * 1e-3)
    return best


@contextmanager
def stream_k(on: bool) -> Iterator[None]:
    """The GPU model and the advice with their stream-K terms on or off (``runs_stream_k``)."""
    from roofline.analysis import gpu_gemm, report

    saved = gpu_gemm.runs_stream_k
    if not on:
        gpu_gemm.runs_stream_k = report.runs_stream_k = lambda hardware, dtype: False
    try:
        yield
    finally:
        gpu_gemm.runs_stream_k = report.runs_stream_k = saved


def gemm(m: int, n: int, k: int):  # noqa: ANN201 - a roofline Gemm
    from roofline.model.gemm import Gemm

    return Gemm("MM1", "x", "forward", m, n, k, "bf16", ("batch", "out", "in"), (1, 0, 0))


def model_lines(times: dict[tuple[int, int, int], float], entries: tuple[str, ...],
                markdown: bool) -> list[str]:
    from roofline.analysis.report import analyze_gemm
    from roofline.hardware.catalog import load_hardware

    body = []
    for entry in entries:
        hw = load_hardware(entry)
        for on in (True, False):
            with stream_k(on):
                r = [t / analyze_gemm(gemm(*s), hw).predicted_time_s for s, t in times.items()]
            within = sum(1 / 1.25 <= x <= 1.25 for x in r) / len(r)
            body.append([hw.name, "stream-K" if on else "waves only", str(len(r)),
                         f"{within:.0%}", f"{statistics.median(r):.2f}",
                         f"{min(r):.2f}-{max(r):.2f}"])
    return table_lines(["entry", "model", "GEMMs", "within 1.25x", "median meas/pred",
                        "range"], body, markdown)


def advice_lines(times: dict[tuple[int, int, int], float], entry: str,
                 markdown: bool) -> list[str]:
    from roofline.analysis.report import analyze_gemm
    from roofline.hardware.catalog import load_hardware

    hw = load_hardware(entry)
    body, claimed, measured, kept = [], [], [], 0
    for shape, t in times.items():
        with stream_k(False):
            q = analyze_gemm(gemm(*shape), hw).quantization
        if q is None or q.better is None or q.better[:3] not in times:
            continue
        with stream_k(True):
            now = analyze_gemm(gemm(*shape), hw).quantization
        better = q.better[:3]
        rate = 2 * math.prod(shape) / t
        gain = 2 * math.prod(better) / times[better] / rate
        body.append(["x".join(map(str, shape)), "x".join(map(str, better)),
                     f"{q.effective:.0%}", f"{q.better[3] / q.effective:.2f}x",
                     f"{rate / 1e12:.0f}", f"{gain:.2f}x",
                     f"{now.effective:.0%}" if now else "-"])
        if now is not None and now.better is not None:
            kept += 1  # fewer tiles than SMs: no stream-K, the same advice either way
            continue
        claimed.append(q.better[3] / q.effective)
        measured.append(gain)
    faster = sum(g >= 1.05 for g in measured)
    err_old = statistics.median(abs(math.log(g / c)) for g, c in zip(measured, claimed))
    err_new = statistics.median(abs(math.log(g)) for g in measured)
    return [*table_lines(["shape", "suggested", "waves-only busy", "claimed", "TFLOP/s",
                          "measured", "with stream-K busy"], body, markdown), "",
            f"{len(body)} suggestions, {kept} kept with stream-K (fewer tiles than SMs). The "
            f"other {len(measured)}: measured speed-up per FLOP median "
            f"{statistics.median(measured):.2f}x ({min(measured):.2f}-{max(measured):.2f}), "
            f"{faster} at 1.05x or more, {sum(g < 1 for g in measured)} slower; claimed median "
            f"{statistics.median(claimed):.2f}x ({min(claimed):.2f}-{max(claimed):.2f}). "
            f"Median |log(measured / claimed)|: {err_old:.3f} waves only, {err_new:.3f} with "
            f"stream-K (which claims 1.00x)"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    for entry, (data, probed) in GPUS.items():
        times = best_times(data)
        print(f"{entry}: {len(times)} GEMMs ({data.name})")
        print("\n".join(model_lines(times, (entry, str(probed)), args.markdown)))
        print()
        print("\n".join(advice_lines(times, entry, args.markdown)))
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
