"""The three floors hold: the format core imports no Keras, nothing imports the CLI, no cycles, registries walked.

A contributor asking "where is the tf.keras writer handled?" or "where do I add a conversion?" finds one answer:
docs/architecture.md, checked here against the registries themselves.
"""

import ast
import json
import re
import sys

import pytest
from helpers import APP_MANIFEST, HABITS_MANIFEST, MANIFEST, ROOT, TF2_MANIFEST, fixture_path, run_python

from mgpu_io import InvalidArgument, UnsupportedModel
from mgpu_io.format import conversions
from mgpu_io.format import wrapper_writers as writers
from plans import planned
from mgpu_io.lambdas import FLOORS as LAMBDA_FLOORS

PACKAGE = ROOT / "mgpu_io"
ARCHITECTURE = (ROOT / "docs" / "architecture.md").read_text()


def module_name(path):
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path, top_level_only=False):
    """Absolute module names imported by a file (relative imports resolved), at any depth or at module level."""
    tree = ast.parse(path.read_text())
    nodes = tree.body if top_level_only else ast.walk(tree)
    found = set()
    package = module_name(path).rsplit(".", 1)[0] if path.name != "__init__.py" else module_name(path)
    for node in nodes:
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names}
    return found


def files(under):
    return sorted((PACKAGE / under).rglob("*.py"))


def lambda_modules(floor):
    """The modules of the Lambda feature's package on ``floor`` (``format``, ``keras``, ``program``)."""
    return [PACKAGE / "lambdas" / f"{name}.py" for name, its in LAMBDA_FLOORS.items() if its == floor]


def test_every_module_of_the_lambda_package_declares_its_floor():
    """mgpu_io/lambdas/ holds the feature's h5py-only and Keras parts side by side: floors are checked per module."""
    found = sorted(p.stem for p in (PACKAGE / "lambdas").glob("*.py") if p.stem != "__init__")
    assert found == sorted(LAMBDA_FLOORS), "a module of mgpu_io/lambdas/ needs its row in FLOORS (and on the page)"
    assert set(LAMBDA_FLOORS.values()) == {"format", "keras", "program"}


FORMAT_FORBIDDEN = ("keras", "tensorflow", "tf_keras", "typer", "rich", "jax", "torch")


def test_the_format_core_imports_neither_keras_nor_the_cli_tools():
    """format/ and the format-floor modules of lambdas/ import no Keras, TensorFlow, typer or rich, at any depth;
    of lambdas/ they import only its format-floor modules."""
    for path in files("format") + lambda_modules("format") + [PACKAGE / "lambdas" / "__init__.py"]:
        found = imports(path)
        bad = [name for name in found if name.split(".")[0] in FORMAT_FORBIDDEN
               or name.startswith(("mgpu_io.keras", "mgpu_io.cli", "mgpu_io.anykeras"))]
        assert bad == [], f"{path.relative_to(ROOT)} imports {bad}"
        above = [name for name in found if name.startswith("mgpu_io.lambdas.")
                 and LAMBDA_FLOORS.get(name.split(".")[2]) != "format"]
        assert above == [], f"{path.relative_to(ROOT)} imports {above}, above its floor"


def test_the_keras_modules_of_the_lambda_package_import_keras_only_inside_functions():
    """As keras/ does: `import mgpu_io.lambdas.trusted` on a core install fails only when a function runs (the
    module-level `import_keras()` of keras/_compat.py names the extra to install)."""
    for path in lambda_modules("keras"):
        top = imports(path, top_level_only=True)
        assert not [n for n in top if n.split(".")[0] in FORMAT_FORBIDDEN], path
        assert not [n for n in imports(path) if n.startswith("mgpu_io.cli")], path


def test_nothing_below_the_cli_imports_it():
    for path in files("format") + files("keras") + files("anykeras") + files("lambdas") + [
            PACKAGE / "api.py", PACKAGE / "__init__.py", PACKAGE / "errors.py"]:
        assert not [n for n in imports(path) if n.startswith("mgpu_io.cli")], path


