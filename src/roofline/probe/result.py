"""What one probe found: ``ProbeResult``, whose ``to_dict`` is the ``probe --format json``
object and ``to_hardware_dict`` a hwdb entry. Its assumptions, gaps and warnings are ``Note``s
(a code and values); their sentences are made in ``output/probe_notes.py``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .plan import METHOD_VERSION, SCHEMA_VERSION


@dataclass(frozen=True)
class Note:
    """One thing the probe assumed, could not measure or warns of: ``code`` names the kind
    (a key of ``output.probe_notes.TEXT``), ``values`` hold what its sentence says."""

    code: str
    values: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Skipped:
    """A figure the probe did not measure, and why."""

    figure: str
    reason: Note


@dataclass(frozen=True)
class ProbeResult:
    """What one probe found; ``to_dict`` is the ``probe --format json`` object."""

    preset: str
    cpu: Any  # identify.CpuInfo
    blas: list[dict[str, Any]]
    gpus: list[dict[str, Any]]
    measured: dict[str, Any]
    theoretical: dict[str, Any]
    details: dict[str, Any]
    not_measured: list[Skipped]
    warnings: list[Note]
    assumptions: list[Note]
    metadata: dict[str, Any]
    cpu_peak: Any = None  # ceilings.CpuPeak or None
    cpu_match: str | None = None
    gpu_matches: dict[int, str] = field(default_factory=dict)
    # what the CPU GEMMs were timed through: identify.numpy_library or torch_library
    library: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON object, each note as its sentence (a hook up to output/probe_notes)."""
        from ..output.probe_notes import note_text

        cpu = self.cpu.to_dict() | {"hwdb_match": self.cpu_match}
        gpus = [g | {"hwdb_match": self.gpu_matches.get(g["index"])} for g in self.gpus]
        return {"schema_version": SCHEMA_VERSION, "method_version": METHOD_VERSION,
                "preset": self.preset, "cpu": cpu, "blas": self.blas, "library": self.library,
                "gpus": gpus,
                "measured": self.measured, "theoretical": self.theoretical,
                "assumptions": [note_text(n) for n in self.assumptions],
                "not_measured": [{"figure": s.figure, "reason": note_text(s.reason)}
                                 for s in self.not_measured],
                "warnings": [note_text(n) for n in self.warnings], "details": self.details,
                "metadata": self.metadata}

    def to_hardware_dict(self, name: str, command: str | None = None,
                         force: bool = False) -> dict[str, Any]:
        """This result as a hwdb entry (docs/hwdb-schema.md) with ``origin: measured``; with
        ``force``, saved past the probe's own checks: the checks it fails are recorded
        (``measured.forced_past``)."""
        from .entry import hardware_dict

        return hardware_dict(self, name, command, force)
