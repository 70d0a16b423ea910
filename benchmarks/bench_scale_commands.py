"""What sweep, compare and plan cost on the largest published dense and MoE configs: wall time
and peak memory of a fresh process per command. Run on demand (not a test):
``python benchmarks/bench_scale_commands.py``.

Each command runs ``--repeat`` times in a child process (``_child.run_child``: its own peak
memory) after one untimed run that writes Python's bytecode; each line gives the best wall
time, the spread (worst over best) and the peak memory of the best run. The models are
Llama-3.1-405B (126 blocks) and Mixtral-8x22B (56 blocks of 8 experts), from their published
config.json figures. Goal (the scale tour of 0.9.0): each under 10 s on a shared 2-vCPU
machine, none silent for long (plan says each shard it analyzes). Before 0.9.0 the plan of the
README's Mixtral-8x7B example took 11 s, Mixtral-8x22B's over 8..4096 GPUs 34 s, and a compare
of Llama-3.1-405B on all 28 bundled entries 5 s as JSON: each built every copy of a repeated
block by name, again and again.
"""

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs of each command")
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    with tempfile.TemporaryDirectory() as tmp:
        cases = commands(Path(tmp))
        run_child([sys.executable, "-m", "roofline", *cases[0][1]], 600.0, env,
                  keep_output=False)  # bytecode, untimed
        for label, argv in cases:
            cmd = [sys.executable, "-m", "roofline", *argv]
            print(f"{label:<40} {best_of(cmd, args.repeat, 300.0, env)}", flush=True)


if __name__ == "__main__":
    main()