def test_the_callback_and_what_it_shares_use_the_standard_library_only():
    allowed = {"mgpu_io.errors", "mgpu_io.format.non_finite", "mgpu_io.format.output_keys", "mgpu_io.anykeras.wrapper"}
    anykeras = [p.relative_to(PACKAGE).as_posix() for p in files("anykeras")]
    for name in (*anykeras, "format/non_finite.py", "format/output_keys.py", "errors.py"):
        top = imports(PACKAGE / name, top_level_only=True)
        outside = {n for n in top if n.split(".")[0] not in sys.stdlib_module_names and n not in allowed
                   and not any(n.startswith(a + ".") for a in allowed)}
        assert outside == set(), f"{name} imports {outside} at module level"


def test_imports_have_no_cycles_at_module_level_or_inside_functions():
    """No module imports, at any depth, a module that imports it back (through any chain): a function-level import
    is a dependency too. (`tf/` keeps the door's question, `tf_format`, apart from its converter; `remote` is handed
    the local repair and inspect rather than importing the API that calls it.)"""
    graph = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        own = module_name(path)
        graph[own] = {n for n in imports(path) if n.startswith("mgpu_io")}
    modules = set(graph)
    edges = {m: {n if n in modules else n.rsplit(".", 1)[0] for n in targets} & modules - {m}
             for m, targets in graph.items()}
    for m in list(edges):  # importing a.b.c runs a and a.b first: only cycles among modules themselves count
        edges[m] = {n for n in edges[m] if not m.startswith(n + ".")}
    state = {}

    def visit(node, stack):
        state[node] = "open"
        for nxt in edges[node]:
            if state.get(nxt) == "open":
                pytest.fail(f"import cycle: {' -> '.join(stack + [node, nxt])}")
            if nxt not in state:
                visit(nxt, stack + [node])
        state[node] = "done"

    for node in sorted(edges):
        if node not in state:
            visit(node, [])


def test_remote_is_a_storage_adapter_under_the_api():
    """remote.py reads and writes object storage; what it does with a local copy is handed to it by the API
    (`repair=`, `inspect_local=`): it imports neither the API nor the package's top."""
    import mgpu_io

    found = {name for name in imports(PACKAGE / "remote.py") if name.startswith("mgpu_io")}
    above = {f"mgpu_io.{name}" for name in mgpu_io.__all__}  # the API's names: `from mgpu_io import unwrap`
    assert not {name for name in found if name in above or name.startswith(("mgpu_io.api", "mgpu_io.keras"))}
    tree = ast.parse((PACKAGE / "remote.py").read_text())
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.Import) and any(a.name == "mgpu_io" for a in n.names)]
    assert "mgpu_io.remote" not in {n.rsplit(".", 1)[0] for n in imports(PACKAGE / "format" / "door.py")}


def _library_calls(function, helpers=None, seen=None):
    """The library functions a command calls, itself or through the module's own helpers (``helpers``: the module's
    functions by name): ``mgpu_io.NAME(...)``, and names imported from the library (``from mgpu_io.api import
    inspect_route``), the errors and the CLI's own modules left out."""
    helpers, seen = helpers or {}, seen if seen is not None else {function.name}
    imported = set()
    for node in ast.walk(function):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("mgpu_io"):
            if not node.module.startswith(("mgpu_io.cli", "mgpu_io.errors", "mgpu_io.format.text")):
                imported |= {alias.asname or alias.name for alias in node.names}
    calls = []
    for node in ast.walk(function):
        if not isinstance(node, ast.Call):
            continue
        target = node.func
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "mgpu_io":
            calls.append(target.attr)
        elif isinstance(target, ast.Name) and target.id in imported:
            calls.append(target.id)
        elif isinstance(target, ast.Name) and target.id in helpers and target.id not in seen:
            seen.add(target.id)
            calls += _library_calls(helpers[target.id], helpers, seen)
    return calls


def test_each_command_makes_one_library_call_and_asks_at_most_one_route_question():
    """A command is a thin face (docs/architecture.md): one call does its work; `unwrap` and `inspect` first ask the
    library which route the call takes (for their progress bars and quiet starts), and nothing else."""
    tree = ast.parse((PACKAGE / "cli" / "app.py").read_text())
    commands = [node for node in tree.body if isinstance(node, ast.FunctionDef)
                and any(isinstance(d, ast.Call) and getattr(d.func, "attr", "") == "command" for d in node.decorator_list)]
    assert {c.name for c in commands} >= {"inspect", "unwrap", "lambdas", "transfer", "verify"}
    helpers = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef) and node not in commands}
    for command in commands:
        calls = _library_calls(command, helpers)
        work = [name for name in calls if not name.endswith("_route")]
        assert len(work) == 1, f"{command.name} calls {calls}"
        assert len(calls) - len(work) <= 1, f"{command.name} asks {calls}"


