"""How large a model ``roofline analyze`` handles: wall time and peak memory of a fresh process
per model. Run on demand (not a test): ``python benchmarks/bench_large_model.py``.

Each model runs ``--repeat`` times as ``python -m roofline analyze MODEL --hw a100 --format F``
in a child process; its peak resident memory is the child's own ``ru_maxrss`` (from
``os.wait4``, so one child's peak never hides another's). Each line gives the best wall time
and the spread (worst over best) and the peak memory of the best run. Before timing, one
untimed run lets Python write its bytecode (the child runs without PYTHONDONTWRITEBYTECODE), so
the figures are an installed package's, not a first import's.

Models (``--cases``): ``mlp`` (MLPs of ``--sizes`` layers, every layer distinct), ``repeat``
(``repeat: 10**6`` of a transformer block and of a linear layer: a run analyzed once), ``70b``
(a Llama-2-70B-class config.json: hidden 8192, 64 heads, 8 KV heads, FFN 28672, vocab 32000,
80 layers). Goals (issue 25): ``repeat: 10**6`` under 1 s; a 100,000-layer MLP under 5 s and
300 MB; the 70B config under 1 s. ``--formats`` takes any of analyze's (table, json, csv,
markdown, html).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from _child import best_of, run_child


def write_mlp(folder: Path, layers: int) -> Path:
    widths = [1024 + 8 * (i % 7) for i in range(layers + 1)]
    path = folder / f"mlp-{layers}.yaml"
    path.write_text(f"batch: 256\ndtype: fp16\nmlp: {widths}\n")
    return path


LLAMA_70B = {  # Llama-2-70B's config.json figures (huggingface.co/meta-llama/Llama-2-70b-hf)
    "model_type": "llama", "hidden_size": 8192, "num_attention_heads": 64,
    "num_key_value_heads": 8, "intermediate_size": 28672, "num_hidden_layers": 80,
    "vocab_size": 32000, "max_position_embeddings": 4096, "rms_norm_eps": 1e-05,
    "tie_word_embeddings": False, "torch_dtype": "float16"}


def write_cases(folder: Path, cases: list[str], sizes: list[int]) -> list[tuple[str, Path,
                                                                               list[str]]]:
    """(label, model file, extra options) of each model to time."""
    out = []
    if "mlp" in cases:
        for layers in sizes:
            model = write_mlp(folder, layers)
            out.append((f"mlp {layers:,} layers ({3 * layers - 1:,} GEMMs, "
                        f"{model.stat().st_size / 1e3:.0f} kB)", model, []))
    if "repeat" in cases:
        block = folder / "repeat-block.yaml"
        block.write_text("batch: 8\nseq: 512\ndtype: fp16\nlayers:\n"
                         "  - {type: transformer, hidden: 1024, heads: 16, repeat: 1000000}\n")
        out.append(("repeat: 10**6 transformer blocks", block, []))
        linear = folder / "repeat-linear.yaml"
        linear.write_text("batch: 256\ndtype: fp16\nlayers:\n"
                          "  - {type: linear, in: 1024, out: 1024, repeat: 1000000}\n")
        out.append(("repeat: 10**6 linear layers", linear, []))
    if "70b" in cases:
        config = folder / "llama-2-70b.json"
        config.write_text(json.dumps(LLAMA_70B))
        out.append(("70B config.json, 80 layers, train b1 s2048", config,
                    ["--batch", "1", "--seq", "2048"]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", default=["repeat", "70b", "mlp"],
                        choices=["repeat", "70b", "mlp"])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--formats", nargs="+", default=["table", "json"])
    parser.add_argument("--repeat", type=int, default=3, help="runs of each model and format")
    parser.add_argument("--limit", type=float, default=10.0, help="seconds a size may take")
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    with tempfile.TemporaryDirectory() as tmp:
        cases = write_cases(Path(tmp), args.cases, args.sizes)
        warm = [sys.executable, "-m", "roofline", "analyze", str(cases[0][1]), "--hw", "a100"]
        run_child(warm + cases[0][2], 600.0, env, keep_output=False)  # bytecode, untimed
        for label, model, extra in cases:
            for fmt in args.formats:
                cmd = [sys.executable, "-m", "roofline", "analyze", str(model), "--hw", "a100",
                       "--format", fmt, *extra]
                figures = best_of(cmd, args.repeat, max(60.0, 3 * args.limit), env)
                print(f"{label:<48} {fmt:<6} {figures}", flush=True)


if __name__ == "__main__":
    main()
