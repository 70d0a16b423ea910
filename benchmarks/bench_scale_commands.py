"""What sweep, compare and plan cost on the largest published dense and MoE configs, and every
command on a block repeated 10**3 to 10**5 times: wall time and peak memory of a fresh process
per command. Run on demand (not a test): ``python benchmarks/bench_scale_commands.py
[--cases published repeats] [--blocks 1000 100000]``.

Each command runs ``--repeat`` times in a child process (``_child.run_child``: its own peak
memory) after one untimed run that writes Python's bytecode; each line gives the best wall
time, the spread (worst over best) and the peak memory of the best run. The models are
Llama-3.1-405B (126 blocks) and Mixtral-8x22B (56 blocks of 8 experts), from their published
config.json figures. Goal (the scale tour of 0.9.0): each under 10 s on a shared 2-vCPU
machine, none silent for long (plan says each shard it analyzes). Before 0.9.0 the plan of the
README's Mixtral-8x7B example took 11 s, Mixtral-8x22B's over 8..4096 GPUs 34 s, and a compare
of Llama-3.1-405B on all 28 bundled entries 5 s as JSON: each built every copy of a repeated
block by name, again and again.

``--cases repeats`` (0.9.0): a small transformer (hidden 256, 4 heads, a gated FFN of 1024,
vocabulary 32,000, batch 8 x seq 512) whose block repeats ``--blocks`` times (10**5 by default),
through ``plan`` at one layout (tp 2, pp 4, dp 2) and over 8..64 GPUs, ``analyze`` with
``--recompute full`` as a table, JSON, CSV and HTML, ``analyze --tp 2`` serving it, ``compare``
on three devices and ``sweep`` over batch 1..64, each as a table, Markdown, HTML, JSON and CSV,
``sweep`` over seq 64..4096 and sweep's chart (``--plot``, a PNG). Goal: what the model's
distinct layers cost, not its copies: each under 10 s at 10**5 blocks (a format that lists
every row refuses past its cap, exit 2, by design: analyze's and compare's JSON and CSV past
``MAX_LISTED`` rows, sweep's past ``MAX_SWEEP_LISTED``). Before 0.9.0's changes plan walked
every copy once a shard (``layer_times``) and once a layout: 7.2 s for one layout of 10**5
blocks, 230 s over 8..64 GPUs; compare named every GEMM for its why lines and sweep's cap
counted every copy (README, "How large a model")."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from _child import best_of, run_child

ROOT = Path(__file__).resolve().parent.parent

LLAMA_405B = {  # huggingface.co/meta-llama/Llama-3.1-405B config.json (the keys read)
    "model_type": "llama", "hidden_size": 16384, "intermediate_size": 53248,
    "num_attention_heads": 128, "num_key_value_heads": 8, "num_hidden_layers": 126,
    "vocab_size": 128256, "max_position_embeddings": 131072, "tie_word_embeddings": False,
    "torch_dtype": "bfloat16"}
MIXTRAL_8X22B = {  # huggingface.co/mistralai/Mixtral-8x22B-v0.1 config.json
    "model_type": "mixtral", "hidden_size": 6144, "intermediate_size": 16384,
    "num_attention_heads": 48, "num_key_value_heads": 8, "num_hidden_layers": 56,
    "num_local_experts": 8, "num_experts_per_tok": 2, "vocab_size": 32768,
    "max_position_embeddings": 65536, "sliding_window": None, "tie_word_embeddings": False,
    "torch_dtype": "bfloat16"}


def commands(folder: Path) -> list[tuple[str, list[str]]]:
    """(label, roofline arguments) of each command timed."""
    llama, mixtral = folder / "llama-3.1-405b.json", folder / "mixtral-8x22b.json"
    llama.write_text(json.dumps(LLAMA_405B))
    mixtral.write_text(json.dumps(MIXTRAL_8X22B))
    from roofline.hardware.catalog import bundled_names

    every = [arg for name in sorted(set(bundled_names().values())) for arg in ("--hw", name)]
    return [
        ("plan README Mixtral-8x7B 16..128", ["plan", str(ROOT / "examples" / "hf" /
                                                           "mixtral-8x7b.json"), "--hw",
                                              "h100", "--gpus", "16..128", "--batch", "256",
                                              "--seq", "4096", "--ep", "1,2,4,8"]),
        ("plan 405B 64..2048 recompute full", ["plan", str(llama), "--hw", "h100", "--gpus",
                                               "64..2048", "--batch", "1024", "--seq", "8192",
                                               "--recompute", "full"]),
        ("plan 8x22B 8..4096 ep 1..8 json", ["plan", str(mixtral), "--hw", "h100", "--gpus",
                                             "8..4096", "--batch", "4096", "--seq", "4096",
                                             "--ep", "1..8", "--format", "json"]),
        ("sweep 405B batch 1..4096", ["sweep", str(llama), "--hw", "h100", "--batch",
                                      "1..4096", "--seq", "4096", "--mode", "inference"]),
        ("sweep 8x22B seq 1..65536", ["sweep", str(mixtral), "--hw", "h100", "--batch", "1",
                                      "--seq", "1..65536", "--mode", "inference"]),
        ("compare 405B train, every entry, json", ["compare", str(llama), *every, "--batch",
                                                   "8", "--seq", "8192", "--format",
                                                   "json"]),
    ]


REPEAT_MODEL = """name: repeat-{blocks}
batch: 8
seq: 512
dtype: bf16
mode: train
layers:
  - {{type: embedding, vocab: 32000, dim: 256, name: emb}}
  - {{type: transformer, hidden: 256, heads: 4, ffn: 1024, gated: true, norm: rmsnorm,
      causal: true, repeat: {blocks}, name: blk}}
  - {{type: norm, norm: rmsnorm, dim: 256, name: final_norm}}
  - {{type: linear, in: 256, out: 32000, name: lm_head}}