def test_base_model_checkpoint_imports_without_h5py_numpy_or_the_core():
    loaded = json.loads(run_python(
        "import sys, json; from mgpu_io import BaseModelCheckpoint; print(json.dumps(sorted(sys.modules)))"))
    assert not {"h5py", "numpy", "keras", "tensorflow", "typer", "rich"} & set(loaded)
    assert not [m for m in loaded if m.startswith(("mgpu_io.format.read", "mgpu_io.format.plan", "mgpu_io.api"))]


def test_the_cli_and_inspect_import_no_keras():
    loaded = json.loads(run_python(
        "import sys, json; import mgpu_io.cli; import mgpu_io; mgpu_io.inspect('fixtures/files/k224_siamese_x2_full.h5');"
        " print(json.dumps(sorted(sys.modules)))"))
    assert not {"keras", "tensorflow", "tf_keras"} & set(loaded)


def test_rich_is_declared_since_the_cli_uses_it():
    pyproject = (ROOT / "pyproject.toml").read_text()
    dependencies = pyproject.split("dependencies = [", 1)[1].split("]", 1)[0]
    for package in ("h5py", "numpy", "typer", "rich"):
        assert f'"{package}' in dependencies, package


# --- the registries ------------------------------------------------------------------------------------------


def test_every_conversion_file_is_one_registered_family():
    family_files = sorted(p.stem for p in (PACKAGE / "format" / "conversions").glob("*.py")
                          if p.stem not in ("__init__", "base") and not p.stem.startswith("_"))
    assert sorted(f.name for f in conversions.FAMILIES) == family_files
    names = [rule.name for family in conversions.FAMILIES for rule in family.rules]
    assert len(names) == len(set(names)), "two rules share a name"


def test_each_rule_is_proven_on_the_writers_it_names_and_nothing_unregistered_is_reported(monkeypatch):
    # Which rules each fixture triggers does not depend on where its structure is read: planned here, in this
    # process, instead of a forked child per file (tests/safety/ checks the child; forking this process per
    # fixture took most of this test's time).
    monkeypatch.setenv("MGPU_IO_PROBE", "0")
    seen = {}
    for entry in MANIFEST + APP_MANIFEST + TF2_MANIFEST + HABITS_MANIFEST:
        if entry["file_type"] not in ("model", "weights", "config", "yaml"):
            continue  # stubs; SavedModels and TF checkpoints are read by mgpu_io.tf first
        config = None
        if entry["file_type"] == "weights" and entry.get("config"):  # fixtures/habits names its architecture
            config = fixture_path(entry).with_name(entry["config"])
        elif entry["file_type"] == "weights" and "_weights.h5" in entry["file"]:  # with its architecture, if saved
            beside = fixture_path(entry).with_name(entry["file"].replace("_weights.h5", "_config.json"))
            config = beside if beside.exists() else None
        try:
            with planned(fixture_path(entry), allow_plain=True, config=config) as plan:
                for change in plan.report.config_changes:
                    seen.setdefault(change, set()).add(entry["writer"])
        except InvalidArgument as refused:  # CuDNN weights without their architecture are refused, not planned
            assert "CuDNN-layout weights" in str(refused), entry["file"]
        except UnsupportedModel as refused:  # tf.keras 2.4's RandomCrop (tests/load/test_tf2x_applications.py)
            assert entry["file"] == "tf24_random_crop_full.h5" and "(RandomCrop)" in str(refused), entry["file"]
    assert set(seen) <= set(conversions.RULES), set(seen) - set(conversions.RULES)
    for name, rule in conversions.RULES.items():
        assert set(rule.verified) <= seen.get(name, set()), (
            f"rule {name} claims {rule.verified}, but fixtures of {sorted(seen.get(name, []))} trigger it")


def test_writers_are_one_registry_with_a_fallback_last():
    assert writers.WRITERS[-1] is writers.GENERIC
    assert len({w.name for w in writers.WRITERS}) == len(writers.WRITERS)
    for writer in writers.WRITERS:
        assert writer.display and writer.files


