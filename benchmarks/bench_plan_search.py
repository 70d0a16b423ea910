"""How long ``roofline plan`` takes to search many GPU counts, and whether a change to the search
kept its outputs byte for byte. Run on demand (not a test):
``python benchmarks/bench_plan_search.py [--save DIR | --check DIR] [--time] [--trees SRC ...]``.

The two searches timed (``--time``) are docs/design.md's (Limits, "plan's outputs have no size
cap"): Llama-2-70B (its config.json figures, ``bench_large_model.LLAMA_70B``) on H100s, global
batch 1024 x 4096, every knob open (``--micro-batch 1..1024 --vp 1..16 --zero 0,1,2,3
--recompute full``), over ``--gpus 8..4096`` (10 counts) and over the 64 counts 64, 128, ...,
4096, each as the text table. Each runs ``--repeat`` times in a fresh process per source tree
(``--trees``: ``src`` folders, such as an older checkout's, put first on PYTHONPATH), the trees
taking turns within each round so that a shared machine's load falls on all of them alike; a
line gives the best wall time and the child's best CPU time (user + system), each with its
spread (worst over best), the best run's peak memory, and for a tree after the first its
ratios to the first's bests.

``--save DIR`` writes what every case in ``CASES`` prints (stdout and stderr, each format) with
the first tree; ``--check DIR`` runs them again and names each output that differs from the
saved one. The cases: both searches above in every format, and smaller searches that reach the
other branches of the search (experts and ep, selective recomputation, no sequence parallelism,
naive attention, a model without transformer blocks, another GPU and node size, ``--gemms``,
given lists with values left out). The model files are written to ``--models`` (one folder for
every run: the HTML page names the command that made it, paths included).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from _child import ChildRun, run_child
from bench_large_model import LLAMA_70B

ROOT = Path(__file__).resolve().parent.parent
HF = ROOT / "examples" / "hf"
EXAMPLES = ROOT / "examples"

#: every knob open, docs/design.md's search
OPEN = ["--hw", "h100", "--batch", "1024", "--seq", "4096", "--micro-batch", "1..1024", "--vp",
        "1..16", "--zero", "0,1,2,3", "--recompute", "full"]
COUNTS_64 = ",".join(str(64 * k) for k in range(1, 65))
FORMATS = ("table", "json", "csv", "html", "markdown")


def searches(models: Path) -> dict[str, list[str]]:
    """The two searches timed, by name: plan's arguments."""
    llama = models / "llama-2-70b.json"
    return {"70b-10-counts": ["plan", str(llama), "--gpus", "8..4096", *OPEN],
            "70b-64-counts": ["plan", str(llama), "--gpus", COUNTS_64, *OPEN]}


def cases(models: Path) -> dict[str, list[str]]:
    """Every output compared before and after a change, by name: plan's arguments."""
    out = {f"{name}.{fmt}": [*args, "--format", fmt]
           for name, args in searches(models).items() for fmt in FORMATS}
    mixtral, qwen_moe = str(HF / "mixtral-8x7b.json"), str(HF / "qwen3-30b-a3b.json")
    llama7, mlp = str(HF / "llama-2-7b.json"), str(EXAMPLES / "mlp-1024-4096-1000.yaml")
    small = {
        "mixtral-readme": ["plan", mixtral, "--hw", "h100", "--gpus", "16..128", "--batch",
                           "256", "--seq", "4096", "--ep", "1,2,4,8"],
        "qwen3-moe-selective": ["plan", qwen_moe, "--hw", "h200", "--gpus", "8..256",
                                "--batch", "512", "--seq", "4096", "--ep", "1..16",
                                "--recompute", "selective", "--vp", "1,2", "--micro-batch",
                                "1,2"],
        "llama7-no-sp-naive": ["plan", llama7, "--hw", "a100", "--gpus", "8..64", "--batch",
                               "256", "--seq", "2048", "--no-sequence-parallel",
                               "--attention", "naive", "--recompute", "selective"],
        "llama7-pcie-4-node": ["plan", llama7, "--hw", "a100-pcie-80gb", "--gpus", "4,12,24",
                               "--batch", "96", "--seq", "2048", "--gpus-per-node", "4",
                               "--inter", "100gbe", "--pp", "1..64", "--tp", "1,2,3,4"],
        "mlp-no-blocks": ["plan", mlp, "--hw", "h100", "--gpus", "1..8"],
        "llama7-gemms": ["plan", llama7, "--hw", "h100", "--gpus", "8,16", "--batch", "64",
                         "--seq", "4096", "--gemms", "--top", "5"],
    }
    for name, args in small.items():
        for fmt in ("table", "json", "csv", "html") if name != "llama7-gemms" else ("table",):
            out[f"{name}.{fmt}"] = [*args, "--format", fmt]
    return out


