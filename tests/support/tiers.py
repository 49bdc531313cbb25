"""The test tiers, by path: which files `make check` runs (``core``) and the long families' markers.

The root conftest.py marks each collected test with the tiers of its file; tests/project/test_tiers.py checks the list.
"""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: Tier markers by path (a file, or a folder for everything under it), relative to the repository root.
TIERS = {
    "core": [
        "tests/formats/test_format_units.py",
        "tests/commands/test_cli.py",
        "tests/formats/test_inspect.py",
        "tests/safety/test_errors.py",
        "tests/unwrap/test_unwrap_behaviour.py",
        "tests/unwrap/test_batch.py",
        "tests/formats/test_h5attrs.py",
        "tests/safety/test_hostile_files.py",
        "tests/safety/test_fork_server.py",
        "tests/unwrap/test_interruptions.py",
        "tests/project/test_architecture.py",
        "tests/project/test_architecture_doc.py",
        "tests/project/test_tiers.py",
        "mgpu_io/format",
        "mgpu_io/cli",
        # the Lambda feature's format-floor modules (mgpu_io/lambdas/__init__.py's FLOORS; its Keras ones are not core)
        "mgpu_io/lambdas/__init__.py",
        "mgpu_io/lambdas/stored.py",
        "mgpu_io/lambdas/by_reference.py",
        "mgpu_io/lambdas/recovery.py",
        "mgpu_io/lambdas/writer_pythons.py",
        "mgpu_io/lambdas/source_module.py",
        "mgpu_io/lambdas/proof.py",
    ],
    "resume_rules": ["tests/checkpoints/test_resume_rules.py"],
    "layer_sweep": ["tests/load/test_layer_sweep.py"],
    "backends": ["tests/load/test_backends.py"],
    "legacy_stack": ["tests/checkpoints/test_checkpoint_stacks.py"],
    "packaging": ["tests/project/test_packaging.py"],
    "fuzz": ["tests/fuzz"],
}

MARKER_HELP = {
    "full_matrix": "a long matrix's members beyond its fixed sample: run by make test-all (and CI), left out of make test",
    "core": "the format core, the CLI, errors and the architecture, without Keras (make check)",
    "resume_rules": "every optimizer fixture resumed for its writer's steps, on TensorFlow and on JAX (long)",
    "layer_sweep": "every public layer class of every writer through load_model (long)",
    "backends": "every fixture on Keras 3's JAX backend, in .venv-jax (long)",
    "legacy_stack": "BaseModelCheckpoint on Keras 2.2.4 / Python 3.7 and under tf.distribute (long)",
    "packaging": "the wheel and a core-only install in a fresh environment (long)",
}


def tiers_of(relative):
    """The tier markers of a collected file, by its path relative to the repository root."""
    return [
        tier for tier, paths in TIERS.items() for path in paths if relative == path or relative.startswith(path + "/")
    ]


#: The long families, longest unit first: `make test` starts them in this order, before everything else. The resume
#: rules are one unit (a module, about 9 minutes on one core): started last, they would end the run alone.
LONG = ["resume_rules", "layer_sweep", "backends", "legacy_stack", "fuzz", "packaging"]


#: The marker of the long matrices' members that `make test` leaves to `make test-all` (and to CI, which runs
#: `make test-all`): each long matrix keeps a fixed sample in `make test`, chosen in its own file by the functions
#: below, so that every writer family, every optimizer rule and every export format still runs there.
FULL_MATRIX = "full_matrix"

#: The layer sweep's writers in `make test`: one of each family (Keras 1, Keras 2 multi-backend, tf.keras 1.x, tf.keras
#: 2.x, tf_keras); the other nine run in `make test-all`.
SWEEP_SAMPLE = ("k122", "k224", "tfk115", "tf24", "tfkeras")


def resume_sample(entries):
    """The optimizer fixtures that `make test` resumes: the first of each optimizer class (every rule), of each
    writer and of each model, by file name; the others run in `make test-all`."""
    chosen, seen = set(), set()
    for entry in sorted(entries, key=lambda e: e["file"]):
        for key in (("optimizer", entry["optimizer"]), ("writer", entry["writer"]), ("model", entry.get("model"))):
            if key not in seen:
                seen.add(key)
                chosen.add(entry["file"])
    return chosen


def diagonal_sample(cases, formats):
    """The ``(case, format)`` pairs that `make test` exports: each case once, the formats in turn, so that every case
    and every format runs; the other pairs run in `make test-all`."""
    return {(case, formats[i % len(formats)]) for i, case in enumerate(cases)}


if __name__ == "__main__":  # `python tests/support/tiers.py core`: a tier's paths, for the Makefile
    import sys

    print(" ".join(TIERS[sys.argv[1]]))