def test_the_architecture_page_names_every_floor_writer_and_family():
    floors = sorted(p.name + "/" for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").is_file())
    assert floors == ["anykeras/", "cli/", "format/", "keras/", "lambdas/", "tf/"]  # a new floor needs its row and a test here
    for floor in floors:
        assert f"`{floor}`" in ARCHITECTURE
    for writer in writers.WRITERS:
        assert f"`{writer.name}`" in ARCHITECTURE, writer.name
    for family in conversions.FAMILIES:
        assert f"`conversions/{family.name}.py`" in ARCHITECTURE, family.name
    for module in ("door.py", "keras3.py", "read.py", "detect.py", "plan.py", "write.py", "wrapper_writers.py"):
        assert f"`format/{module}`" in ARCHITECTURE and (PACKAGE / "format" / module).is_file(), module
    for path in files("format/sandbox"):  # one module per job of the sandbox, each named on the page
        assert f"`format/sandbox/{path.name}`" in ARCHITECTURE or path.name == "__init__.py", path.name


def test_the_tf_floor_imports_tensorflow_only_inside_functions_and_nothing_above_it():
    """tf/ reads TensorFlow's formats as data: TensorFlow is imported only where a SavedModel or checkpoint is read,
    and `tf_format` (which the door asks) needs the standard library only."""
    for path in files("tf"):
        top = imports(path, top_level_only=True)
        assert not [n for n in top if n.split(".")[0] in ("tensorflow", "keras", "tf_keras", "h5py", "numpy")], path
        assert not [n for n in imports(path) if n.startswith(("mgpu_io.keras", "mgpu_io.cli", "keras", "tf_keras"))]
    for leaf in ("__init__.py", "recognise.py"):  # what the door asks, and the package it is in: no TensorFlow, no h5py
        found = imports(PACKAGE / "tf" / leaf)
        assert {n.split(".")[0] for n in found if not n.startswith("mgpu_io")} <= set(sys.stdlib_module_names)
        assert {n for n in found if n.startswith("mgpu_io")} <= {"mgpu_io.format.kinds", "mgpu_io.tf.bundle"} | {
            f"mgpu_io.format.kinds.{name}" for name in ("SAVEDMODEL", "TF_CHECKPOINT")} | {
            f"mgpu_io.tf.bundle.{name}" for name in ("OBJECT_GRAPH_KEY", "TABLE_MAGIC", "checkpoint_prefix")}, leaf
    for path in files("format"):  # the format core asks tf/ only what a path is, from inside a function
        assert not [n for n in imports(path, top_level_only=True) if n.startswith("mgpu_io.tf")], path
        assert {n for n in imports(path) if n.startswith("mgpu_io.tf")} <= (
            {"mgpu_io.tf.recognise", "mgpu_io.tf.recognise.tf_format"} if path.name == "door.py" else set()), path


def test_every_entry_point_asks_the_one_door_what_its_input_is():
    """inspect, unwrap, load_model and transfer_weights decide what a path is in one place (format/door.py); verify
    loads through load_model, and the command line asks the library (the next test). None tells .keras files apart
    by itself."""
    for name in ("api.py", "keras/load.py", "keras/transfer.py"):
        found = imports(PACKAGE / name)
        assert "mgpu_io.format.door" in found or "mgpu_io.format.door.describe" in found, name
        assert "zipfile" not in found, f"{name} recognises zip archives itself"
    assert "mgpu_io.keras.load.load_model" in imports(PACKAGE / "keras" / "verify.py")


#: What the command line would call to tell an input's kind by itself: the door's questions (bare, or on `door.`),
#: whether a path is a URL or a folder, an HDF5 file, a TensorFlow format.
_CLI_OWN_DECISIONS = r"(?<![\w.])(sniff|describe|content|is_url|is_hdf5)\(|\bdoor\.|\.is_dir\(|TENSORFLOW_KINDS"


def test_the_command_line_asks_the_library_what_its_inputs_are():
    """cli/ decides no input's kind, not even for a progress bar or a quiet start: `unwrap` asks
    `api.unwrap_route`, `inspect` asks `api.inspect_route`, and they ask the door. No module of cli/ imports the
    door, the kinds' table or tf/, nor calls what reads a path's first bytes."""
    for path in files("cli"):
        found, text = imports(path), path.read_text()
        own = sorted(name for name in found if name.startswith(("mgpu_io.format.door", "mgpu_io.format.kinds",
                                                                  "mgpu_io.tf", "mgpu_io.remote")) or name == "zipfile")
        assert own == [], f"cli/{path.name} imports {own}: ask mgpu_io.api what the input is"
        called = [match.group(0) for match in re.finditer(_CLI_OWN_DECISIONS, text)]
        assert called == [], f"cli/{path.name} decides what an input is itself ({called})"
    asked = imports(PACKAGE / "cli" / "app.py")
    assert {"mgpu_io.api.unwrap_route", "mgpu_io.api.inspect_route"} <= asked


#: What tells an input's kind by itself, outside the door: each names a rule that format/door.py holds.
_OWN_DECISIONS = {
    "mgpu_io.tf.recognise.tf_format": "asks tf/ whether a path is a TensorFlow format",
    "h5py.is_hdf5": "tells HDF5 files apart",
    "tensorflow_kind": "maps tf/'s kinds into the door's",
}


def test_what_an_input_is_is_decided_in_one_place_with_one_vocabulary():
    """format/door.py is the only module that decides what an input is (the kinds themselves are one table,
    format/kinds.py): no other module asks tf/'s `tf_format`, calls `h5py.is_hdf5`, sniffs YAML or spells a kind its
    own way (the TF checkpoint once had two spellings, mapped into each other)."""
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE).as_posix() in ("format/door.py", "tf/recognise.py"):
            continue
        text, found = path.read_text(), imports(path)
        for name, what in _OWN_DECISIONS.items():
            assert name not in found and f"{name.rsplit('.', 1)[-1]}(" not in text.replace("def tf_format(", ""), (
                f"{path.relative_to(ROOT)} {what} itself"
            )
        assert "tf_checkpoint" not in text, f"{path.relative_to(ROOT)} spells a kind its own way"
        assert "_YAML_START" not in text and "_looks_like_yaml" not in text, f"{path.relative_to(ROOT)} sniffs YAML"


