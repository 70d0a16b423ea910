"""How large a model ``roofline analyze`` handles: wall time and peak memory of a fresh process
per MLP size. Run on demand (not a test): ``python benchmarks/bench_large_model.py``.

Each size runs once as ``python -m roofline analyze MODEL --hw a100 --format F`` in a child
process; its peak resident memory is the child's own ``ru_maxrss`` (from ``os.wait4``, so one
child's peak never hides another's). Reports the largest MLP analyzed in under ``--limit``
seconds (10 by default) and its peak memory. Goal (issue 9): a 100,000-layer MLP (a 600 KB
model file) in well under 1 GB.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def write_mlp(folder: Path, layers: int) -> Path:
    widths = [1024 + 8 * (i % 7) for i in range(layers + 1)]
    path = folder / f"mlp-{layers}.yaml"
    path.write_text(f"batch: 256\ndtype: fp16\nmlp: {widths}\n")
    return path


def run_child(cmd: list[str], timeout_s: float) -> tuple[float, float, int]:
    """Wall seconds, peak RSS in MiB and exit status of ``cmd`` (killed after ``timeout_s``)."""
    start = time.perf_counter()
    child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = start + timeout_s
    while True:
        pid, status, usage = os.wait4(child.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() > deadline:
            child.kill()
            pid, status, usage = os.wait4(child.pid, 0)
            break
        time.sleep(0.01)
    child.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    scale = 1 if sys.platform == "darwin" else 1024  # ru_maxrss: bytes on macOS, KiB on Linux
    return wall, usage.ru_maxrss * scale / 2**20, child.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--formats", nargs="+", default=["table", "json"])
    parser.add_argument("--limit", type=float, default=10.0, help="seconds a size may take")
    args = parser.parse_args()
    largest = {}
    with tempfile.TemporaryDirectory() as tmp:
        for layers in args.sizes:
            model = write_mlp(Path(tmp), layers)
            size_kb = model.stat().st_size / 1e3
            for fmt in args.formats:
                cmd = [sys.executable, "-m", "roofline", "analyze", str(model), "--hw", "a100",
                       "--format", fmt]
                wall, rss_mib, code = run_child(cmd, timeout_s=max(60.0, 3 * args.limit))
                gemms = 3 * layers - 1
                print(f"{layers:>8,} layers ({gemms:>7,} GEMMs, {size_kb:7.0f} kB) {fmt:<6} "
                      f"{wall:7.2f} s  peak {rss_mib:7.0f} MiB  exit {code}")
                if code == 0 and wall < args.limit:
                    largest[fmt] = (layers, wall, rss_mib)
    for fmt, (layers, wall, rss) in largest.items():
        print(f"largest MLP under {args.limit:g} s ({fmt}): {layers:,} layers, "
              f"{wall:.2f} s, peak {rss:.0f} MiB")


if __name__ == "__main__":
    main()
