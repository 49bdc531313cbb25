"""Keras 3 on JAX without TensorFlow, as the tests run it: ``.venv-jax``'s interpreter (``make jax-env``) and the
environment of its processes (tests/load/test_backends.py, the JAX resume, export and layer sweep).

Those processes spend most of their time in XLA compiling each small model's functions. The tests compile with
XLA's CPU code generator at its lowest LLVM optimization (:data:`FAST_COMPILE`): the same programs, optimized less,
so compiled in less time. Measured on tests/support/check_backend.py (every full fixture on JAX, with the run's
compilation cache, one run each way): 85.1 against 70.8 CPU-seconds, the largest difference from the old Keras'
predictions 1.4e-5 with XLA's defaults and 8.3e-6 with these (bound 2e-5). ``nox -s keras`` runs the same check
(``--check``) with XLA's defaults, as a user's process has them, on each Keras 3 minor.
"""

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: Keras 3 on JAX, no TensorFlow (``make jax-env``): the tests that run a script there skip without it.
JAX_PYTHON = ROOT / ".venv-jax" / "bin" / "python"
#: XLA flags for the tests' JAX processes (the caller's own ``XLA_FLAGS`` follow them, and so win).
FAST_COMPILE = ("--xla_backend_optimization_level=0", "--xla_llvm_disable_expensive_passes=true")


def jax_environment(**values):
    """This process's environment for a Keras 3 on JAX process, on the CPU, plus ``values``.

    Example:
        >>> env = jax_environment(PYTHONPATH="/src")
        >>> env["KERAS_BACKEND"], env["JAX_PLATFORMS"], env["PYTHONPATH"]
        ('jax', 'cpu', '/src')
        >>> env["XLA_FLAGS"].split()[0]
        '--xla_backend_optimization_level=0'
    """
    env = dict(os.environ, KERAS_BACKEND="jax", JAX_PLATFORMS="cpu", **values)
    env["XLA_FLAGS"] = " ".join([*FAST_COMPILE, env.get("XLA_FLAGS", "")]).strip()
    return env