#: The one module that may compile and run a Lambda's function: only with the caller's safe_mode=False.
TRUSTED = PACKAGE / "lambdas" / "trusted.py"
#: The program that proves a recovered source on the writer's own Python (compiles it, reads the stored bytes there).
RECOMPILE = PACKAGE / "lambdas" / "_recompile.py"


def test_the_programs_that_read_stored_code_are_run_never_imported():
    """lambdas/_decompile.py, _decompile39.py (loaded by it) and _recompile.py run as separate programs under limits:
    the modules whose floor is ``program``."""
    programs = {f"mgpu_io.lambdas.{name}" for name, floor in LAMBDA_FLOORS.items() if floor == "program"}
    assert programs == {"mgpu_io.lambdas._decompile", "mgpu_io.lambdas._decompile39", "mgpu_io.lambdas._recompile"}
    for path in sorted(PACKAGE.rglob("*.py")):
        found = imports(path)
        assert not {n for n in found if n in programs or n.rsplit(".", 1)[0] in programs}, path


#: The modules of format/sandbox/ that start a process: the probe's child, the fork server (and its children), a
#: folder's workers and the programs. The package's other modules (what every child does first, what runs inside the
#: probe's child, what crosses the pipe) start none.
STARTERS = {PACKAGE / "format" / "sandbox" / name for name in ("probe.py", "fork_server.py", "programs.py")}


def test_every_child_process_is_started_by_the_one_mechanism():
    """The sandbox's child, a folder's workers, and the programs that read stored code (the decompiler, the
    recompiler) are all started by format/sandbox/ (its STARTERS above), which limits them and ties them to their
    parent's life: no other module forks, spawns or runs a program. (The folder repair picks the ``multiprocessing``
    start method the sandbox starts its workers with.)"""
    starting = {("os", "fork"), ("os", "forkpty"), ("os", "execv"), ("os", "execve"), ("os", "posix_spawn"),
                ("os", "system"), ("os", "popen"), ("subprocess", "run"), ("subprocess", "Popen"),
                ("subprocess", "call"), ("subprocess", "check_call"), ("subprocess", "check_output")}
    found, starters = [], set()
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                    and ((node.value.id, node.attr) in starting or node.attr == "Process"):
                if path in STARTERS:
                    starters.add(path)
                else:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.value.id}.{node.attr}")
    assert found == []
    assert starters == STARTERS, "a module of STARTERS starts no process any more: take it off the list"


