"""docs/deploy.md's table is written by tests/benchmarks/deploy_table.py: a maintainer measures a family, or every
Nth file of a large one, and the summary says how many files each row covers and why each refused one was refused.
These read the fixtures' manifests and summarise rows; they export nothing."""

import importlib.util
import io
from contextlib import redirect_stdout

from helpers import ROOT

SPEC = importlib.util.spec_from_file_location("deploy_table", ROOT / "tests" / "benchmarks" / "deploy_table.py")
deploy_table = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(deploy_table)


def summary(rows):
    out = io.StringIO()
    with redirect_stdout(out):
        deploy_table.summary(rows)
    return out.getvalue().splitlines()


def test_the_layer_sweep_is_a_family_of_every_saved_case_with_its_writers_inputs():
    assert "layers" in deploy_table.families()
    found = list(deploy_table.entries("layers"))
    writers = sorted(p.parent.name for p in (ROOT / "fixtures" / "layers").glob("*/manifest.json"))
    assert {entry["file"].split("/")[0] for _, entry, _ in found} == set(writers)
    assert [entry["file"] for _, entry, _ in found] == sorted(entry["file"] for _, entry, _ in found)
    for folder, entry, trusted in found[:: len(found) // 7]:
        assert (folder / entry["file"]).is_file() and (folder / entry["data"]).is_file() and not trusted


def test_a_row_measured_on_every_nth_file_says_how_many_of_how_many():
    rows = [dict(backend="tensorflow", family="layers", file=f"k224/{n}.h5", format="onnx", status="exported",
                 difference=d, every=10, of=1224) for n, d in (("A", 1e-7), ("B", 3e-6))]
    rows.append(dict(backend="tensorflow", family="layers", file="k224/L.h5", format=None, status="no load",
                     detail="The template's Lambda layers hold your own code. More.", every=10, of=1224))
    lines = summary(rows)
    assert "| tensorflow | layers (3 of 1224 files) | onnx | 2 | 3.0e-06 | 0 | 1 |" in lines
    assert "| tensorflow | layers | load_model | k224/L.h5 | The template's Lambda layers hold your own code |" in lines


def test_a_file_measured_after_a_run_that_could_not_load_it_is_counted_once():
    earlier = dict(backend="jax", family="files", file="t.h5", format=None, status="left out", detail="left out")
    later = dict(backend="jax", family="files", file="t.h5", format="onnx", status="exported", difference=0.0)
    assert "| jax | files | onnx | 1 | 0.0e+00 | 0 | 0 |" in summary([earlier, later])
    assert "| jax | files | every format | 0 |  | 0 | 1 |" in summary([earlier])
