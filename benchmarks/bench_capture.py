"""What capturing a 7B-parameter model costs: wall time and peak memory of a fresh process that
builds Llama-2-7B with Hugging Face transformers from examples/hf/llama-2-7b.json on the meta
device and captures it with ``roofline.torch.capture``. Run on demand (not a test):
``python benchmarks/bench_capture.py`` (needs the torch and hf extras).

Each mode runs once in a child process; the child times its phases (importing torch and
transformers, building the model, the capture, the report on a device) and its peak resident
memory is its own ``ru_maxrss`` (from ``os.wait4``), the imports included. Goal (issue 23):
well under 2 GB and under 30 s, because nothing is allocated: the weights (13.5 GB in fp16)
and the activations live on the meta device as shapes only.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from _child import run_child

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "examples" / "hf" / "llama-2-7b.json"
# mode -> capture's keyword arguments (the optimizer: torch's AdamW, its step recorded)
MODES = {"inference": {"mode": "inference"}, "train": {"mode": "train"},
         "train+adamw": {"mode": "train", "optimizer": "AdamW"}}


def child(mode: str, batch: int, seq: int, hw: str) -> None:
    """Run in the child: time each phase, print one JSON line."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    times = {}
    start = time.perf_counter()
    import torch
    import transformers

    from roofline.api import analyze_model
    from roofline.torch import capture

    times["import_s"] = time.perf_counter() - start
    mark = time.perf_counter()
    config = json.loads(CONFIG.read_text())
    kwargs = {k: v for k, v in config.items() if not k.startswith("_") and k != "architectures"}
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(
            transformers.AutoConfig.for_model(**kwargs))
    times["build_s"] = time.perf_counter() - mark
    options = dict(MODES[mode])
    if "optimizer" in options:
        options["optimizer"] = getattr(torch.optim, str(options["optimizer"]))
    mark = time.perf_counter()
    tokens = torch.zeros(batch, seq, dtype=torch.long)
    net = capture(model.train(options["mode"] == "train"), tokens, dtype="fp16", **options)
    times["capture_s"] = time.perf_counter() - mark
    mark = time.perf_counter()
    report = analyze_model(net, hw)
    times["report_s"] = time.perf_counter() - mark
    print(json.dumps({**times, "parameters": net.parameters, "gemms": len(report.results),
                      "ops": len(report.ops), "step_time_s": report.totals["time_s"]}))


def run_child_mode(args: list[str], timeout_s: float) -> tuple[float, float, int, str]:
    """Wall seconds, peak RSS in MiB, exit status and stdout of this script run as a child."""
    run = run_child([sys.executable, __file__, "--child", *args], timeout_s)
    if run.code and run.stderr.strip():
        print(run.stderr.strip().splitlines()[-1], file=sys.stderr)
    return run.wall_s, run.peak_mib, run.code, run.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", nargs="+", choices=list(MODES), default=list(MODES))
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=2048)
    parser.add_argument("--hw", default="h100")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.batch, args.seq, args.hw)
        return
    print(f"Llama-2-7B ({CONFIG.relative_to(ROOT)}) through transformers on the meta device, "
          f"batch {args.batch}, seq {args.seq}, fp16, report on {args.hw}; python "
          f"{sys.version.split()[0]}, {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.1f}")
    for mode in args.modes:
        wall, rss, code, out = run_child_mode([mode, "--batch", str(args.batch), "--seq",
                                          str(args.seq), "--hw", args.hw], timeout_s=300)
        if code:
            print(f"{mode:<12} exit {code}")
            continue
        r = json.loads(out.strip().splitlines()[-1])
        print(f"{mode:<12} {wall:6.1f} s in all (import {r['import_s']:.1f} s, build "
              f"{r['build_s']:.1f} s, capture {r['capture_s']:.1f} s, report "
              f"{r['report_s']:.1f} s)  peak {rss:6.0f} MiB  {r['parameters']:,} parameters, "
              f"{r['gemms']} GEMMs, {r['ops']} ops")


if __name__ == "__main__":
    main()