def test_no_module_can_unmarshal_or_run_stored_code():
    """Lambda payloads are data: no module imports marshal, pickle loading, or calls eval/exec/compile (but the one
    that rebuilds Lambdas for a caller who trusts the file, reached only through safe_mode=False, and the program that
    proves a recovered source on the writer's own Python, run by `mgpu-io lambdas --check`)."""
    for path in sorted(PACKAGE.rglob("*.py")):
        names = imports(path)
        assert "keras.src.utils.python_utils" not in names, path
        if path in (TRUSTED, RECOMPILE):  # safe_mode=False, or the writer's own Python proving a source
            continue
        assert "marshal" not in names, path
        calls = {node.func.id for node in ast.walk(ast.parse(path.read_text()))
                 if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}
        assert not {"eval", "exec", "compile", "__import__"} & calls, path


def test_every_function_keras_wrote_is_defined_once_and_registered_as_it_is():
    """The functions Keras itself stored as Lambdas are defined once, as code (lambdas/by_reference.py); Keras'
    registry holds those very objects, not a second copy kept equal to a text."""
    keras = pytest.importorskip("keras")
    from mgpu_io.format.conversions.hard_sigmoid import KERAS2_HARD_SIGMOID
    from mgpu_io.keras import known
    from mgpu_io.lambdas.by_reference import KNOWN_FUNCTIONS

    assert sorted(known.FUNCTIONS) == sorted([k.registered for k in KNOWN_FUNCTIONS] + [KERAS2_HARD_SIGMOID])
    for function in KNOWN_FUNCTIONS:
        assert known.FUNCTIONS[function.registered] is function.function
        assert not hasattr(function, "source")
    for name, function in known.FUNCTIONS.items():
        assert keras.saving.get_registered_object(name) is function


def test_the_trusted_module_is_reached_only_through_safe_mode_false():
    importers = [path for path in sorted(PACKAGE.rglob("*.py")) if "mgpu_io.lambdas.trusted" in imports(path)]
    assert [path.relative_to(PACKAGE).as_posix() for path in importers] == ["keras/load.py"]
    source = (PACKAGE / "keras" / "load.py").read_text()
    assert "if not safe_mode:  # the caller trusts the file" in source


# --- messages: one set of words, two renderings (issue 34) -------------------------------------------------------


def test_the_cli_renders_parameters_from_fields_and_never_reads_a_message():
    from mgpu_io.cli import render

    for path in (PACKAGE / "cli").glob("*.py"):
        assert "re" not in imports(path), f"{path.name} imports re: the command line reads no message's words"
    assert not hasattr(render, "to_flags") and not hasattr(render, "FLAGS")


#: Texts that spell a parameter on purpose, each with its reason.
SPELLED_ON_PURPOSE = {
    ("lambdas/trusted.py", "safe_mode=False"): "a Python warning (warnings.warn), which no report renders",
    ("format/optimizer.py", "custom_objects="): "a state not restored: load_model's Python warning, which no report "
                                                "renders",
    ("keras/compile.py", "custom_objects="): "a metric not rebuilt: load_model's Python warning, which no report "
                                             "renders",
    ("lambdas/by_reference.py", "custom_objects="): "Keras 3's own keras.models.load_model(custom_objects=), which "
                                                    "has no flag",
    ("lambdas/recovery.py", "--lambda-module"): "the recovered module's header: the library call and the command, "
                                                "each in its own terms",
}

#: The command line's flags that render no library parameter of FLAG_OF, each with its reason.
FLAGS_WITHOUT_A_PARAMETER = {
    "--json": "the command line's output", "--quiet": "the command line's output", "--version": "the command line's",
    "--install-completion": "typer's", "--show-completion": "typer's",
    "--lambda-module": "lambdas= given a module's path (render.flag)", "--no-scan-weights": "scan_weights=False",
    "--strict": "strict=True, the default", "--check": "lambda_sources(check=True), which no message names",
    "--tolerance": "verify(tolerance=), which no message names",
    "--output": "the lambdas command's PY, which messages name as output= as they name the other commands' OUT",
}


