"""The format core: read, understand and write legacy Keras files with h5py, NumPy and the standard library only.

Nothing here imports TensorFlow, Keras, typer or rich (a test walks the imports), and nothing stored in a file is
ever decoded as code. The life of a file through :func:`mgpu_io.unwrap`:

- :mod:`.read` opens it once, read-only, and says what it holds (:class:`~.read.StoredModel`);
- :mod:`.detect` recognises wrapper levels by graph (:mod:`.wrapper_writers` names who wrote them);
- :mod:`.extract` and :mod:`.weights` find the template's weights, layer by layer;
- :mod:`.plan` decides everything (config rewrites and weight conversions from :mod:`.conversions`) in a
  :class:`~.plan.Plan`;
- :mod:`.write` writes the plan to a fresh file, atomically.

This package's ``__init__`` imports nothing, so that a light module (:mod:`.findings`) can be used from the
standard-library-only callback.
"""
