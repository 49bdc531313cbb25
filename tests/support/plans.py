"""A plan with its file still open, for tests and benchmarks that look at it or build from it in this process.

The library plans in a probe's child and hands the plan back as data (or writes there); a test that wants the
:class:`~mgpu_io.format.plan.Plan` itself, its HDF5 handles open, uses this: the file is first planned in a child
(a libhdf5 hang or crash becomes an error there), then opened and planned here.
"""

import contextlib
import functools
from pathlib import Path

from mgpu_io.format.plan import make_plan
from mgpu_io.format.read import open_stored, reading
from mgpu_io.format.sandbox import probed


@contextlib.contextmanager
def planned(source, *, output=None, **options):
    """Open ``source`` and yield its :class:`~mgpu_io.format.plan.Plan`, with the file still open."""
    probed(source, functools.partial(_plan_only, source, **options))
    with open_stored(Path(source)) as stored:
        with reading(stored.path, "planning the repair"):
            plan = make_plan(stored, output=output, **options)
        yield plan


def _plan_only(source, **options):
    """What the probe's child runs: make the plan of ``source`` and keep none of it."""
    with open_stored(Path(source)) as stored, reading(stored.path, "planning the repair"):
        make_plan(stored, **options)
