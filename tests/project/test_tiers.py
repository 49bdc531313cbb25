"""The test tiers: `make check` runs the core tier in about a minute, without Keras; the long families are markers.

A contributor who changes `format/` or `cli/` runs `make check`; these tests keep that tier honest: it is the same
set of files as the core-only matrix session (noxfile.py), and it collects with Keras and TensorFlow unimportable.
"""

import ast
import subprocess
import sys
import textwrap

from tiers import LONG, MARKER_HELP, ROOT, TIERS, tiers_of


def test_the_quick_tier_holds_every_file_of_the_core_only_matrix_session():
    tree = ast.parse((ROOT / "noxfile.py").read_text())
    core_tests = next(
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "CORE_TESTS"
    )
    assert [path for path in core_tests if "core" not in tiers_of(path)] == []


def test_a_file_is_marked_by_its_path_and_a_folder_marks_everything_under_it():
    assert tiers_of("tests/load/test_layer_sweep.py") == ["layer_sweep"]
    assert tiers_of("tests/fuzz/test_fuzz_contract.py") == ["fuzz"]
    assert tiers_of("mgpu_io/format/read.py") == ["core"]
    assert tiers_of("mgpu_io/formats.py") == []  # a prefix of a folder's name is not inside it
    assert tiers_of("tests/load/test_load_model.py") == []
    assert tiers_of("mgpu_io/lambdas/stored.py") == ["core"] and tiers_of("mgpu_io/lambdas/trusted.py") == []


def test_every_tier_names_paths_that_exist_and_every_marker_is_described():
    missing = [path for paths in TIERS.values() for path in paths if not (ROOT / path).exists()]
    assert missing == []
    assert set(TIERS) - set(MARKER_HELP) == {"fuzz"}  # tests/fuzz/conftest.py describes its own


def test_the_core_tier_collects_with_keras_and_tensorflow_unimportable():
    blocker = textwrap.dedent(
        """
        import sys

        class Block:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in ("keras", "tensorflow", "tf_keras", "jax", "torch"):
                    raise ImportError(f"{name} is blocked: the core tier must not import it")

        sys.meta_path.insert(0, Block())
        import pytest

        sys.exit(pytest.main(["-q", "--collect-only", "-p", "no:cacheprovider", "-m", "core", *sys.argv[1:]]))
        """
    )
    paths = [path for path in TIERS["core"] if path != "tests/project/test_tiers.py"]
    done = subprocess.run(
        [sys.executable, "-c", blocker, *paths], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert " error" not in done.stdout.splitlines()[-1], done.stdout[-3000:]


def test_the_long_families_start_first_longest_first():
    # The order is decided by path, whatever is collected: a core file and an unmarked one given first, then the long
    # families shortest first, must come out long families first, longest first (collecting the whole suite would
    # import every test module for the same answer).
    given = ["tests/formats/test_h5attrs.py", "tests/load/test_keras1_layers.py"]
    given += [path for tier in reversed(LONG) for path in TIERS[tier]]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *given],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1800,  # a guard, not a clock: collecting takes 8 s of CPU, and over 300 s on this loaded 2-core machine
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    files = list(dict.fromkeys(line.split("::")[0] for line in done.stdout.splitlines() if "::" in line))
    first = [tiers_of(path)[0] for path in files[: len(LONG)]]
    assert first == [tier for tier in LONG if any(tier in tiers_of(path) for path in files)], files[:8]
    assert not set(LONG) & {tier for path in files[len(LONG) :] for tier in tiers_of(path)}


def test_a_script_among_the_tests_does_its_work_only_when_run():
    """pytest's ``--doctest-modules`` imports every module under tests/ on each worker: a script there (a checker run
    in ``.venv-jax``, a benchmark, the fuzzer) that printed its result at import time also did its work then. One did:
    tests/support/check_exports.py ran five ONNX and LiteRT exports in each worker before its first test (about 8
    CPU-seconds each). A script's work goes under ``if __name__ == "__main__":``."""
    at_import = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        if path.name.startswith("test_") or path.name == "conftest.py":
            continue
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) or (
                isinstance(node, ast.If) and ast.unparse(node.test) == "__name__ == '__main__'"
            ):
                continue
            called = {ast.unparse(call.func) for call in ast.walk(node) if isinstance(call, ast.Call)}
            if "print" in called or any(name.startswith("mgpu_io.") for name in called):
                at_import.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert at_import == []


def test_make_test_keeps_a_sample_of_each_long_matrix_that_covers_its_families():
    import json

    from tiers import SWEEP_SAMPLE, diagonal_sample, resume_sample

    manifest = ROOT / "fixtures" / "optimizers" / "manifest.json"
    entries = json.loads(manifest.read_text()) if manifest.exists() else []
    chosen = [e for e in entries if e["file"] in resume_sample(entries)]
    assert {e["optimizer"] for e in chosen} == {e["optimizer"] for e in entries}  # every rule
    assert {e["writer"] for e in chosen} == {e["writer"] for e in entries}  # every writer
    assert len(chosen) < len(entries) / 3 or not entries
    families = {"k1": ("k122",), "keras2": ("k216", "k224", "k231"), "tf.keras 1": ("tfk115",),
                "tf.keras 2": ("tf20", "tf21", "tf22", "tf23", "tf24", "tf28", "tf210", "tf215"), "tf_keras": ("tfkeras",)}
    assert all(set(SWEEP_SAMPLE) & set(writers) for writers in families.values())
    pairs = diagonal_sample(["a", "b", "c", "d"], ["onnx", "litert", "saved_model"])
    assert {case for case, _ in pairs} == {"a", "b", "c", "d"} and {f for _, f in pairs} == {"onnx", "litert",
                                                                                          "saved_model"}


def test_make_test_leaves_the_rest_of_each_matrix_to_make_test_all_which_ci_runs():
    makefile = (ROOT / "Makefile").read_text()
    assert 'PYTEST_ARGS ?= -m "not full_matrix"' in makefile
    recipe = makefile.split("\ntest-all:", 1)[1].split("\n\n", 1)[0]
    assert "pytest" in recipe and ' -m "' not in recipe and "PYTEST_ARGS" not in recipe
    assert (ROOT / ".ci" / "run").read_text().strip().endswith("make test-all")


def test_the_test_files_share_one_cli_runner():
    """tests/support/helpers.py's ``runner``; the fuzz harness, a program of its own, makes its own in its worker."""
    own = [path.relative_to(ROOT).as_posix() for path in (ROOT / "tests").rglob("*.py")
           if "CliRunner" + "()" in path.read_text() and path.name not in ("helpers.py", "harness.py")]
    assert own == []
