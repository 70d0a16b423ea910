"""Does predicted_time_s hold on this machine? Run on demand (not a test):

    .venv/bin/python benchmarks/bench_predict.py [--quick] [--markdown]

One run: a C OpenMP STREAM triad (gcc -O3 -fopenmp, from bench_probe.py) right before a quick
probe and a fresh probe (full preset unless --quick; not saved), then four pairs, each the C
triad and right after it the probe's DRAM measurement on its own (roofline.probe.runner.
read_stream: the same kernel, size and settings as in the probe); then 42 GEMM shapes timed
through numpy's BLAS as ``analyze --measure`` times shapes (roofline.analysis.measure.
time_kernels: 4 round-robin rounds over all of them, 2 values each, the best kept, as the
probe times its calibration) against the calibrated prediction of the fresh entry. Prints the
machine, the calibration's rounds, other programs' load through each phase (roofline.kernels.
load: a run that overlapped other load is to be rerun), per-shape predicted vs measured and how
far apart its rounds' bests were, the share within 1.25x and 2x, the median and geometric-mean
ratio, the worst five with the term that dominated their prediction, and the DRAM figure against
the C triad: pairs, because the memory bandwidth of a shared VM can move by 1.7x within seconds.
Right before and after the shapes it times a 96^3 fp32 GEMM on one thread and on all the BLAS's
(``host:``): on the development VM a run whose small squares missed had them at one thread's
speed, the host starting the second vCPU late.

Fit and validation are apart: the probe calibrates on squares n = 32..512 (quick: ..256),
thin M = 1..64 at N = K = 1024 and at an N = K that puts B at 3x the LLC (5120 in fp32 and
3584 in fp64 for a 32 MiB LLC), and an N x N x 16 GEMM whose C is 3x the LLC (the same N);
the shapes here are others (squares 48..2048, thin M at N = K = 4096, the README's MLP, small
K, ...). A shape the probe also timed would be marked * in the table.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _host import thread_check, thread_line  # noqa: E402
from bench_probe import compile_stream, run_stream  # noqa: E402

MLP = [(512, 4096, 1024), (512, 1000, 4096), (512, 4096, 1000), (4096, 1000, 512),
       (1024, 4096, 512)]  # MM1..MM5 of examples/mlp-1024-4096-1000.yaml at batch 512


def shapes() -> list[tuple[int, int, int, str, str]]:
    out = []
    for d in ("fp32", "fp64"):
        out += [(s, s, s, d, "square") for s in (48, 96, 192, 384, 768, 2048)]
        out += [(m, 4096, 4096, d, "thin M") for m in (1, 4, 16, 32, 256)]
        out += [(*s, d, f"MLP MM{i + 1}") for i, s in enumerate(MLP)]
        out += [(4096, 4096, 16, d, "small K"), (65536, 64, 64, d, "small K, tall"),
                (1, 11008, 4096, d, "decode M=1"), (128, 8192, 128, d, "in cache"),
                (8192, 1024, 1024, d, "large batch")]
    return out


def calibration_shapes(calibration: dict) -> set[tuple[int, int, int, str]]:
    """Every (M, N, K, dtype) the probe timed for its calibration block."""
    out = set()
    for d, block in calibration["gemm_efficiency"].items():
        out |= {(int(n), int(n), int(n), d) for n in block["square"]}
        for table, nk in (("thin", "thin_nk"), ("thin_dram", "thin_dram_nk")):
            out |= {(int(m), block[nk], block[nk], d) for m in block.get(table, {})}
        if "c_write" in block:
            c = block["c_write"]
            out.add((c["m"], c["n"], c["k"], d))
    return out


def reason(terms: dict) -> str:
    if terms.get("resident"):
        return "cache-resident: compute at in-cache efficiency"
    top = max(("flop_s", "ab_s", "c_s", "call_s"), key=lambda k: terms.get(k, 0))
    return {"flop_s": "compute-limited (efficiency table)", "ab_s": "A/B streaming (read BW)",
            "c_s": "C write traffic", "call_s": "per-call overhead"}[top]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="calibrate from a quick probe")
    parser.add_argument("--array-mib", type=int, default=512)
    args = parser.parse_args()
    from roofline.analysis.measure import time_kernels
    from roofline.analysis.predict import predict_gemm
    from roofline.analysis.report import analyze_gemm
    from roofline.hardware.spec import HardwareSpec
    from roofline.kernels.cpu import shaped_gemm_kernel
    from roofline.kernels.load import LoadMeter
    from roofline.model.gemm import Gemm
    from roofline.probe import run_probe
    from roofline.probe.runner import read_stream

    say = lambda m: print(m, file=sys.stderr)  # noqa: E731
    elements = args.array_mib * 2**20 // 8
    meter, load = LoadMeter(), {}
    with tempfile.TemporaryDirectory() as tmp:
        exe = compile_stream(Path(tmp))
        c_before = run_stream(exe, elements)[0] if exe else None
        t0 = time.perf_counter()
        meter.lap()
        quick = run_probe(quick=True, progress=say)
        quick_s, load["quick probe"] = time.perf_counter() - t0, meter.lap()
        t0 = time.perf_counter()
        result = quick if args.quick else run_probe(progress=say)
        probe_s = quick_s if args.quick else time.perf_counter() - t0
        load[f"{result.preset} probe"] = meter.lap()
        read_bytes = result.details["dram_read"]["working_set_bytes"]
        pairs = [(run_stream(exe, elements)[0], read_stream(read_bytes, result.preset)["best"])
                 for _ in range(4)] if exe else []
    hw = HardwareSpec.from_dict(result.to_hardware_dict("bench"), "fresh probe")
    meta = result.metadata
    blas = ", ".join(f"{b['internal_api']} {b['version']} x{b['num_threads']}" for b in result.blas)
    print(f"machine: {meta['hostname']}: {result.cpu.brand}, {result.cpu.cores} cores, "
          f"{meta['platform']}; BLAS {blas}")
    print(f"probe: quick {quick_s:.1f} s, {result.preset} {probe_s:.1f} s; peaks fp32 "
          f"{hw.peak_tflops['fp32'] * 1e3:.1f}, fp64 {hw.peak_tflops['fp64'] * 1e3:.1f} GFLOP/s; "
          f"dram (read stream) {hw.bandwidth_gbs:.1f} GB/s")
    rounds = result.details.get("calibration_rounds", {})
    print(f"calibration: {rounds.get('rounds')} rounds ({rounds.get('extra_rounds')} more for "
          f"{', '.join(rounds.get('contradicting_first', [])) or 'nothing'}; still "
          f"contradicted: {', '.join(rounds.get('contradicting_left', [])) or 'nothing'})")
    fitted = calibration_shapes(result.measured["calibration"])
    todo = shapes()
    say(f"timing {len(todo)} shapes in rounds (roofline.analysis.measure.time_kernels) ...")
    before = thread_check()
    meter.lap()
    timed = time_kernels([shaped_gemm_kernel(m, n, k, d).run for m, n, k, d, _ in todo])
    load["the shapes' rounds"] = meter.lap()
    after = thread_check()
    rows = []
    for (m, n, k, d, kind), r in zip(todo, timed):
        g = Gemm("MM", "x", "forward", m, n, k, d)
        p = predict_gemm(g, hw)
        roof = analyze_gemm(g, hw).time_s
        rows.append((m, n, k, d, kind, roof, p, r.best_s, r.round_spread))
        say(f"  {m}x{n}x{k} {d}: predicted {p.time_s * 1e6:.1f} us, measured "
            f"{r.best_s * 1e6:.1f} us (rounds' bests {r.round_spread:.0%} apart: "
            f"{', '.join(f'{t * 1e6:.0f}' for t in r.round_best_s)} us)")
    print("other programs' load (CPUs, kernels.load): " + ", ".join(
        f"{what} {cpus:.2f}" if cpus is not None else f"{what} unknown"
        for what, cpus in load.items()))
    print(thread_line(before, after, "the shapes"))
    print("\n| shape (M x N x K) | dtype | kind | roof | predicted | measured | rounds apart | "
          "measured / predicted |\n|---|---|---|--:|--:|--:|--:|--:|")
    from roofline.units import seconds

    ratios = []
    for m, n, k, d, kind, roof, p, best, spread in rows:
        ratio = best / p.time_s
        ratios.append(ratio)
        star = "*" if (m, n, k, d) in fitted else ""
        print(f"| {m} x {n} x {k}{star} | {d} | {kind} | {seconds(roof)} | "
              f"{seconds(p.time_s)} | {seconds(best)} | {spread:.0%} | {ratio:.2f} |")
    off = [max(r, 1 / r) for r in ratios]
    print(f"\n{len(rows)} shapes: within 1.25x {sum(o <= 1.25 for o in off) / len(off):.0%} "
          f"[target >= 90%], within 2x {sum(o <= 2 for o in off) / len(off):.0%} [target 100%]; "
          f"median measured/predicted {statistics.median(ratios):.2f}, geometric mean "
          f"{statistics.geometric_mean(ratios):.2f}")
    roof_off = [max(b / rf, rf / b) for *_, rf, p, b, _ in rows]
    print(f"pure roofline for comparison: within 1.25x "
          f"{sum(o <= 1.25 for o in roof_off) / len(roof_off):.0%}, within 2x "
          f"{sum(o <= 2 for o in roof_off) / len(roof_off):.0%}")
    print("worst five:")
    worst = sorted(zip(off, ratios, rows), key=lambda t: -t[0])[:5]
    for _off, ratio, (m, n, k, d, kind, _, p, _best, _) in worst:
        print(f"  {m}x{n}x{k} {d} ({kind}): measured/predicted {ratio:.2f}; predicted by "
              f"{reason(p.terms)}")
    if pairs:
        c_best, r_best = max(c for c, _ in pairs), max(r for _, r in pairs)
        print(f"DRAM: the probe's read stream (dot product, 2 x {read_bytes / 2**21:.0f} MiB) "
              f"next to a C triad ({args.array_mib} MiB arrays), four pairs: "
              f"{', '.join(f'{r:.1f} / {c:.1f} = {r / c:.2f}x' for c, r in pairs)}; best "
              f"{r_best:.1f} / {c_best:.1f} GB/s = {r_best / c_best:.2f}x [target >= 0.95]")
        print(f"      the {result.preset} probe's own figure {hw.bandwidth_gbs:.1f} GB/s; "
              f"C triad right "
              f"before the probes {c_before:.1f} GB/s")
    else:
        print("gcc not found: no C triad comparison")
    return 0


if __name__ == "__main__":
    sys.exit(main())
