"""The version matrix (`make matrix`; not part of `make test`): what mgpu-io claims to run on, run.

- ``core``: the format core and the CLI (no Keras, no TensorFlow) on every supported Python, 3.9-3.13.
- ``keras``: the Keras floor on each supported Keras 3 minor, on JAX (the light backend), Python 3.11.
- ``torch``: the Keras floor on the newest Keras 3 with PyTorch as its backend (a large download: run it by name,
  ``nox -s torch``; it is not in the default sessions).

docs/matrix.md lists what passed, and when. The callback's Keras 2.2.4 / Python 3.7 promise is tested by
`make test` itself (tests/checkpoints/test_checkpoint_stacks.py in .venv-legacy).
"""

import nox

nox.options.reuse_existing_virtualenvs = True
nox.options.sessions = ["core", "keras"]

PYTHONS = ["3.9", "3.10", "3.11", "3.12", "3.13"]
KERAS_MINORS = ["3.12", "3.13", "3.14", "3.15"]
#: The tests that need neither Keras nor TensorFlow: reading, planning, writing, the CLI, errors.
CORE_TESTS = ["tests/formats/test_format_units.py", "tests/commands/test_cli.py", "tests/formats/test_inspect.py",
              "tests/safety/test_errors.py", "tests/unwrap/test_unwrap_behaviour.py", "tests/unwrap/test_batch.py",
              "mgpu_io/format", "mgpu_io/lambdas/__init__.py", "mgpu_io/lambdas/stored.py",
              "mgpu_io/lambdas/by_reference.py", "mgpu_io/lambdas/recovery.py", "mgpu_io/lambdas/writer_pythons.py",
              "mgpu_io/lambdas/source_module.py", "mgpu_io/lambdas/proof.py"]


@nox.session(python=PYTHONS)
def core(session):
    session.install("-e", ".", "pytest")
    session.run("python", "-m", "pytest", "-q", "-p", "no:cacheprovider", *CORE_TESTS)


@nox.session(python="3.11")
@nox.parametrize("keras", KERAS_MINORS)
def keras(session, keras):
    session.install("-e", ".", "pytest", f"keras~={keras}.0", "jax[cpu]")
    session.env.update(KERAS_BACKEND="jax", JAX_PLATFORMS="cpu")
    session.run("python", "tests/support/check_backend.py", "--check", silent=False)


@nox.session(python="3.11")
def torch(session):
    session.install("-e", ".[torch]", "pytest")
    session.env.update(KERAS_BACKEND="torch")
    session.run("python", "tests/support/check_backend.py", "--check", silent=False)