def _command_line_flags():
    """Every ``--flag`` of every command of ``mgpu-io``, read from the typer app itself."""
    import typer.main

    from mgpu_io.cli.app import app

    flags = set()

    def walk(command):
        for param in command.params:
            flags.update(opt for opt in (*param.opts, *param.secondary_opts) if opt.startswith("--"))
        for sub in getattr(command, "commands", {}).values():
            walk(sub)

    walk(typer.main.get_command(app))
    return flags


def test_every_flag_renders_a_parameter_or_says_why_not():
    """A library parameter the command line has a flag for is in render.FLAG_OF, so that the command line renders
    it and the check below knows its spelling (`custom_objects` was rendered by a special case only, so the check
    did not look for `custom_objects=`)."""
    from mgpu_io.cli.render import FLAG_OF

    rendered = {value.split()[0] for value in FLAG_OF.values()}
    flags = _command_line_flags()
    assert "--custom-objects" in flags and "--force" in flags  # the walk reads the app
    assert sorted(flags - rendered - set(FLAGS_WITHOUT_A_PARAMETER)) == []
    assert sorted(set(FLAGS_WITHOUT_A_PARAMETER) - flags) == []  # no reason kept for a flag that is gone


def _parameter_spellings():
    """Each library parameter the command line has a flag for, as the library spells it (``overwrite=True``,
    ``config=``), as a pattern that does not match inside a longer name (``my_config=``); and each of the command
    line's own flags (``--custom-objects``), which a library message that spells it would print to a caller of the
    library, who has no flags."""
    from mgpu_io.cli.render import FLAG_OF

    spellings = {f"{key[0]}={key[1]!r}" if isinstance(key, tuple) else f"{key}=" for key in FLAG_OF}
    return re.compile(
        "|".join(
            r"(?<![\w.])" + re.escape(spelling) + (r"(?!\w)" if spelling[-1] != "=" else "")
            for spelling in sorted(spellings, key=len, reverse=True)
        )
        + "".join(rf"|(?<![\w-]){re.escape(flag)}(?![\w-])" for flag in sorted(_command_line_flags(), key=len,
                                                                                  reverse=True))
    )


def _message_texts(tree):
    """``(line, text, in a raise)`` for every string of a module that is not a docstring nor a ``Param``'s own
    spelling; an f-string whole, its values as ``{}``."""
    code = re.compile(r"`[^`]*`|\b(mgpu_io|keras|model)(\.\w+)+\([^()]*(\([^()]*\)[^()]*)*\)")  # quoted code
    skipped, raised = set(), set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            skipped.add(id(body[0].value))
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Param":
            skipped |= {id(inner) for inner in ast.walk(node)}
        if isinstance(node, ast.JoinedStr):
            skipped |= {id(value) for value in node.values}
        if isinstance(node, ast.Raise):
            raised |= {id(inner) for inner in ast.walk(node)}
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.JoinedStr):
            text = "".join(value.value if isinstance(value, ast.Constant) else "{}" for value in node.values)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        else:
            continue
        yield node.lineno, code.sub("", text), id(node) in raised


def test_no_message_spells_a_parameter_in_words_the_command_line_cannot_render():
    """A message that names a parameter with a flag holds it as a ``Param`` (an error's field, a report's ``Text``):
    spelled in a plain string, the command line would print the library's spelling (``overwrite=True``) where its
    user typed ``--force``, and the library the flag (``--custom-objects``) to a caller who passed
    ``custom_objects=``. Code quoted in backticks or as a call (``mgpu_io.unwrap(..., config=...)``) is code."""
    pattern = _parameter_spellings()
    found, in_raises = [], 0
    for path in sorted(PACKAGE.rglob("*.py")):
        if "cli" in path.parts:
            continue
        where = path.relative_to(PACKAGE).as_posix()
        for line, text, raised in _message_texts(ast.parse(path.read_text())):
            for match in pattern.finditer(text):
                if (where, match.group(0)) not in SPELLED_ON_PURPOSE:
                    found.append(f"{where}:{line}: {match.group(0)}{' (a raise)' if raised else ''}")
            in_raises += raised
    assert in_raises > 100  # the walk reaches the messages of the raise sites
    assert found == []


