"""A Python warning raised while a command runs (the user's factory's, torch's, matplotlib's) is
printed once on stderr. The command group records warnings to print them after the command
(a hardware file's as one line); it printed the others through ``warnings.showwarning``, which
inside ``catch_warnings(record=True)`` appends to the list being printed: a factory that
warned once (or a Conv3d with ``padding="same"`` and an even kernel, whose capture makes torch
warn) looped, filling memory until the kernel killed it (24 GB in 7.5 minutes)."""

from __future__ import annotations

import resource
import subprocess
import sys

from _extras import need

need("torch", extra="torch")


def _limit_memory() -> None:  # the old loop fails in seconds with MemoryError, not hours later
    resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))


def test_a_warning_from_the_users_module_is_printed_once(tmp_path):
    (tmp_path / "warns.py").write_text(
        "import warnings\nimport torch\n\ndef make():\n    warnings.warn('from the factory')\n"
        "    return torch.nn.Linear(8, 8), torch.zeros(2, 8)\n")
    out = subprocess.run([sys.executable, "-m", "roofline", "analyze", "warns:make", "--hw",
                          "h100", "--mode", "inference", "--format", "json"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=300,
                         preexec_fn=_limit_memory)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stderr.count("UserWarning: from the factory") == 1, out.stderr[-2000:]
    assert '"gemms"' in out.stdout
