"""A probe result as a hwdb entry (``origin: measured``), and its atomic save.

The entry's ``peak_tflops`` and ``bandwidth_gbs`` are the MEASURED figures, so that
``analyze --hw NAME`` speaks about this machine; ``theoretical`` holds the computed ceilings
beside them. If a GPU was measured the entry describes the GPU, otherwise the CPU.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ProbeSaveError, option
from ..files.atomic import write_atomic
from ..hardware.spec import (
    FIGURE_KEYS,
    NAME_CHARS,
    UNRECORDED_NUMPY,
    CalibrationLibrary,
    HardwareSpec,
)
from ..model.dtypes import DTYPES
from .identify import machine_text

if TYPE_CHECKING:
    from .result import ProbeResult


def _sig(value: float, digits: int = 4) -> float:
    return float(f"{value:.{digits}g}")


def _tflops(gflops: dict[str, float]) -> dict[str, float]:
    return {d: _sig(v / 1000) for d, v in gflops.items() if d in DTYPES and v and v > 0}


def _command(result: ProbeResult, name: str, force: bool = False) -> str:
    """The probe command that saves ``result`` as ``name``, ``--force`` included where it was
    given (a run saved past the probe's own checks, or over an entry, says so)."""
    flag = {"quick": " --quick", "full": ""}.get(result.preset, f" --preset {result.preset}")
    library = (result.library or {}).get("name", "numpy")
    flag += f" --library {library}" if library != "numpy" else ""
    return f"roofline probe{flag} --save {name}" + (" --force" if force else "")


def _library(calibration: dict[str, Any]) -> str:
    """The calibration block's library in words (``CalibrationLibrary.words``)."""
    library = calibration.get("library")
    return CalibrationLibrary(**library).words if library else UNRECORDED_NUMPY.words


def _provenance(result: ProbeResult, command: str, figures: dict[str, Any],
                forced: list[tuple[str, str]]) -> dict[str, Any]:
    """The entry's ``measured`` block; ``forced_past`` (each check the result failed and was
    saved past with ``force``, and its sentence) only where there is one."""
    meta, cpu = result.metadata, result.cpu
    block = {"date": meta.get("date"),
             "machine": machine_text(str(meta.get("hostname")), cpu, str(meta.get("platform"))),
             "method_version": meta.get("method_version"), "command": command,
             "preset": result.preset, "figures": figures}
    if forced:
        block["forced_past"] = [{"check": check, "reason": reason} for check, reason in forced]
    return block


def _cpu_entry(result: ProbeResult, name: str) -> dict[str, Any]:
    cpu, peak = result.cpu, result.cpu_peak
    dram = result.measured["bandwidth_gbs"].get("dram")
    block = peak.cpu_block() if peak else _effective_cpu_block(result)
    data: dict[str, Any] = {
        "name": name, "kind": "cpu", "vendor": cpu.vendor, "model": cpu.brand,
        "architecture": _architecture(result), "origin": "measured",
        "peak_tflops": _tflops(result.measured["gemm_gflops"]), "bandwidth_gbs": _sig(dram)}
    if cpu.llc_bytes_total:
        data["llc_mb"] = _sig(cpu.llc_bytes_total / 2**20)
    data["cpu"] = block
    theory = {"peak_tflops": _tflops(result.theoretical.get("gemm_gflops", {}))}
    if result.theoretical.get("bandwidth_gbs", {}).get("dram"):
        theory["bandwidth_gbs"] = result.theoretical["bandwidth_gbs"]["dram"]
    data["theoretical"] = theory
    if result.measured.get("calibration", {}).get("gemm_efficiency"):
        data["calibration"] = result.measured["calibration"]
    return data


def _effective_cpu_block(result: ProbeResult) -> dict[str, Any]:
    """No clock known: the clock that would make the measured fp32 rate the peak."""
    from .ceilings import simd_bits_for

    cpu = result.cpu
    simd, _ = simd_bits_for(cpu)
    fp32 = result.measured["gemm_gflops"].get("fp32") or max(
        result.measured["gemm_gflops"].values())
    clock = fp32 / (cpu.cores * 2 * simd / 32 * 2)
    return {"sockets": max(1, cpu.sockets), "cores_per_socket": cpu.cores_per_socket,
            "simd_bits": simd, "fma_units": 2, "clock_ghz": _sig(clock),
            "clock_basis": "effective: measured fp32 / (cores x 2 FMA x lanes x 2); "
                           "no clock was reported"}


def _architecture(result: ProbeResult) -> str:
    if result.cpu_match:
        from ..hardware.catalog import load_hardware

        return load_hardware(result.cpu_match).architecture
    cpu = result.cpu
    return f"unknown ({cpu.vendor} family {cpu.family} model {cpu.model})"


def _gpu_entry(result: ProbeResult, name: str) -> dict[str, Any]:
    from ..hardware.catalog import load_hardware

    gm, facts = result.measured["gpu"], result.measured["gpu"].get("device", {})
    nvml = result.gpus[0] if result.gpus else {}
    match = load_hardware(result.gpu_matches[0]) if 0 in result.gpu_matches else None
    clock_mhz = nvml.get("sm_clock_max_mhz")
    gpu_block = {"sms": facts.get("sms") or (match.sms if match else None),
                 "boost_clock_ghz": clock_mhz / 1000 if clock_mhz else
                 (match.gpu.boost_clock_ghz if match and match.gpu else None)}
    if not all(gpu_block.values()):
        raise ProbeSaveError("the GPU's SM count or clock is unknown (no NVML, no hwdb match)")
    data: dict[str, Any] = {
        "name": name, "kind": "gpu", "vendor": "NVIDIA",
        "model": nvml.get("name") or facts.get("name") or "unknown GPU",
        "architecture": match.architecture if match else
        f"compute capability {nvml.get('compute_capability') or 'unknown'}",
        "origin": "measured", "peak_tflops": _tflops(gm["gemm_gflops"]),
        "bandwidth_gbs": _sig(gm["bandwidth_gbs"]["device"])}
    memory = nvml.get("memory_bytes") or facts.get("memory_bytes")
    if memory:
        data["memory"] = {"capacity_gb": _sig(memory / 1e9)}
    if gm["bandwidth_gbs"].get("host_to_device"):
        data["host_link"] = {"type": "pcie", "bandwidth_gbs": _sig(
            gm["bandwidth_gbs"]["host_to_device"])} | {
            k: nvml[f"pcie_{v}"] for k, v in (("generation", "generation"), ("lanes", "width"))
            if nvml.get(f"pcie_{v}")}
    tiles, l2_mb = _tiles_and_l2(match, facts)
    gpu_block.update(tiles)
    if match is not None and match.gpu is not None and match.gpu.resident_threads:
        gpu_block["resident_threads"] = match.gpu.resident_threads
    if match is not None and match.gpu is not None and match.gpu.pcie_p2p is False:
        gpu_block["pcie_p2p"] = False  # the board's, as the matched entry says (GeForce)
    if l2_mb:
        data["llc_mb"] = l2_mb
    data["gpu"] = gpu_block
    if gm.get("calibration"):
        data["calibration"] = gm["calibration"]
    if match is not None and match.alignment:
        data["alignment"] = match.alignment_dict()
    theory = result.theoretical.get("gpu", {})
    data["theoretical"] = {"peak_tflops": _tflops(theory.get("gemm_gflops", {}))} | (
        {"bandwidth_gbs": theory["bandwidth_gbs"]["device"]}
        if theory.get("bandwidth_gbs", {}).get("device") else {})
    return data


def _reported_l2(result: ProbeResult) -> bool:
    """Whether the probed GPU reported its L2 size (``kernels.gpu``'s ``l2_bytes``): then a GPU
    entry's ``llc_mb`` is the device's own, measured here, not the datasheet entry's."""
    return bool((result.measured.get("gpu") or {}).get("device", {}).get("l2_bytes"))


def _tiles_and_l2(match: Any, facts: dict[str, Any]) -> tuple[dict[str, Any], float | None]:
    """What the GPU GEMM model needs and a probe cannot time, the matching datasheet entry's
    thread-block tiles (sourced to that entry), and the L2 in MiB: the device's own
    (cudaGetDeviceProperties, through torch or cupy) where it reported one, else the entry's."""
    tiles: dict[str, Any] = {}
    if match is not None and match.gpu is not None:
        for key, shapes in (("tiles", match.gpu.tiles), ("simt_tiles", match.gpu.simt_tiles)):
            if shapes:
                tiles[key] = [list(shape) for shape in shapes]
    if facts.get("l2_bytes"):
        return tiles, _sig(facts["l2_bytes"] / 2**20)
    return tiles, (match.llc_mb if match is not None and match.gpu is not None else None)


def _notes(result: ProbeResult, data: dict[str, Any]) -> str:
    kind = data["kind"]
    forced = data["measured"].get("forced_past")
    parts = [f"Saved with --force past the probe's own checks (a disturbed run's figures): "
             f"{'; '.join(f['reason'] for f in forced)}."] if forced else []
    parts += [f"Measured by `roofline probe` ({result.preset} preset, method "
             f"{result.metadata.get('method_version')}) on {result.metadata.get('date')}: "
             f"peak_tflops are the best measured GEMM rates and bandwidth_gbs the best "
             f"all-core streaming rate, not datasheet peaks; theoretical holds the computed "
             f"ceilings."]
    if kind == "cpu":
        parts.append("bandwidth_gbs is a read stream through the BLAS (a dot product).")
        if "calibration" in data:
            parts.append(f"calibration: the GEMMs predicted_time_s is calibrated from, timed "
                         f"with the GEMM peaks through "
                         f"{_library(data['calibration'])}.")
        parts.append("Assumptions: " + "; ".join(result.to_dict()["assumptions"]) + ".")
        parts.append("llc_mb read from sysfs/py-cpuinfo (MiB).")
    else:
        parts.append("host_link.bandwidth_gbs is the measured pinned host-to-device copy rate "
                     "(type assumed pcie); gpu.boost_clock_ghz is NVML's max SM clock.")
        if "alignment" in data:
            parts.append("alignment copied from the matching datasheet entry.")
        own_l2 = _reported_l2(result)
        if own_l2:
            parts.append("llc_mb is the L2 the device reports (cudaGetDeviceProperties, MiB).")
        if "tiles" in data["gpu"] or ("llc_mb" in data and not own_l2):
            copied = "gpu.tiles and gpu.simt_tiles" if own_l2 else (
                "gpu.tiles, gpu.simt_tiles and llc_mb (L2)")
            parts.append(f"{copied} copied from the matching datasheet entry.")
        if "calibration" in data:
            timing = data["calibration"].get("gpu", {}).get("timing", "eager")
            how = ("in a CUDA graph: the GPU's time" if timing == "graph" else
                   "called from Python: the host's time included")
            parts.append(f"calibration: the probe's GPU constants (shortest GEMM kernel, one "
                         f"small kernel's time, {how}; sustained shares of the measured "
                         f"figures).")
    missing = [m.figure for m in result.not_measured]
    if missing:
        parts.append("Not measured: " + ", ".join(missing) + ".")
    return " ".join(parts)


def hardware_dict(result: ProbeResult, name: str, command: str | None = None,
                  force: bool = False) -> dict[str, Any]:
    """See ProbeResult.to_hardware_dict; raises ProbeSaveError if nothing can be saved. With
    ``force`` (a save past the probe's own checks) the checks it fails are recorded
    (``measured.forced_past``, and said first in ``notes``) and the command says ``--force``."""
    from .checks import failed_checks

    gpu = result.measured.get("gpu")
    if gpu and gpu.get("gemm_gflops") and gpu["bandwidth_gbs"].get("device"):
        data = _gpu_entry(result, name)
        figures = {k: gpu[k] for k in ("gemm_gflops", "bandwidth_gbs")}
    elif result.measured["gemm_gflops"] and result.measured["bandwidth_gbs"].get("dram"):
        data = _cpu_entry(result, name)
        figures = {k: result.measured.get(k) for k in
                   ("gemm_gflops", "bandwidth_gbs", "small_gemm_overhead_s")}
    else:
        raise ProbeSaveError("the probe measured no GEMM rate or no bandwidth: nothing to save")
    command = command or _command(result, name, force)
    data["measured"] = _provenance(result, command, figures,
                                   failed_checks(result) if force else [])
    datasheet = ("alignment", "llc_mb") if data["kind"] == "gpu" else ("alignment",)
    if data["kind"] == "gpu" and _reported_l2(result):
        datasheet = ("alignment",)  # the L2 the device reported, measured here
    covers = [key for key in FIGURE_KEYS if key in data and key not in datasheet]
    data["sources"] = [{"title": f"roofline probe on {result.metadata.get('hostname')}",
                        "command": command, "covers": covers}]
    copied = [key for key in datasheet if key in data and data.get("kind") == "gpu"]
    if copied:
        match = result.gpu_matches[0]
        url = next((s.url for s in _spec(match).sources if s.url), None)
        if url is None:
            for key in copied:
                del data[key]
        else:
            data["sources"].append({"title": f"hwdb entry {match} (datasheet)", "url": url,
                                    "covers": copied})
    data["notes"] = _notes(result, data)
    return data


def _spec(name: str) -> HardwareSpec:
    from ..hardware.catalog import load_hardware

    return load_hardware(name)


MAX_NAME_CHARS = 64  # with ".yaml" and the temp file's affixes, well inside 255-byte names


def check_can_save(name: str, force: bool = False) -> Path:
    """The path ``name`` would be saved to. Raises ProbeSaveError, before any probing, if the
    name is malformed, shadows a bundled entry or alias (without ``force``), is taken (without
    ``force``), or the user directory cannot take a new file."""
    from ..hardware.catalog import bundled_names, user_hwdb_dir

    _check_name(name)
    bundled = bundled_names().get(name)
    if bundled and not force:
        what = "a bundled entry" if bundled == name else f"an alias of bundled {bundled}"
        raise ProbeSaveError(f"{name!r} is {what}; saving under it would replace the datasheet "
                             f"figures in every {option('hardware', name)}: choose another "
                             f"name, or pass {option('force', 'True')}")
    folder = user_hwdb_dir()
    _check_folder(folder)
    path = folder / f"{name}.yaml"
    if path.exists() and not force:
        raise _exists(path)
    return path


def _exists(path: Path) -> ProbeSaveError:
    return ProbeSaveError(f"{path} already exists; pass {option('force', 'True')} to replace it")


def _check_name(name: str) -> None:
    if name.endswith((".yaml", ".yml")):
        stem = name.rsplit(".", 1)[0]
        raise ProbeSaveError(f"give the entry name without the file suffix: {option('name', stem)} "
                             f"(got {name!r})")
    if not name or not set(name) <= NAME_CHARS or name.startswith("."):
        raise ProbeSaveError(f"entry names use lowercase letters, digits and . - _ + only "
                             f"(not starting with .), got {_short(name)}")
    if len(name) > MAX_NAME_CHARS:
        raise ProbeSaveError(f"entry names have at most {MAX_NAME_CHARS} characters, got "
                             f"{len(name)}")


def _short(name: str) -> str:
    return repr(name) if len(name) <= 60 else f"{name[:40]!r}... ({len(name)} characters)"


def _check_folder(folder: Path) -> None:
    """The user directory, or its nearest existing parent, must be a writable directory."""
    existing = folder
    while not existing.exists() and existing.parent != existing:
        existing = existing.parent
    if not existing.is_dir():
        raise ProbeSaveError(f"cannot save into {folder}: {existing} is not a directory "
                             f"(check ${_env_var()})")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ProbeSaveError(f"cannot save into {folder}: {existing} is not writable "
                             f"(check ${_env_var()})")


def _env_var() -> str:
    from ..hardware.catalog import ENV_VAR

    return ENV_VAR


def save_entry(result: ProbeResult, name: str, force: bool = False,
               command: str | None = None) -> Path:
    """Validate ``result`` as entry ``name`` and write it into the user hardware directory.

    A result that fails the probe's own checks (``probe.checks``: fp32 slower than fp64, an
    efficiency above its limit, a spread above its limit, other programs' load) is refused
    unless ``force``; one saved with ``force`` records the checks it failed
    (``measured.forced_past``), which ``analyze`` on the entry warns of."""
    import yaml

    from ..hardware.catalog import clear_cache
    from .checks import check_stable

    path = check_can_save(name, force)
    if not force:
        check_stable(result, name)
    data = result.to_hardware_dict(name, command, force)
    HardwareSpec.from_dict(data, f"probe result {name!r}")
    header = ("# Measured by roofline probe; schema: docs/hwdb-schema.md. "
              "Figures are measured, not datasheet peaks.\n")
    text = header + yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
    try:
        write_atomic(path, text, force)
    except FileExistsError:
        raise _exists(path) from None
    except OSError as exc:
        raise ProbeSaveError(f"cannot save {path}: {exc.strerror or exc}") from None
    clear_cache()
    return path
