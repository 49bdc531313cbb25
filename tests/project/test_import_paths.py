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
    assert not {"mgpu_io.format.inspect", "mgpu_io.format.non_finite", "mgpu_io.lambdas.recovery",
                "mgpu_io.format.plan_data"} & unwrapped
    loaded = set(json.loads(run_python(
        "import sys, json, mgpu_io; mgpu_io.load_model('fixtures/files/k224_functional_bn_x2_full.h5');"
        " print(json.dumps(sorted(sys.modules)))").splitlines()[-1]))
    assert "mgpu_io.keras.load" in loaded
    assert not {"mgpu_io.format.inspect", "mgpu_io.format.non_finite", "mgpu_io.lambdas.recovery",
                "mgpu_io.keras.custom"} & loaded
