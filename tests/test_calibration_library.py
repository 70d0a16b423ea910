"""A calibration names the library its GEMMs were timed through (calibration version 4's
``library`` block): read, checked and written back, an older block read as numpy's BLAS, and
``probe --library torch`` refused in one line where torch is not installed. The torch side
(kernels, a probe through torch, the warning on a captured model) is tests/test_torch_calibration.py.
"""

from __future__ import annotations

import copy
import json
import sys

import pytest
import yaml
from test_predict import ENTRY

from roofline.analysis.predict import library_mismatch, library_of
from roofline.analysis.report import analyze
from roofline.errors import InputError
from roofline.hardware.spec import CalibrationLibrary, HardwareSpec
from roofline.model.network import load_network
from roofline.output.report import report_table
from roofline.output.times import basis_sentence

EXAMPLE = "examples/mlp-1024-4096-1000.yaml"
TORCH = {"name": "torch", "version": "2.13.0+cpu", "blas": "MKL 2024.2, oneDNN 3.12.0",
         "threads": 2}


def entry(library=None, version=4):
    data = copy.deepcopy(ENTRY)
    data["calibration"]["version"] = version
    if library is not None:
        data["calibration"]["library"] = library
    return data


def test_the_library_block_round_trips_through_yaml():
    # version "2.10" must stay text: a writer that did not quote it would read back as 2.1
    library = TORCH | {"version": "2.10"}
    text = yaml.safe_dump(entry(library), sort_keys=False)
    hw = HardwareSpec.from_dict(yaml.safe_load(text), "box.yaml")
    assert hw.calibration.library == CalibrationLibrary("torch", "2.10",
                                                        "MKL 2024.2, oneDNN 3.12.0", 2)
    assert hw.calibration.through is hw.calibration.library
    assert library_of(hw) == library | {"recorded": True}
    # blas and threads are optional
    hw = HardwareSpec.from_dict(entry({"name": "numpy", "version": "2.4.6"}), "box.yaml")
    assert hw.calibration.library == CalibrationLibrary("numpy", "2.4.6")
    assert hw.calibration.library.words == "numpy 2.4.6"


@pytest.mark.parametrize("library, where, problem", [
    (TORCH | {"name": "jax"}, "calibration.library.name", "expected one of numpy, torch, cupy"),
    (TORCH | {"version": 2.1}, "calibration.library.version", "expected a non-empty string"),
    ({"name": "torch"}, "calibration.library.version", "missing required field"),
    (TORCH | {"threads": 0}, "calibration.library.threads", "expected a positive integer"),
    (TORCH | {"blas": ""}, "calibration.library.blas", "expected a non-empty string"),
    (TORCH | {"flavour": "x"}, "calibration.library.flavour", "unknown field"),
    ("torch", "calibration.library", "expected a mapping"),
])
def test_a_bad_library_is_one_line_naming_the_field(library, where, problem):
    with pytest.raises(InputError) as caught:
        HardwareSpec.from_dict(entry(library), "box.yaml")
    message = str(caught.value)
    assert message.startswith(f"box.yaml: {where}: ") and problem in message
    assert "\n" not in message


def test_a_library_needs_calibration_version_4():
    with pytest.raises(InputError, match=r"calibration\.library: a calibration's library needs "
                                         r"calibration version 4, got version 3"):
        HardwareSpec.from_dict(entry(TORCH, version=3), "box.yaml")


def test_an_older_block_without_a_library_is_numpy_by_definition():
    hw = HardwareSpec.from_dict(copy.deepcopy(ENTRY), "box.yaml")  # calibration version 1
    assert hw.calibration.library is None
    assert hw.calibration.through == CalibrationLibrary("numpy")
    assert library_of(hw) == {"name": "numpy", "version": None, "blas": None, "threads": None,
                              "recorded": False}
    assert ("through numpy's BLAS (calibration version 1 does not record the library; version "
            "4 does)") in basis_sentence(hw)
    # a version-4 block without one is numpy's too: the block is optional
    assert HardwareSpec.from_dict(entry(), "box.yaml").calibration.through.name == "numpy"


