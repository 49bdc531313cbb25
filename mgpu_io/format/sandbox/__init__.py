"""Child processes, one mechanism: start one, limit it, tie it to its parent's life, time it, hand back its answer.

Every child mgpu-io starts is started by this package, one module per job:

- :mod:`.probe`: the sandbox itself. :func:`probed` runs work that reads a file in a forked child, under a time and a
  memory limit, so that a libhdf5 hang or crash on a damaged file is an error (:func:`~.probe.hang_error`,
  :func:`~.probe.crash_error`); where no child can be forked, or with ``MGPU_IO_PROBE=0``, the work runs here.
- :mod:`.inside`: what runs in the probe's child (or a folder's supervised worker, :func:`~.inside.supervise`), and
  what the work calls there: :func:`structure_read` once it has read what a plan reads (the limits end),
  :func:`relayed` for a ``progress`` callback that reaches the parent, :func:`hand_over` for weight arrays.
- :mod:`.shared`: what crosses back: the pipe's messages (a length and a pickle) and arrays in memory shared with the
  parent (a ``memfd``), so that the parent builds from them without opening the file again.
- :mod:`.fork_server`: a large process (one that has imported TensorFlow) forks its probes' children from a small
  Python process of its own, started once it has read a few files, instead of copying its page tables per file; the
  command line's ``inspect`` and ``unwrap`` of one file fork one as they start (:func:`start_early`), which imports
  the reader or the repair while the command line imports itself, and reads the file in a child of its own, as any
  probe does.
- :mod:`.programs`: a folder's supervised workers (:func:`~.programs.start_worker`) and other programs, the Lambda
  decompiler and recompiler (:func:`~.programs.run_program`: limits set between the fork and the exec).
- :mod:`.child`: what every child does first (:func:`~.child.become_child`): tied to its parent's life
  (``PR_SET_PDEATHSIG`` on Linux, a watch thread elsewhere), so that a ``kill -9`` of the command leaves no child
  behind; its parent's garbage left alone (:func:`~.child.parents_garbage_kept`), as TensorFlow's objects crash the
  process that frees them without TensorFlow's threads; its signals its own.

Limits are only ever lowered (:mod:`mgpu_io.format.limits`): a limit the user's environment set is never raised.

The package's own names are what work run in the sandbox needs: :func:`probed` to run it, and the three calls it
makes inside. The rest is imported from the module that does it (``from mgpu_io.format.sandbox.probe import
TIMEOUT``), where a test or a caller that changes a setting changes the one the module reads.
"""

from mgpu_io.format.sandbox.fork_server import start_early
from mgpu_io.format.sandbox.inside import by_name, hand_over, relayed, structure_read
from mgpu_io.format.sandbox.probe import probed

__all__ = ["by_name", "hand_over", "probed", "relayed", "start_early", "structure_read"]
