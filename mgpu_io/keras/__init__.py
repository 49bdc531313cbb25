"""The Keras floor: everything that imports Keras (and, through it, a backend).

- :mod:`.load`: :func:`load_model`, the repaired template as a Keras 3 model;
- :mod:`.save`: the ``.keras`` output of :func:`mgpu_io.unwrap`;
- :mod:`.transfer`: weights into a model built by the user's code;
- :mod:`.verify`, :mod:`.batchnorm`: checks and repairs on loaded models;
- :mod:`._compat`: the only place that imports Keras' private ``keras.src`` modules.

Keras is imported inside functions, so importing these modules costs nothing until a model is touched.
``BaseModelCheckpoint`` and what an in-memory wrapper is import no Keras at all and run on Keras 2.2.4 too: they
are the floor :mod:`mgpu_io.anykeras`.
"""
