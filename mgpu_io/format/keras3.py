"""Describe Keras 3's own files without Keras: a ``.keras`` archive and a ``.weights.h5`` file.

A ``.keras`` file is a zip archive of ``metadata.json`` (the Keras version), ``config.json`` (the model's config)
and ``model.weights.h5`` (the weights, as ``layers/<name>/vars/<i>`` datasets, and ``optimizer/vars``). A
``model.save_weights("x.weights.h5")`` file is that HDF5 file alone. Both are read here as data, with ``zipfile``,
``json`` and h5py: the archive is never unpacked to disk, the weights file inside it is read where it lies, and
only shapes are read, never the values (in a probe's child, as every other HDF5 read).
"""

import functools
import json
import zipfile
from pathlib import Path

from mgpu_io.errors import NotAModelFile, first_line
from mgpu_io.format.door import MAX_ARCHIVE_JSON, MAX_ARCHIVE_MEMBERS
from mgpu_io.format.read import MAX_CONFIG_DEPTH, MAX_OBJECTS, json_depth

KERAS_FILE, KERAS3_WEIGHTS_FILE = "keras", "keras3-weights"


def archive_config(path):
    """The decoded ``config.json`` of the ``.keras`` archive at ``path`` (bounded in size and depth).

    Raises:
        NotAModelFile: the archive holds no readable ``config.json``.

    Example:
        >>> import tempfile, pathlib, mgpu_io
        >>> out = pathlib.Path(tempfile.mkdtemp()) / "m.keras"
        >>> _ = mgpu_io.unwrap("fixtures/files/k224_siamese_x2_full.h5", out)
        >>> archive_config(out)["class_name"]
        'Functional'
    """
    return _archive_members(path)[0]


def archive_with_config(path, config, destination):
    """Write a copy of the ``.keras`` archive at ``path`` to ``destination``, with ``config`` as its ``config.json``.

    Every other member is copied as it is stored, streamed (never held in memory whole). For a ``.keras`` file whose
    Lambdas hold stored bytecode: its config, with them written by reference, is what Keras 3 then loads.

    Example:
        >>> import tempfile, pathlib, mgpu_io
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> _ = mgpu_io.unwrap("fixtures/files/k224_siamese_x2_full.h5", folder / "m.keras")
        >>> config = dict(archive_config(folder / "m.keras"), note="rewritten")
        >>> archive_with_config(folder / "m.keras", config, folder / "copy.keras")
        >>> archive_config(folder / "copy.keras")["note"]
        'rewritten'
    """
    import shutil

    with zipfile.ZipFile(path) as source, zipfile.ZipFile(destination, "w") as copy:
        for member in source.infolist()[:MAX_ARCHIVE_MEMBERS]:
            if member.filename == "config.json":
                copy.writestr(member, json.dumps(config))
                continue
            with source.open(member) as reading, copy.open(member, "w", force_zip64=True) as writing:
                shutil.copyfileobj(reading, writing, 1 << 20)


def _archive_members(path):
    try:
        with zipfile.ZipFile(path) as archive:
            members = {m.filename: m for m in archive.infolist()[:MAX_ARCHIVE_MEMBERS]}
            config = _member_json(path, archive, members.get("config.json"))
            metadata = _member_json(path, archive, members.get("metadata.json"), required=False) or {}
    except (OSError, zipfile.BadZipFile, RuntimeError, NotImplementedError, ValueError) as error:
        raise NotAModelFile(
            problem="The .keras archive is damaged",
            parameter="filepath",
            expected="a zip archive as Keras 3 writes it",
            received=f"filepath={path} ({type(error).__name__}: {first_line(error, default='')})",
            fix="Restore it from its source",
        ) from None
    return config, metadata, members


def _member_json(path, archive, member, required=True):
    if member is None:
        if not required:
            return None
        raise NotAModelFile(
            problem="The .keras archive holds no config.json",
            parameter="filepath",
            expected="the config.json, metadata.json and model.weights.h5 that Keras 3 writes",
            received=f"filepath={path}",
            fix="Restore it from its source",
        )
    if member.file_size > MAX_ARCHIVE_JSON:
        raise NotAModelFile(
            problem=f"The .keras archive's {member.filename} is too large",
            parameter="filepath",
            expected=f"at most {MAX_ARCHIVE_JSON >> 20} MiB",
            received=f"filepath={path} ({member.file_size} bytes)",
            fix="The file is damaged or hostile",
        )
    with archive.open(member) as handle:
        data = handle.read(MAX_ARCHIVE_JSON + 1)[: MAX_ARCHIVE_JSON + 1]
    try:
        value = json.loads(data.decode("utf8"))
    except (ValueError, RecursionError):
        raise NotAModelFile(
            problem=f"The .keras archive's {member.filename} is not valid JSON",
            parameter="filepath",
            expected="JSON as Keras 3 writes it",
            received=f"filepath={path}",
            fix="Restore it from its source",
        ) from None
    if json_depth(value) > MAX_CONFIG_DEPTH:
        raise NotAModelFile(
            problem=f"The .keras archive's {member.filename} is nested too deeply",
            parameter="filepath",
            expected=f"at most {MAX_CONFIG_DEPTH} levels",
            received=f"filepath={path}",
            fix="The file is damaged or hostile",
        )
    return value


