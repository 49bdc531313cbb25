"""Names that mean one thing: a public function or class is defined (``def``/``class`` at module level) in one
module of mgpu_io/, and a module's name is one module's, unless the allow-lists below say why not.

A re-export (``from x import name`` in an ``__init__.py`` or beside it) is an import, not a definition, and is not
counted; names with a leading ``_`` are a module's own business. The programs of the Lambda feature
(``lambdas/__init__.py``'s ``FLOORS``: ``program``) are run as separate processes and never import the package, so
what they define for themselves is theirs.
"""

import ast
import collections
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "mgpu_io"

#: Names deliberately defined in several modules, each with why. A new entry needs a reason a reader accepts; the
#: usual answer is a rename that says which meaning this one is (tf/'s ``checkpoint_to_h5`` beside ``to_legacy_h5``).
SHARED_ON_PURPOSE = {
    # The command line's commands are named as the library calls they make (one call per command).
    "inspect": "cli/app.py's command, api.py's entry point it calls, remote.py's (the same verb on a URL, handed "
    "api's local one), and format/inspect.py's reading of a legacy file that api.py asks after the door",
    "unwrap": "cli/app.py's command, api.py's entry point it calls, remote.py's (the same verb on a URL, handed "
    "api's local repair)",
    "transfer": "cli/app.py's command for keras/transfer.py's",
    "verify": "cli/app.py's command for keras/verify.py's",
    "run": "cli/app.py's typer application, and each deployable format's runtime (below)",
    # keras/exports/: one module per deployable format, the same verbs in each (docs/architecture.md).
    "needs": "each deployable format's module says what its runtime needs (keras/exports/)",
    "write": "each deployable format's module writes its artifact (keras/exports/)",
    # lambdas/backend2.py is Keras 2's backend API (`K.*`) by Keras 2's own names, for recovered functions.
    "backend": "lambdas/backend2.py's is Keras 2's K.backend(); keras/exports/'s names the backend an export runs on",
    "binary_crossentropy": "Keras 2's K.binary_crossentropy (lambdas/backend2.py) and Keras 2's loss, exact "
    "(keras/writer_crossentropy.py)",
    "categorical_crossentropy": "Keras 2's K.categorical_crossentropy (lambdas/backend2.py) and Keras 2's loss, "
    "exact (keras/writer_crossentropy.py)",
    "clip": "Keras 2's K.clip (lambdas/backend2.py) and the clip of Keras 2's losses (keras/writer_crossentropy.py)",
    "hard_sigmoid": "Keras 2's K.hard_sigmoid (lambdas/backend2.py) and the activation registered by that name "
    "(keras/known.py)",
}

#: Module names that two packages hold on purpose, each with why.
MODULES_ON_PURPOSE = {
    "tfops": "one feature on two floors: format/conversions/tfops.py rewrites a TFOpLambda's config (h5py only), "
    "keras/tfops.py runs the ops it names in Keras 3",
}


def _programs():
    """The Lambda feature's programs: run as separate processes, never imported."""
    from mgpu_io.lambdas import FLOORS

    return {PACKAGE / "lambdas" / f"{name}.py" for name, floor in FLOORS.items() if floor == "program"}


def _modules():
    programs = _programs()
    return [path for path in sorted(PACKAGE.rglob("*.py")) if path not in programs]


def defined_in_several_modules():
    """``{name: [module, ...]}`` of every public module-level function or class defined in two or more modules."""
    where = collections.defaultdict(list)
    for path in _modules():
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and not node.name.startswith(
                "_"
            ):
                where[node.name].append(path.relative_to(PACKAGE).as_posix())
    return {name: modules for name, modules in where.items() if len(modules) > 1}


def test_each_public_function_and_class_is_defined_in_one_module():
    found = defined_in_several_modules()
    unexplained = {name: modules for name, modules in found.items() if name not in SHARED_ON_PURPOSE}
    assert unexplained == {}, (
        f"defined in several modules of mgpu_io/: {unexplained}; rename each to what it does there, or add it to "
        "SHARED_ON_PURPOSE with the reason"
    )
    assert sorted(set(SHARED_ON_PURPOSE) - set(found)) == [], "allowed but no longer shared: remove from the list"


def test_each_module_name_is_one_modules():
    where = collections.defaultdict(list)
    for path in _modules():
        if path.name != "__init__.py":
            where[path.stem].append(path.relative_to(PACKAGE).as_posix())
    several = {name: paths for name, paths in where.items() if len(paths) > 1 and not name.startswith("_")}
    assert {name: paths for name, paths in several.items() if name not in MODULES_ON_PURPOSE} == {}
    assert sorted(set(MODULES_ON_PURPOSE) - set(several)) == []


def test_the_check_finds_a_name_defined_twice(tmp_path, monkeypatch):
    """The check sees a second definition, and not a re-export."""
    package = tmp_path / "mgpu_io"
    (package / "lambdas").mkdir(parents=True)
    (package / "a.py").write_text("def plan():\n    pass\n\n\nclass Plan:\n    pass\n")
    (package / "b.py").write_text("from a import Plan\n\n\ndef plan():\n    pass\n\n\ndef _private():\n    pass\n")
    (package / "lambdas" / "c.py").write_text("def _private():\n    pass\n")
    monkeypatch.setitem(globals(), "PACKAGE", package)
    monkeypatch.setitem(globals(), "_programs", lambda: set())
    assert defined_in_several_modules() == {"plan": ["a.py", "b.py"]}