def test_the_basis_says_the_library_in_every_format():
    hw = HardwareSpec.from_dict(entry(TORCH), "box.yaml")
    words = "torch 2.13.0+cpu (MKL 2024.2, oneDNN 3.12.0; 2 threads)"
    assert hw.calibration.library.words == words
    assert basis_sentence(hw) == (
        f"predicted: calibrated from the probe's measurements of this machine through {words} "
        f"(per-call overhead, small and thin GEMM efficiency, C's write cost, cache-resident "
        f"operands)")
    report = analyze(load_network(EXAMPLE).with_overrides(dtype="fp32"), hw)
    data = json.loads(json.dumps(report.to_dict()))
    assert data["prediction_basis"] == "calibrated"
    assert data["calibration_library"] == TORCH | {"recorded": True}
    # the table wraps at 100 columns: the words are whole once the lines are joined
    assert words in " ".join(report_table(report).split())
    # a model.yaml says nothing of the framework that runs it: no warning, whatever the library
    numpy_hw = HardwareSpec.from_dict(entry(), "box.yaml")
    plain = analyze(load_network(EXAMPLE).with_overrides(dtype="fp32"), numpy_hw)
    assert plain.warnings == () and plain.to_dict()["warnings"] == []
    assert "--library" not in report_table(plain)


def test_no_library_and_no_warning_on_a_datasheet_entry():
    from roofline.hardware.catalog import load_hardware

    hw = load_hardware("epyc-7763")
    assert library_of(hw) is None and library_mismatch(hw, "torch") is None


def test_a_mismatch_is_numpy_under_torch_only():
    numpy_hw = HardwareSpec.from_dict(entry(), "box.yaml")
    torch_hw = HardwareSpec.from_dict(entry(TORCH), "box.yaml")
    assert library_mismatch(numpy_hw, "torch") == "numpy"
    assert library_mismatch(numpy_hw, None) is None  # a model.yaml
    assert library_mismatch(torch_hw, "torch") is None


def test_probe_library_torch_without_torch_is_one_line_exit_2(invoke, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch raises ImportError
    result = invoke("probe", "--library", "torch", "--save", "box")
    assert result.exit_code == 2
    assert result.stderr == ("Error: --library torch: torch is not installed (pip install "
                             "'roofline[torch]'); the default, numpy, calibrates through "
                             "numpy's BLAS\n")  # before anything was probed or said


def test_an_unknown_library_is_refused_by_the_library_in_one_line():
    from roofline.errors import RooflineError
    from roofline.probe import run_probe

    with pytest.raises(RooflineError, match=r"^library=\.\.\.: expected one of numpy, torch, "
                                            r"got 'jax'$"):
        run_probe(preset="tiny", library="jax")


def test_measure_times_through_the_calibration_s_library(monkeypatch):
    from roofline.analysis.measure import MeasureError, cpu_library, default_kernels

    network = load_network(EXAMPLE).with_overrides(dtype="fp32")
    numpy_report = analyze(network, HardwareSpec.from_dict(entry(), "box.yaml"))
    torch_report = analyze(network, HardwareSpec.from_dict(entry(TORCH), "box.yaml"))
    assert cpu_library(numpy_report) == "numpy" and default_kernels(numpy_report)[1] == "numpy"
    assert cpu_library(torch_report) == "torch"
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(MeasureError, match=r"^box was calibrated through torch, which is not "
                                           r"installed here: GEMMs are timed through the "
                                           r"library the prediction was calibrated through$"):
        default_kernels(torch_report)


def test_the_chart_legend_names_the_library():
    pytest.importorskip("matplotlib")
    hw = HardwareSpec.from_dict(entry(TORCH), "box.yaml")
    ax = analyze(load_network(EXAMPLE).with_overrides(dtype="fp32"), hw).plot()
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "predicted time (calibrated, torch)" in legend


def test_the_cli_library_choices_are_the_probe_s():
    from roofline.cli import probe
    from roofline.probe.plan import GEMM_LIBRARIES

    choice = next(p for p in probe.params if p.name == "library")
    assert tuple(choice.type.choices) == GEMM_LIBRARIES  # kept a literal: --help imports less
