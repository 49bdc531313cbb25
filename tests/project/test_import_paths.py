"""What a call does not need is not imported on its path: each module imported runs in every call's process.

Not in the core tier (``make check``): ``load_model`` imports Keras, in a Python of its own.
"""

import json

from helpers import run_python


def test_a_repair_imports_neither_inspects_readers_nor_the_lambda_recoverer():
    """What a call does not need is not imported on its path (each module imported runs, in every call's process):
    unwrap to .h5 needs neither inspect's report nor the recoverer of Lambda sources; load_model, without a
    module of Lambda functions or a non-finite weight, neither the recoverer nor the importer of user modules."""
    unwrapped = set(json.loads(run_python(
        "import sys, json, tempfile, pathlib, mgpu_io; out = pathlib.Path(tempfile.mkdtemp()) / 'm.h5';"
        " mgpu_io.unwrap('fixtures/files/k224_functional_bn_x2_full.h5', out); print(json.dumps(sorted(sys.modules)))")))
    assert "mgpu_io.format.plan" in unwrapped  # the repair ran here (or was imported for its child)
    assert not {"mgpu_io.format.inspect", "mgpu_io.format.inspect_reader", "mgpu_io.format.non_finite",
                "mgpu_io.lambdas.recovery", "mgpu_io.format.plan_data"} & unwrapped
    loaded = set(json.loads(run_python(
        "import sys, json, mgpu_io; mgpu_io.load_model('fixtures/files/k224_functional_bn_x2_full.h5');"
        " print(json.dumps(sorted(sys.modules)))").splitlines()[-1]))
    assert "mgpu_io.keras.load" in loaded
    assert not {"mgpu_io.format.inspect", "mgpu_io.format.non_finite", "mgpu_io.lambdas.recovery",
                "mgpu_io.keras.custom"} & loaded


def test_the_command_lines_inspect_reads_in_its_early_server_and_imports_neither_h5py_nor_numpy():
    """``mgpu-io inspect`` forks its fork server as it starts, which imports the reader while the command line imports
    itself (issue 50): the command's own process never imports h5py or NumPy, and says what the library says."""
    code = (
        "import sys, json, atexit; sys.argv = ['mgpu-io', 'inspect', 'fixtures/files/k224_siamese_x2_full.h5', '--json'];"
        " atexit.register(lambda: print('MODULES ' + json.dumps(sorted(sys.modules)), flush=True));"
        " from mgpu_io.cli import run; run()"
    )
    printed = run_python(code)
    answer, modules = printed.split("MODULES ")
    modules = set(json.loads(modules))
    assert "mgpu_io.format.sandbox.fork_server" in modules and "mgpu_io.format.inspect" in modules
    assert not {"h5py", "numpy", "mgpu_io.format.inspect_reader", "mgpu_io.format.read"} & modules
    in_process = json.loads(run_python(
        "import json, mgpu_io; print(json.dumps(mgpu_io.inspect('fixtures/files/k224_siamese_x2_full.h5').to_dict()))"))
    assert json.loads(answer) == in_process and in_process["is_wrapper"]


def test_on_one_processor_inspect_forks_no_early_server_and_reads_as_before():
    """On one processor the server's imports and the command line's would take turns, not overlap: the child forked
    to read the file imports the reader itself, and the answer is the same."""
    code = (
        "import os, sys, json, atexit; os.sched_setaffinity(0, {min(os.sched_getaffinity(0))});"
        " sys.argv = ['mgpu-io', 'inspect', 'fixtures/files/k224_siamese_x2_full.h5', '--json'];"
        " from mgpu_io.format.sandbox import fork_server;"
        " atexit.register(lambda: print('SERVER ' + json.dumps(fork_server._ForkServer._current is None), flush=True));"
        " from mgpu_io.cli import run; run()"
    )
    answer, server_none = run_python(code).split("SERVER ")
    assert json.loads(server_none) is True and json.loads(answer)["is_wrapper"]
