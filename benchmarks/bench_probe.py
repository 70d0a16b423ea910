"""How close does `roofline probe` get to the machine's limits? Run on demand (not a test):

    .venv/bin/python benchmarks/bench_probe.py [--array-mib 512] [--rounds 3]

1. DRAM: a C OpenMP STREAM-style triad and copy (written from the string below into a temp dir,
   compiled with gcc -O3 -fopenmp -march=native when gcc is present) against the probe's own
   figures; the C runs come before and after the probe and the best of them counts for triad
   and copy. The probe's DRAM figure (a read stream) is compared in pairs: a C triad, then
   right after it the probe's read stream alone (the same kernel, size and settings), three
   times, since a shared VM's memory bandwidth can move by 1.7x within a minute.
2. fp32 GEMM: the best rate of numpy's own large matmul (plain loop, sizes 2048-4096) against
   the probe's fp32 figure.
3. Every measured figure against the theoretical peak the probe computed (assumptions printed).

Environment variables that change BLAS behaviour (OPENBLAS_CORETYPE, OPENBLAS_L2_SIZE,
OMP_NUM_THREADS...) are printed, never changed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

C_STREAM = r"""
#include <stdio.h>
#include <stdlib.h>
#include <omp.h>
int main(int argc, char **argv) {
    long n = atol(argv[1]); int reps = atoi(argv[2]);
    double *a = malloc(n * sizeof(double)), *b = malloc(n * sizeof(double)),
           *c = malloc(n * sizeof(double));
    #pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) { a[i] = 0.0; b[i] = 1.0; c[i] = 2.0; }
    double best_triad = 1e30, best_copy = 1e30, s = 3.0;
    for (int r = 0; r < reps; r++) {
        double t = omp_get_wtime();
        #pragma omp parallel for schedule(static)
        for (long i = 0; i < n; i++) a[i] = b[i] + s * c[i];
        t = omp_get_wtime() - t; if (t < best_triad) best_triad = t;
        t = omp_get_wtime();
        #pragma omp parallel for schedule(static)
        for (long i = 0; i < n; i++) a[i] = b[i];
        t = omp_get_wtime() - t; if (t < best_copy) best_copy = t;
    }
    if (a[n / 2] != 1.0) { fprintf(stderr, "wrong result\n"); return 1; }
    printf("%f %f %d\n", 24.0 * n / best_triad / 1e9, 16.0 * n / best_copy / 1e9,
           omp_get_max_threads());
    return 0;
}
"""


def compile_stream(folder: Path) -> Path | None:
    gcc = shutil.which("gcc")
    if gcc is None:
        return None
    (folder / "stream.c").write_text(C_STREAM)
    exe = folder / "stream"
    subprocess.run([gcc, "-O3", "-fopenmp", "-march=native", str(folder / "stream.c"), "-o",
                    str(exe)], check=True)
    return exe


def run_stream(exe: Path, elements: int, reps: int = 10) -> tuple[float, float, int]:
    out = subprocess.run([str(exe), str(elements), str(reps)], check=True, capture_output=True,
                         text=True).stdout.split()
    return float(out[0]), float(out[1]), int(out[2])


def numpy_matmul_best(sizes=(2048, 3072, 4096), seconds_per_size: float = 2.0) -> tuple:
    import numpy as np

    best = (0.0, 0)
    for n in sizes:
        a = np.random.default_rng(0).standard_normal((n, n), dtype=np.float32)
        b = np.random.default_rng(1).standard_normal((n, n), dtype=np.float32)
        a @ b
        start = time.perf_counter()
        while time.perf_counter() - start < seconds_per_size:
            t = time.perf_counter()
            a @ b
            best = max(best, (2 * n**3 / (time.perf_counter() - t) / 1e9, n))
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--array-mib", type=int, default=512,
                        help="C STREAM array size (MiB each; the full probe uses up to 512)")
    parser.add_argument("--rounds", type=int, default=3, help="C runs before and after")
    args = parser.parse_args()
    from roofline.probe import run_probe
    from roofline.probe.runner import read_stream

    env = {k: v for k, v in os.environ.items() if k.startswith(("OPENBLAS_", "OMP_", "MKL_"))}
    print(f"environment: {env or 'no OPENBLAS_/OMP_/MKL_ variables set'}")
    elements = args.array_mib * 2**20 // 8
    with tempfile.TemporaryDirectory() as tmp:
        exe = compile_stream(Path(tmp))
        c_runs = [run_stream(exe, elements) for _ in range(args.rounds)] if exe else []
        t0 = time.perf_counter()
        result = run_probe(progress=lambda m: print(m, file=sys.stderr))
        probe_s = time.perf_counter() - t0
        c_runs += [run_stream(exe, elements) for _ in range(args.rounds)] if exe else []
        nbytes = result.details["dram_read"]["working_set_bytes"]
        pairs = [(run_stream(exe, elements)[0], read_stream(nbytes)["best"])
                 for _ in range(3)] if exe else []
    np_best, np_n = numpy_matmul_best()
    report(result, c_runs, np_best, np_n, probe_s, args.array_mib)
    if pairs:
        c_best, r_best = max(c for c, _ in pairs), max(r for _, r in pairs)
        print(f"probe read stream next to a C triad: "
              f"{', '.join(f'{r:.1f} / {c:.1f} = {r / c:.2f}x' for c, r in pairs)}; best "
              f"{r_best / c_best:.2f}x   [target >= 0.95]")
    return 0


def report(result, c_runs, np_best: float, np_n: int, probe_s: float, array_mib: int) -> None:
    m, t = result.measured, result.theoretical
    bw = m["bandwidth_gbs"]
    print(f"\nfull probe took {probe_s:.1f} s")
    if c_runs:
        c_triad, c_copy = max(r[0] for r in c_runs), max(r[1] for r in c_runs)
        print(f"C STREAM ({c_runs[0][2]} OpenMP threads, 3 x {array_mib} MiB, best of "
              f"{len(c_runs)} runs x 10): triad {c_triad:.1f} GB/s, copy {c_copy:.1f} GB/s")
        print(f"probe dram {bw['dram']:.1f} GB/s ({result.details['dram_kernel']}) / best C "
              f"triad = {bw['dram'] / c_triad:.0%} (not paired in time: see the pairs below)")
        print(f"  like for like: probe triad {bw['triad']:.1f} / C triad = "
              f"{bw['triad'] / c_triad:.0%};  probe copy {bw['copy']:.1f} / C copy = "
              f"{bw['copy'] / c_copy:.0%}")
    else:
        print("gcc not found: no C STREAM comparison")
    fp32 = m["gemm_gflops"]["fp32"]
    print(f"numpy matmul best fp32 {np_best:.1f} GFLOP/s (n={np_n}); probe fp32 {fp32:.1f} "
          f"GFLOP/s = {fp32 / np_best:.0%}   [target >= 95%]")
    print("measured vs theoretical peak of this CPU:")
    for dtype, value in m["gemm_gflops"].items():
        peak = t["gemm_gflops"].get(dtype)
        print(f"  {dtype}: {value:.1f} / {peak:.1f} GFLOP/s = {value / peak:.0%}" if peak else
              f"  {dtype}: {value:.1f} GFLOP/s (no theoretical figure)")
    print(f"  theoretical peaks (GFLOP/s): "
          f"{', '.join(f'{d} {v:.1f}' for d, v in t['gemm_gflops'].items())}")
    print(f"  DRAM: theoretical {t['bandwidth_gbs'].get('dram', 'unknown')}")
    for line in result.assumptions:
        print(f"  assumed: {line}")
    for item in result.not_measured:
        print(f"  not measured: {item['figure']}: {item['reason']}")
    for warning in result.warnings:
        print(f"  warning: {warning}")


if __name__ == "__main__":
    sys.exit(main())