def weight_shapes(h5, path):
    """``(layer weight shapes by layer, optimizer slot count)`` of an open Keras 3 weights file (read from ``path``):
    each dataset under ``layers/`` (its shape only), grouped by the top-level layer that owns it."""
    import h5py

    by_layer, seen = {}, 0
    layers = h5.get("layers")

    def visit(name, obj):
        nonlocal seen
        seen += 1
        if seen > MAX_OBJECTS:
            raise NotAModelFile(
                problem=f"The weights hold more than {MAX_OBJECTS} objects",
                parameter="filepath",
                expected="a Keras 3 weights file",
                received=f"filepath={path}",
                fix="The file is damaged or hostile",
            )
        if isinstance(obj, h5py.Dataset):
            by_layer.setdefault(name.split("/")[0], []).append(tuple(obj.shape))

    if isinstance(layers, h5py.Group):
        layers.visititems(visit)
    optimizer = h5.get("optimizer")
    slots = len(_datasets(optimizer)) if isinstance(optimizer, h5py.Group) else 0
    return by_layer, slots


def _datasets(group):
    import h5py

    found = []
    group.visititems(lambda name, obj: found.append(name) if isinstance(obj, h5py.Dataset) else None)
    return found


def _look_weights(path, member=None):
    """Shapes of a Keras 3 weights file, or of the ``member`` of the archive ``path``; run in a probe's child."""
    import h5py

    def read(source):
        with h5py.File(source, "r") as h5:
            return weight_shapes(h5, path)

    if member is None:
        return read(path)
    with zipfile.ZipFile(path) as archive, archive.open(member) as handle:
        if archive.getinfo(member).compress_type != zipfile.ZIP_STORED:
            import io

            info = archive.getinfo(member)
            if info.file_size > MAX_ARCHIVE_JSON * 16:
                return None
            return read(io.BytesIO(handle.read()))
        return read(handle)


def inspect_keras3(path, description):
    """An :class:`~mgpu_io.format.inspect.InspectReport` of a Keras 3 ``.keras`` archive or ``.weights.h5`` file.

    Example:
        >>> import tempfile, pathlib, mgpu_io
        >>> out = pathlib.Path(tempfile.mkdtemp()) / "m.keras"
        >>> _ = mgpu_io.unwrap("fixtures/files/k224_siamese_x2_full.h5", out)
        >>> report = mgpu_io.inspect(out)
        >>> report.file_type, report.is_wrapper, report.template, report.layer_count
        ('keras', False, 'siamese', 5)
    """
    from mgpu_io.format.config import input_names, model_layers, model_name, output_names
    from mgpu_io.format.door import KERAS_ARCHIVE
    from mgpu_io.format.inspect import Finding, InspectReport
    from mgpu_io.format.read import reading
    from mgpu_io.format.sandbox import probed

    path = Path(path)
    config = template = None
    inputs, outputs, lambdas, layer_count = [], None, [], 0
    version = None
    if description.kind == KERAS_ARCHIVE:
        config, metadata, members = _archive_members(path)
        version = metadata.get("keras_version") if isinstance(metadata, dict) else None
        member = next((name for name in members if name == "model.weights.h5"), None)
        with reading(path, "reading the archive's config"):
            template = model_name(config) if isinstance(config.get("config"), (dict, list)) else None
            inputs, outputs = input_names(config), output_names(config)
            layer_count = len(model_layers(config))
            lambdas = _lambdas(config, version if isinstance(version, str) else None)
        shapes = probed(path, functools.partial(_look_weights, path, member)) if member is not None else ({}, 0)
    else:
        shapes = probed(path, functools.partial(_look_weights, path))
        version = "3"
    by_layer, slots = shapes if shapes is not None else ({}, 0)
    if description.kind != KERAS_ARCHIVE:
        layer_count = len(by_layer)
    tensors = [shape for layer in by_layer.values() for shape in layer]
    how = (
        "load it with keras.models.load_model(path) or mgpu_io.load_model(path)"
        if description.kind == KERAS_ARCHIVE
        else "build the model in your code and call model.load_weights(path)"
    )
    findings = [Finding("keras3-format", f"Keras 3's own format: there is nothing to repair; {how}.")]
    if description.kind != KERAS_ARCHIVE:
        findings.append(
            Finding("weights-only", "A weights file has no graph: layer names and inputs come from your model code.")
        )
    return InspectReport(
        file=str(path),
        file_type=KERAS_FILE if description.kind == KERAS_ARCHIVE else KERAS3_WEIGHTS_FILE,
        is_wrapper=False,
        variant=None,
        replicas=None,
        depth=0,
        template=template,
        inputs=inputs,
        outputs=outputs,
        keras_version=version if isinstance(version, str) else None,
        backend=None,
        has_optimizer_weights=slots > 0,
        findings=findings,
        weights=len(tensors),
        lambdas=lambdas,
        layer_count=layer_count,
        parameters=sum(_size(shape) for shape in tensors),
    )


def _size(shape):
    size = 1
    for dim in shape:
        size *= dim
    return size


def _lambdas(config, keras_version=None):
    """The Lambda layers of a Keras 3 config, read as data (what each refers to; never run), and the source of
    each one's stored bytecode (Keras 3's ``__lambda__``), recovered in the decompiler's child."""
    from mgpu_io.lambdas.by_reference import template_lambdas
    from mgpu_io.lambdas.recovery import recover_lambdas

    return [lam.to_dict() for lam in recover_lambdas(template_lambdas(config), keras_version)]
