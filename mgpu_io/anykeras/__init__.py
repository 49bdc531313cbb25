"""The any-Keras floor: code that works on in-memory models of every Keras, from 2.2.4 on TensorFlow 1.15 to Keras 3,
without importing any (the standard library only, and Python 3.7 syntax; Keras and NumPy are used through the
model given).

- :mod:`.callbacks`: ``BaseModelCheckpoint``, which runs inside the old Keras' own training loop;
- :mod:`.wrapper`: what an in-memory wrapper is (its template, its replicas, its weights), shared by the callback
  and by :func:`mgpu_io.transfer_weights` and :func:`mgpu_io.load_model` on the Keras floor.
"""