"""


def repeat_commands(folder: Path, sizes: list[int]) -> list[tuple[str, list[str]]]:
    """(label, roofline arguments) of each command timed on a block repeated ``sizes`` times."""
    out = []
    for blocks in sizes:
        model = folder / f"repeat-{blocks}.yaml"
        model.write_text(REPEAT_MODEL.format(blocks=blocks))
        m, n = str(model), f"{blocks:,} blocks"
        full = ["analyze", m, "--hw", "h100", "--recompute", "full"]
        out += [
            (f"plan {n}, one layout", ["plan", m, "--hw", "h100", "--gpus", "16", "--tp", "2",
                                       "--pp", "4", "--zero", "1", "--micro-batch", "1",
                                       "--batch", "64"]),
            (f"plan {n}, 8..64 GPUs", ["plan", m, "--hw", "h100", "--gpus", "8..64",
                                       "--batch", "256"]),
            *((f"analyze {n}, full, {fmt}", [*full, "--format", fmt])
              for fmt in ("table", "json", "csv", "html")),
            (f"analyze {n}, serving tp 2", ["analyze", m, "--hw", "h100", "--mode",
                                            "inference", "--tp", "2"]),
            (f"compare {n}, 3 devices", ["compare", m, "--hw", "h100", "--hw", "a100", "--hw",
                                         "l4"]),
            (f"sweep {n}, batch 1..64", ["sweep", m, "--hw", "h100", "--batch", "1..64"]),
            # 0.9.0: compare's and sweep's other formats, and sweep's chart
            *((f"compare {n}, 3 devices, {fmt}", ["compare", m, "--hw", "h100", "--hw", "a100",
                                                  "--hw", "l4", "--format", fmt])
              for fmt in ("markdown", "html", "json", "csv")),
            *((f"sweep {n}, batch 1..64, {fmt}", ["sweep", m, "--hw", "h100", "--batch",
                                                  "1..64", "--format", fmt])
              for fmt in ("markdown", "html", "json", "csv")),
            (f"sweep {n}, seq 64..4096", ["sweep", m, "--hw", "h100", "--batch", "8", "--seq",
                                          "64..4096", "--mode", "inference"]),
            (f"sweep {n}, batch 1..64, plot", ["sweep", m, "--hw", "h100", "--batch", "1..64",
                                               "--plot", str(folder / "sweep.png"), "--force"]),
        ]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs of each command")
    parser.add_argument("--cases", nargs="+", default=["published", "repeats"],
                        choices=["published", "repeats"])
    parser.add_argument("--blocks", type=int, nargs="+", default=[100_000],
                        help="the repeat's copies (--cases repeats)")
    parser.add_argument("--only", nargs="+", metavar="TEXT",
                        help="time only the commands whose label holds one of these "
                             "(\"compare\", \"json\", \"sweep 10,000\")")
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    with tempfile.TemporaryDirectory() as tmp:
        cases = [*(commands(Path(tmp)) if "published" in args.cases else []),
                 *(repeat_commands(Path(tmp), args.blocks) if "repeats" in args.cases
                   else [])]
        if args.only:
            cases = [case for case in cases if any(text in case[0] for text in args.only)]
            if not cases:
                parser.error(f"no command's label holds {' or '.join(args.only)}")
        run_child([sys.executable, "-m", "roofline", *cases[0][1]], 600.0, env,
                  keep_output=False)  # bytecode, untimed
        for label, argv in cases:
            cmd = [sys.executable, "-m", "roofline", *argv]
            print(f"{label:<40} {best_of(cmd, args.repeat, 600.0, env)}", flush=True)


if __name__ == "__main__":
    main()