def run(args: list[str], tree: Path, timeout_s: float, keep_output: bool = True) -> ChildRun:
    """``python -m roofline ARGS`` with ``tree`` first on PYTHONPATH, its output read back only
    with ``keep_output``."""
    env = dict(os.environ, PYTHONPATH=str(tree), COLUMNS="120")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return run_child([sys.executable, "-m", "roofline", *args], timeout_s, env, keep_output)


def save_or_check(folder: Path, models: Path, tree: Path, check: bool, timeout_s: float,
                  only: str = "") -> int:
    """Write every case's outputs to ``folder`` (those whose name holds ``only``), or compare
    them with those saved there; the number that differ."""
    folder.mkdir(parents=True, exist_ok=True)
    differ = 0
    for name, args in cases(models).items():
        if only not in name:
            continue
        child = run(args, tree, timeout_s)
        got = {"out": child.stdout, "err": child.stderr + f"exit {child.code}\n"}
        verdicts = []
        for part, text in got.items():
            path = folder / f"{name}.{part}"
            if not check:
                path.write_text(text)
                verdicts.append(f"{part} {len(text):,} B")
            elif path.read_text() == text:
                verdicts.append(f"{part} same ({len(text):,} B)")
            else:
                differ += 1
                (folder / f"{name}.{part}.new").write_text(text)
                verdicts.append(f"{part} DIFFERS (new: {name}.{part}.new)")
        print(f"{name:32} {child.wall_s:6.1f} s  exit {child.code}  {', '.join(verdicts)}",
              flush=True)
    return differ


def time_searches(models: Path, trees: list[Path], repeat: int, timeout_s: float) -> None:
    """The searches, each tree in turn within each round, best of ``repeat``: wall time and the
    child's CPU time (user + system: what a shared machine's load sways less), each with its
    spread, and the best run's peak memory."""
    for name, args in searches(models).items():
        args = [*args, "--format", "table"]
        runs: dict[Path, list[ChildRun]] = {tree: [] for tree in trees}
        for _ in range(repeat):
            for tree in trees:
                child = run(args, tree, timeout_s, keep_output=False)
                if child.code:
                    raise SystemExit(f"{name} on {tree}: exit {child.code}\n{child.stderr}")
                runs[tree].append(child)
        first = min(runs[trees[0]])
        for tree in trees:
            best = min(runs[tree])
            walls = [r.wall_s for r in runs[tree]]
            cpus = [r.cpu_s for r in runs[tree]]
            ratio = (f"; {first.wall_s / best.wall_s:.2f}x the first's wall, "
                     f"{min(r.cpu_s for r in runs[trees[0]]) / min(cpus):.2f}x its CPU"
                     if tree != trees[0] else "")
            print(f"{name}  {tree}\n  wall best {best.wall_s:6.2f} s spread "
                  f"{max(walls) / best.wall_s:4.2f}x ({', '.join(f'{w:.2f}' for w in walls)});"
                  f" CPU best {min(cpus):6.2f} s spread {max(cpus) / min(cpus):4.2f}x "
                  f"({', '.join(f'{c:.2f}' for c in cpus)}); peak {best.peak_mib:.0f} MiB"
                  f"{ratio}", flush=True)
        print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--save", type=Path, metavar="DIR", help="write every case's outputs")
    what.add_argument("--check", type=Path, metavar="DIR",
                      help="compare every case's outputs with those saved in DIR")
    parser.add_argument("--time", action="store_true", help="time the two searches")
    parser.add_argument("--trees", type=Path, nargs="+", default=[ROOT / "src"],
                        help="source trees to run (PYTHONPATH), the first the reference")
    parser.add_argument("--models", type=Path, default=Path("/tmp/bench-plan-search"),
                        help="where the model files are written (the same for every run)")
    parser.add_argument("--only", default="", metavar="TEXT",
                        help="--save and --check: only the cases whose name holds TEXT")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each search and tree")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds a run may take")
    args = parser.parse_args()
    args.models.mkdir(parents=True, exist_ok=True)
    (args.models / "llama-2-70b.json").write_text(json.dumps(LLAMA_70B))
    trees = [tree.resolve() for tree in args.trees]
    if args.time:
        time_searches(args.models, trees, args.repeat, args.timeout)
    if args.save or args.check:
        differ = save_or_check(args.save or args.check, args.models, trees[0],
                               args.check is not None, args.timeout, args.only)
        if args.check:
            print(f"{differ} outputs differ" if differ else "every output is the same")
            raise SystemExit(1 if differ else 0)


if __name__ == "__main__":
    main()
