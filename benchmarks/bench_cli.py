"""How much the command line costs: start-up against importing click, and a 10,000-layer MLP
against a 2-layer one. Run on demand (not a test): ``python benchmarks/bench_cli.py``.

Each command runs in a fresh interpreter, after one warm-up, ``--repeat`` times; the best time
is compared (the minimum is the least noisy estimate on a shared machine) and the spread shown.
Goals (issue 2): ``roofline --help`` costs little more than ``import click``; analyzing a
10,000-layer MLP costs under 10x a 2-layer one.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def best_of(cmd: list[str], repeat: int) -> tuple[float, float]:
    """Best and median wall time of ``cmd`` over ``repeat`` runs after one warm-up."""
    subprocess.run(cmd, check=True, capture_output=True)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return min(times), statistics.median(times)


def write_mlp(folder: Path, layers: int) -> Path:
    widths = [1024 + 8 * (i % 7) for i in range(layers + 1)]
    path = folder / f"mlp-{layers}.yaml"
    path.write_text(f"batch: 256\ndtype: fp16\nmlp: {widths}\n")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    py = sys.executable
    cli = [py, "-m", "roofline"]
    rows = []
    click_t = best_of([py, "-c", "import click"], args.repeat)
    help_t = best_of(cli + ["--help"], args.repeat)
    rows.append(("import click", click_t))
    rows.append(("roofline --help", help_t))
    with tempfile.TemporaryDirectory() as tmp:
        small, big = write_mlp(Path(tmp), 2), write_mlp(Path(tmp), 10_000)
        for fmt in ("table", "json"):
            base = cli + ["analyze", "--hw", "a100", "--format", fmt]
            rows.append((f"analyze 2 layers ({fmt})", best_of(base + [str(small)], args.repeat)))
            rows.append((f"analyze 10,000 layers ({fmt})",
                         best_of(base + [str(big)], args.repeat)))
    for name, (best, median) in rows:
        print(f"{name:<32} best {best * 1e3:8.1f} ms   median {median * 1e3:8.1f} ms")
    times = {name: best for name, (best, _) in rows}
    ratio = times["roofline --help"] / times["import click"]
    print(f"\nroofline --help / import click: {ratio:.2f}x")
    for fmt in ("table", "json"):
        ratio = times[f"analyze 10,000 layers ({fmt})"] / times[f"analyze 2 layers ({fmt})"]
        print(f"10,000 layers / 2 layers ({fmt}): {ratio:.2f}x (goal < 10x)")


if __name__ == "__main__":
    main()
