"""A user with an unknown .h5 file asks what it is: `mgpu-io inspect` and `mgpu_io.inspect`."""

import json

import pytest
from helpers import REFERENCE, fixture_path, fork_here, fixtures, needs_reference, reference_params, runner

from mgpu_io.cli import app
from mgpu_io import inspect


JSON_KEYS = {"file_type", "is_wrapper", "variant", "replicas", "depth", "template", "inputs", "outputs",
             "keras_version", "backend", "has_optimizer_weights", "findings"}


@pytest.mark.parametrize("entry", fixtures("model", "config", "weights"))
def test_inspect_reports_what_the_writer_built(entry):
    report = inspect(fixture_path(entry)).to_dict()
    assert report["file_type"] == entry["file_type"]
    assert report["is_wrapper"] is True
    assert report["replicas"] == entry["replicas"]
    assert report["depth"] == entry["depth"]
    assert report["template"] == entry["template"]
    assert report["inputs"] == entry["inputs"]
    if entry["file_type"] == "weights":  # no graph: writer and output names are not in the file
        assert report["variant"] is None and report["outputs"] is None
    else:
        assert report["variant"] == entry["variant"]
        assert report["outputs"] == entry["outputs"]
    if entry["file_type"] != "config":
        assert report["has_optimizer_weights"] == entry["has_optimizer_weights"]
    kinds = {finding["kind"] for finding in report["findings"]}
    assert set(entry.get("findings") or []) <= kinds


@pytest.mark.parametrize("entry", fixtures("model", "weights"))
def test_inspect_reports_the_writer_version_and_backend(entry):
    report = inspect(fixture_path(entry))
    if entry["keras_version"].startswith("1."):
        assert report.backend is None  # Keras 1 wrote no backend attribute
        assert report.keras_version == (entry["keras_version"] if entry["file_type"] == "model" else None)
    else:
        assert report.backend == "tensorflow"
        expected = entry["keras_version"] if entry["writer"] != "tfkeras115" else "2.2.4-tf"
        assert report.keras_version == expected


def test_the_failed_save_stub_is_reported_as_unrecoverable():
    report = inspect(fixture_path({"file": "k216_failed_save_stub.h5"}))
    assert report.file_type == "stub"
    assert [f.kind for f in report.findings] == ["failed-save-stub"]
    assert "Nothing can be recovered from it" in report.findings[0].message
    assert report.keras_version == "2.1.6"


def test_nan_batchnorm_statistics_are_a_finding_that_names_the_weights():
    report = inspect(fixture_path({"file": "k224_bn_uneven_batch_x2_full.h5"}))
    finding = next(f for f in report.findings if f.kind == "non-finite-weights")
    assert all(name.startswith("bn/") for name in finding.layers)
    assert any("moving_" in name for name in finding.layers)


def test_the_nesting_is_reported_level_by_level():
    report = inspect(fixture_path({"file": "k224_nested_depth3_full.h5"}))
    assert report.depth == 3
    assert len(report.levels) == 3
    assert [level["replicas"] for level in report.levels] == [2, 2, 2]
    assert report.levels[-1]["template_layer"] == "template"


def test_inspect_json_prints_one_object_with_the_documented_keys():
    result = runner.invoke(app, ["inspect", str(fixture_path({"file": "k224_siamese_x2_full.h5"})), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert JSON_KEYS <= set(report)
    assert report["outputs"] == ["add", "nested", "nested"]
    assert report["levels"][0]["merge_layers"] == ["add", "nested_1", "nested_2"]


def test_inspect_human_output_shows_the_tree_and_findings():
    result = runner.invoke(app, ["inspect", str(fixture_path({"file": "k224_bn_uneven_batch_x2_full.h5"}))])
    assert result.exit_code == 0, result.output
    assert "multi-GPU wrapper, 1 level" in result.stdout
    assert "└── template: bn_template; inputs:" in result.stdout
    assert "non-finite-weights" in result.stdout


def test_a_plain_model_is_not_a_wrapper(tmp_path):
    from mgpu_io import unwrap

    clean = tmp_path / "clean.h5"
    unwrap(fixture_path({"file": "k224_functional_bn_x2_full.h5"}), clean)
    report = inspect(clean)
    assert (report.is_wrapper, report.depth, report.replicas) == (False, 0, None)
    assert report.template == "template"


@needs_reference
@pytest.mark.parametrize("name,facts", reference_params())
def test_inspect_reads_the_reference_set(name, facts):
    report = inspect(REFERENCE / name)
    assert report.file_type == facts["file_type"]
    assert report.is_wrapper is True
    assert (report.depth, report.replicas, report.template) == (facts["depth"], facts["replicas"], facts["template"])
    if "outputs" in facts:
        assert report.outputs == facts["outputs"]
    if "variant" in facts:
        assert report.variant == facts["variant"]
    if "has_optimizer_weights" in facts:
        assert report.has_optimizer_weights == facts["has_optimizer_weights"]


@needs_reference
def test_the_reference_stub_is_reported():
    report = inspect(REFERENCE / "k216_full_attempt.h5")
    assert report.file_type == "stub"


def test_large_files_get_a_fast_scan_of_batchnorm_weights_only(monkeypatch):
    import mgpu_io.format.inspect

    fork_here(monkeypatch)  # the child that scans sees the budget set here
    monkeypatch.setattr(mgpu_io.format.inspect, "SCAN_BUDGET", 0)  # every file is "large" now
    report = inspect(fixture_path({"file": "k224_bn_uneven_batch_x2_full.h5"}))
    kinds = [f.kind for f in report.findings]
    assert kinds == ["weights-partly-scanned", "non-finite-weights"]  # the NaN lives in BatchNormalization
    assert all(name.startswith("bn/") for name in report.findings[1].layers)
    assert [f.kind for f in inspect(fixture_path({"file": "k224_bn_uneven_batch_x2_full.h5"}),
                                    scan_weights=True).findings] == ["non-finite-weights"]
    assert inspect(fixture_path({"file": "k224_bn_uneven_batch_x2_full.h5"}), scan_weights=False).findings == []