def test_the_spelling_check_finds_a_parameter_in_a_plain_message():
    tree = ast.parse('raise OutputError(f"The output exists. Received: output={o}. Pass overwrite=True.")\n'
                     'x = Text("pass ", Param("overwrite", True, text="overwrite=True"))\n'
                     'y = "see `mgpu_io.unwrap(f, o, config=c)` and mgpu_io.load_model(o, lambdas=...)"\n'
                     'raise InvalidArgument(f"Received: --custom-objects {spec}. Fix it; or custom_objects={{}}")\n'
                     'z = "--custom-objectsx and my--force are no flags; `mgpu-io inspect --json` is code"')
    pattern = _parameter_spellings()
    hits = [(line, match.group(0), raised) for line, text, raised in _message_texts(tree)
            for match in pattern.finditer(text)]
    assert hits == [(1, "overwrite=True", True), (4, "--custom-objects", True), (4, "custom_objects=", True)]


# --- fields on every error (issue 49) ----------------------------------------------------------------------------

#: Modules that may raise an error with a written message: none. (The decompiler and recompiler programs run as
#: separate processes and raise no MgpuIOError; they answer in JSON.)
HAND_WRITTEN_MESSAGES_ALLOWED: set = set()


def _error_classes():
    """The names of the errors of mgpu_io/errors.py: its classes that derive from ``MgpuIOError``, read from its
    source (a class added there is checked the day it is added)."""
    tree = ast.parse((PACKAGE / "errors.py").read_text())
    classes, grown = {"MgpuIOError"}, True
    while grown:
        grown = False
        for node in tree.body:
            bases = {getattr(base, "id", None) for base in getattr(node, "bases", ())}
            if isinstance(node, ast.ClassDef) and node.name not in classes and bases & classes:
                classes.add(node.name)
                grown = True
    return classes


def _raised_errors(tree, classes):
    """``(line, class name, passes fields)`` for each ``raise`` of an error constructed there (``raise
    InvalidArgument(...)``, ``raise errors.OutputError(...)``); a re-raise of an error made elsewhere (``raise
    error``, ``raise renamed(error, ...)``) is not one. An error passes fields when it is given no positional message
    and at least one keyword among ``errors.FIELDS`` (or a ``**`` mapping of them)."""
    from mgpu_io.errors import FIELDS

    for node in ast.walk(tree):
        if not (isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call)):
            continue
        function = node.exc.func
        name = function.id if isinstance(function, ast.Name) else getattr(function, "attr", None)
        if name in classes:
            keywords = {keyword.arg for keyword in node.exc.keywords}
            fields = not node.exc.args and bool(keywords & {*FIELDS, None})
            yield node.lineno, name, fields


def test_every_error_is_raised_from_its_fields_not_from_a_written_message():
    """An error raised with fields (``problem=``, ``parameter=``, ``expected=``, ``received=``, ``fix=``) names the
    parameter at fault and each parameter it mentions as a ``Param``, so the command line can say them in its flags
    and a caller can read ``error.parameter``; one message string can do neither."""
    classes = _error_classes()
    assert {"InvalidArgument", "KerasRefused", "MissingLambda", "RemoteAccessError"} <= classes
    written, with_fields = [], 0
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(PACKAGE).as_posix()
        for line, name, fields in _raised_errors(ast.parse(path.read_text()), classes):
            with_fields += fields
            if not fields and where not in HAND_WRITTEN_MESSAGES_ALLOWED:
                written.append(f"{where}:{line}: {name}")
    assert with_fields > 200  # the walk reaches the raise sites
    assert written == []


def test_the_fields_check_finds_a_written_message_and_no_re_raise():
    tree = ast.parse('raise InvalidArgument(f"Bad. Expected x. Received: {y}. Fix.")\n'
                     'raise errors.OutputError("exists", kind="hdf5")\n'
                     'raise NotAModelFile()\n'
                     'raise NotAModelFile(problem="p", received="r", fix="f") from None\n'
                     'raise UnsupportedModel(**refusal(name))\n'
                     'raise error\n'
                     'raise renamed(error, local, url) from None\n'
                     'raise ValueError("not ours")')
    raised = list(_raised_errors(tree, _error_classes()))
    assert raised == [(1, "InvalidArgument", False), (2, "OutputError", False), (3, "NotAModelFile", False),
                      (4, "NotAModelFile", True), (5, "UnsupportedModel", True)]
