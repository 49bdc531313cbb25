"""TF 2.0–2.3 SavedModel folders and TF-format weight checkpoints of multi-GPU wrappers, read as data.

tf.keras 2.x can save a wrapper as a SavedModel folder (``model.save(dir, save_format="tf")``) or its weights as a
TF-format checkpoint (``model.save_weights("x_ckpt")``) instead of HDF5. :func:`mgpu_io.tf.convert.to_legacy_h5`
rewrites either one as the legacy Keras HDF5 file the same ``model.save("x.h5")`` / ``save_weights("x.h5")`` would
have written, which the rest of mgpu-io (``inspect``, ``unwrap``, ``load_model``) reads as it reads every other
wrapper file.

Nothing stored is ever run: the protocol buffers are parsed, the variable values are read with TensorFlow's
``CheckpointReader``, and neither ``tf.saved_model.load`` nor any ``load_model`` is called (docs/tf2-writers.md
§4–5 describe what is read). The package's two entries never import each other: :mod:`mgpu_io.tf.recognise`, what the
door asks (the standard library only), and :mod:`mgpu_io.tf.convert`, the rewrite (TensorFlow, inside functions),
which reads the legacy copy back through the door.
"""
