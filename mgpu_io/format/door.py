"""One door for every input: what a path is, decided once, by its content (h5py and the standard library only).

Every entry point (``inspect``, ``unwrap``, ``load_model``, ``transfer_weights``, ``verify``, the command line) asks
:func:`describe` what its input is and gets one frozen :class:`Description`: its kind, the writer where the file
records it, what it holds and what reading it needs. An entry point that does not handle a kind raises
:func:`refusal`'s one-line error, which names the command or call that does.

Kinds are told apart by content, never by the name alone: an architecture file without an extension is JSON when
its bytes are; an HDF5 file is a legacy full model (``model_config``), legacy weights (``layer_names``), a Keras 3
``save_weights`` file (``layers``/``vars`` groups) or a failed-save stub (root attributes only); a zip archive
holding ``config.json`` and ``metadata.json`` is Keras 3's ``.keras`` format. The HDF5 look runs in a probe's child
(:mod:`.probe`), so a file that hangs libhdf5 is an error, never a hang.

Example:
    >>> describe("fixtures/files/k224_functional_bn_x2_full.h5").kind
    'legacy-model'
    >>> d = describe("fixtures/files/k224_siamese_x2_config.json")
    >>> d.kind, d.holds, d.needs
    ('json-config', ('architecture',), ('weights',))
"""

import contextlib
import functools
import json
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from mgpu_io.errors import InvalidArgument, NotAModelFile, Param, first_line

# The vocabulary lives in kinds.py (one table); the door re-exports it, so that ``door.LEGACY_MODEL`` reads as before.
from mgpu_io.format.kinds import (  # noqa: F401 - the door's vocabulary, re-exported
    CONFIG_KINDS,
    FOLDER,
    HDF5,
    JSON_CONFIG,
    KERAS3_KINDS,
    KERAS3_WEIGHTS,
    KERAS_ARCHIVE,
    KIND_NAMES,
    KINDS,
    LEGACY_KINDS,
    LEGACY_MODEL,
    LEGACY_WEIGHTS,
    MISSING,
    SAVEDMODEL,
    STUB,
    TENSORFLOW_KINDS,
    TF_CHECKPOINT,
    UNKNOWN,
    WEIGHTS_ONLY_KINDS,
    YAML_CONFIG,
    ZIP,
    hdf5_kind,
    is_url,
)

#: Suffixes and what they are read and written as.
HDF5_SUFFIXES, KERAS_SUFFIX, JSON_SUFFIX, YAML_SUFFIXES = (".h5", ".hdf5"), ".keras", ".json", (".yaml", ".yml")
_HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
_ZIP_SIGNATURES = (b"PK\x03\x04", b"PK\x05\x06")
_YAML_START = re.compile(rb"\A\s*(backend|class_name|config|keras_version)\s*:")
#: Largest member of a ``.keras`` archive read as JSON (``config.json``, ``metadata.json``).
MAX_ARCHIVE_JSON = 64 << 20
#: Most members of a ``.keras`` archive listed (Keras writes three, and one per asset).
MAX_ARCHIVE_MEMBERS = 100_000


@dataclass(frozen=True)
class Description:
    """What one input path is: ``kind`` (one of :data:`KIND_NAMES`), ``writer`` where recorded (``"Keras 2.2.4"``),
    ``holds`` (``"architecture"``, ``"weights"``, ``"training config"``, ``"optimizer state"``) and ``needs``: what
    reading it takes besides mgpu-io (``"weights"`` or ``"architecture"`` saved beside it, ``"Keras"``,
    ``"TensorFlow"``). ``detail`` says what was seen, for an unknown file."""

    path: str
    kind: str
    writer: Optional[str] = None
    holds: tuple = ()
    needs: tuple = ()
    detail: str = ""

    @property
    def name(self):
        """The kind as a user names it."""
        return KIND_NAMES[self.kind]

    def to_dict(self):
        return {
            "path": self.path,
            "kind": self.kind,
            "writer": self.writer,
            "holds": list(self.holds),
            "needs": list(self.needs),
            "detail": self.detail,
        }


def describe(path) -> Description:
    """Say what ``path`` is, by its content; reads at most a few attributes and the head of the file.

    Never raises for a path that is readable or absent: a missing, unreadable or foreign path is described as
    :data:`MISSING` or :data:`UNKNOWN` (with ``detail``), for the caller to refuse in its own terms.

    Example:
        >>> describe("fixtures/tf2/tf22_functional_bn_x2_savedmodel").needs
        ('TensorFlow',)
        >>> describe("fixtures/files").kind, describe("no/such/file.h5").kind
        ('folder', 'missing')
    """
    path = Path(path)
    text = str(path)
    try:
        kind, head, size = content(path)
    except OSError as error:
        return Description(text, UNKNOWN, detail=f"unreadable: {error.strerror or error}")
    if kind == SAVEDMODEL:
        return Description(text, SAVEDMODEL, "TensorFlow 2.x (tf.keras)", ("architecture", "weights"), ("TensorFlow",))
    if kind == TF_CHECKPOINT:
        return Description(
            text, TF_CHECKPOINT, "TensorFlow 2.x (tf.keras)", ("weights",), ("architecture", "TensorFlow")
        )
    if kind == HDF5:
        return _describe_hdf5(path)
    if kind == ZIP:
        return _describe_zip(path)
    if kind == JSON_CONFIG:
        return _describe_json(path, head)
    if kind == YAML_CONFIG:
        return Description(text, YAML_CONFIG, _json_writer(_yaml_head(head)), ("architecture",), ("weights",))
    if kind == UNKNOWN and head is not None:
        what = "an empty file" if size == 0 else ("binary data" if b"\0" in head else "text that is no Keras format")
        return Description(text, UNKNOWN, detail=f"{what}, {size} bytes")
    return Description(text, kind, detail="not a regular file" if kind == UNKNOWN else "")


def sniff(path):
    """The kind of ``path`` from its first bytes alone (no libhdf5, no zip reading): :data:`SAVEDMODEL`,
    :data:`TF_CHECKPOINT`, :data:`FOLDER`, :data:`MISSING`, :data:`~mgpu_io.format.kinds.HDF5`,
    :data:`~mgpu_io.format.kinds.ZIP`, :data:`JSON_CONFIG`, :data:`YAML_CONFIG` or :data:`UNKNOWN`. For listing many
    files cheaply, and for what a caller must know before it starts (TensorFlow, a folder's progress bar);
    :func:`describe` says more.

    Example:
        >>> sniff("fixtures/files/k224_siamese_x2_full.h5"), sniff("fixtures/files/manifest.json")
        ('hdf5', 'json-config')
    """
    try:
        return content(Path(path))[0]
    except OSError:
        return UNKNOWN


def may_hold_a_model(path):
    """Whether a folder's file may hold a legacy Keras model, from its first bytes: HDF5 (also after a user block),
    or JSON that reads as a model config (double-encoded too), whatever its name. The folder engines list their
    files by it (:func:`mgpu_io.format.batch.model_files`); a training history or other JSON is not theirs.

    Example:
        >>> may_hold_a_model("fixtures/files/k224_siamese_x2_full.h5"), may_hold_a_model("fixtures/files/manifest.json")
        (True, False)
    """
    try:
        kind, head, _ = content(Path(path))
    except OSError:
        return False
    return kind == HDF5 or (kind == JSON_CONFIG and _describe_json(path, head).kind == JSON_CONFIG)


def glance(path) -> Description:
    """:func:`sniff`'s answer as a :class:`Description` (its kind only): for a second input (``weights=``) whose
    TensorFlow kind must be known before it is read, without a probe.

    Example:
        >>> glance("fixtures/tf2/tf22_functional_bn_x2_ckpt").kind
        'tf-checkpoint'
    """
    return Description(str(path), sniff(path))


def content(path):
    """``(kind, head, size)`` of ``path`` from its first bytes (``head``: up to 4 KiB, ``None`` for what is no
    regular file): the one rule that tells the kinds apart before anything is parsed. Raises ``OSError`` for a file
    that cannot be read."""
    tensorflow = _tensorflow_kind(path)
    if tensorflow is not None:
        return tensorflow, None, None
    if path.is_dir():
        return FOLDER, None, None
    if not path.is_file():
        return (MISSING if not path.exists() else UNKNOWN), None, None
    size = path.stat().st_size
    with open(path, "rb") as handle:
        head = handle.read(_HEAD)
        if head.startswith(_HDF5_SIGNATURE) or _hdf5_later(handle, size):
            return HDF5, head, size
    if head.startswith(_ZIP_SIGNATURES):
        return ZIP, head, size
    if path.suffix.lower() in YAML_SUFFIXES:
        return YAML_CONFIG, head, size
    if head.lstrip().startswith((b"{", b"[", b'"')):  # '"': json.dump(model.to_json(), f), JSON inside a string
        return JSON_CONFIG, head, size
    if _YAML_START.match(head):
        return YAML_CONFIG, head, size
    return UNKNOWN, head, size


def _hdf5_later(handle, size):
    """An HDF5 signature after a user block (:func:`sniffed_ranges`' later ranges, as libhdf5 looks for it)."""
    for offset, length in sniffed_ranges(size)[1:]:
        handle.seek(offset)
        if handle.read(length) == _HDF5_SIGNATURE:
            return True
    return False


#: The bytes of a file :func:`content` reads first.
_HEAD = 4096


def sniffed_ranges(size, head=b""):
    """The ``(offset, length)`` ranges :func:`content` reads of a regular file of ``size`` bytes to tell its kind:
    its head, then each place an HDF5 signature may follow a user block (byte 512, 1024, 2048, ...), which it reads
    only where the ``head``, once read, is not HDF5 already. What a reader of remote objects fetches so that the door
    can answer from a sparse local stand-in (:mod:`mgpu_io.remote`).

    Example:
        >>> sniffed_ranges(3000)
        [(0, 3000), (512, 8), (1024, 8), (2048, 8)]
        >>> sniffed_ranges(3000, head=b"\\x89HDF\\r\\n\\x1a\\n")
        [(0, 3000)]
    """
    ranges, offset = [(0, min(size, _HEAD))], 512
    while not head.startswith(_HDF5_SIGNATURE) and offset + len(_HDF5_SIGNATURE) <= size:
        ranges.append((offset, len(_HDF5_SIGNATURE)))
        offset *= 2
    return ranges


def _tensorflow_kind(path):
    """:data:`SAVEDMODEL`, :data:`TF_CHECKPOINT` or ``None``, from the standard library alone (no HDF5 read):
    :func:`mgpu_io.tf.recognise.tf_format` reads a checkpoint's index table, which only tf/ knows."""
    from mgpu_io.tf.recognise import tf_format  # the standard library only

    return tf_format(path)


def describe_then(path, then, *, progress=None):
    """:func:`describe` ``path``, and run ``then(description)`` in the same sandbox: for an HDF5 file, in the probe's
    child that looked at it (:mod:`.probe`), so that the file is read in one child, not one to describe it and
    another to plan it. Returns ``(description, outcome)``: ``outcome`` is ``(then's value,)`` (it must pickle), or
    ``None`` for a path that is no HDF5 file (then nothing was run: the caller goes on with the description); what
    ``then`` raises is raised here. ``progress`` receives what the child's :func:`~mgpu_io.format.sandbox.relayed`
    callbacks send.

    Example:
        >>> d, outcome = describe_then("fixtures/files/k224_siamese_x2_full.h5", lambda d: d.holds)
        >>> d.kind, outcome
        ('legacy-model', (('architecture', 'weights', 'training config', 'optimizer state'),))
    """
    path = Path(path)
    if sniff(path) != HDF5:
        return describe(path), None
    return _describe_hdf5(path, then, progress)


def _describe_hdf5(path, then=None, progress=None):
    from mgpu_io.format.sandbox import probed
    from mgpu_io.format.sandbox.fork_server import started_early

    if not started_early():  # else the command line's fork server has imported them, and its children read
        import h5py  # noqa: F401 - imported here, once, not in each probe's child (a third of a second there)

        from mgpu_io.format import string_attrs  # noqa: F401 - the same

    return probed(path, functools.partial(_look_then, path, then), progress=progress)  # a hang or a crash: its error


def _look_then(path, then):
    """In the probe's child: the description of HDF5 file ``path``, or ``(description, (then(description),))``."""
    import h5py

    try:
        h5 = h5py.File(path, "r")
    except (OSError, RuntimeError) as error:
        reason = f"a damaged HDF5 file ({first_line(error, default='unreadable')})"
        h5, description = None, _hdf5_description(path, UNKNOWN, None, (), reason)
    try:
        if h5 is not None:
            description = _hdf5_description(path, *_hdf5_look(h5))
        if then is None:
            return description
        if h5 is None:
            return description, (then(description),)
        with sharing(path, h5):  # the work reads the file through the handle the look opened
            return description, (then(description),)
    finally:
        if h5 is not None:
            h5.close()


#: Files that are open already, by path: :func:`mgpu_io.format.read.open_stored` reads them through the same handle
#: (see :func:`sharing`). Only ever filled inside one child, for the work it runs on the file it opened.
_shared: dict = {}


@contextlib.contextmanager
def sharing(path, h5):
    """While inside, :func:`~mgpu_io.format.read.open_stored` of ``path`` reads the open ``h5`` instead of opening
    the file again (and leaves it open): the door's child hands the file it looked at to the work it runs next
    (:func:`describe_then`)."""
    _shared[str(path)] = h5
    try:
        yield
    finally:
        _shared.pop(str(path), None)


def opened(path):
    """The open HDF5 handle :func:`sharing` holds for ``path``, or ``None``."""
    return _shared.get(str(path))


def _hdf5_description(path, kind, writer, holds, detail):
    needs = {
        LEGACY_WEIGHTS: ("architecture",),
        KERAS3_WEIGHTS: ("architecture", "Keras"),
    }.get(kind, ())
    return Description(str(path), kind, writer, holds, needs, detail)


def _hdf5_look(h5):
    """``(kind, writer, holds, detail)`` of an open HDF5 file, from its root attributes' and groups' names."""
    from mgpu_io.format.string_attrs import read_str

    try:
        attrs, keys = set(h5.attrs.keys()), set(h5.keys())
        kind = hdf5_kind(attrs, keys)
        version = read_str(h5.attrs, "keras_version") if "keras_version" in attrs else None
        if kind == LEGACY_MODEL:
            holds = ["architecture", "weights"]
            if "training_config" in attrs:
                holds.append("training config")
            if "optimizer_weights" in keys:
                holds.append("optimizer state")
            if version is None and "model_weights" in keys:
                version = read_str(h5["model_weights"].attrs, "keras_version")
            return kind, _keras(version), tuple(holds), ""
        if kind == LEGACY_WEIGHTS:
            return kind, _keras(version), ("weights",), ""
        if kind == KERAS3_WEIGHTS:
            holds = ("weights",) + (("optimizer state",) if "optimizer" in keys else ())
            return kind, "Keras 3", holds, ""
        if kind == STUB:
            return kind, _keras(version), (), ""
        return UNKNOWN, None, (), "an HDF5 file that holds no Keras model"
    except (OSError, RuntimeError, KeyError, TypeError, ValueError, AttributeError) as error:
        return UNKNOWN, None, (), f"a damaged HDF5 file ({type(error).__name__})"


def _keras(version):
    return f"Keras {version}" if version else None


def _describe_zip(path):
    text = str(path)
    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()[:MAX_ARCHIVE_MEMBERS]
            names = {member.filename: member for member in members}
            if "config.json" not in names:
                return Description(text, UNKNOWN, detail="a zip archive without config.json (no .keras file)")
            metadata = _archive_json(archive, names.get("metadata.json")) or {}
    except (OSError, zipfile.BadZipFile, ValueError, RuntimeError, NotImplementedError) as error:
        return Description(text, UNKNOWN, detail=f"a damaged zip archive ({type(error).__name__})")
    version = metadata.get("keras_version") if isinstance(metadata, dict) else None
    holds = ["architecture"]
    if any(name.startswith("model.weights.") for name in names):
        holds.append("weights")
    return Description(
        text, KERAS_ARCHIVE, _keras(version if isinstance(version, str) else None), tuple(holds), ("Keras",)
    )


def _archive_json(archive, member):
    """A JSON member of a zip archive, decoded; ``None`` when absent or too large."""
    if member is None or member.file_size > MAX_ARCHIVE_JSON:
        return None
    with archive.open(member) as handle:
        data = handle.read(MAX_ARCHIVE_JSON + 1)
    if len(data) > MAX_ARCHIVE_JSON:
        return None
    try:
        return json.loads(data.decode("utf8"))
    except (ValueError, RecursionError):
        return None


def _describe_json(path, head):
    text = head.decode("utf8", "replace")
    if text.lstrip().startswith('"'):  # json.dump(model.to_json(), f): the JSON inside a JSON string
        text = text.replace('\\"', '"')
    if '"class_name"' in text and '"config"' in text:
        return Description(str(path), JSON_CONFIG, _json_writer(text), ("architecture",), ("weights",))
    return Description(str(path), UNKNOWN, detail="JSON that is no Keras model config")


def _json_writer(text):
    found = re.search(r'"?keras_version"?\s*:\s*"?([0-9][0-9A-Za-z.\-+]*)', text)
    return _keras(found.group(1)) if found else None


def _yaml_head(head):
    return head.decode("utf8", "replace")


# --- refusals ---------------------------------------------------------------------------------------------------

#: For each kind, what handles it: the call, and the command where one exists.
HANDLED_BY = {kind: entry.handled_by for kind, entry in KINDS.items() if entry.handled_by}


def refusal(description, call, expected="a legacy Keras file or a model config", error=InvalidArgument):
    """The one-line error of ``call`` (``"load_model"``, ``"unwrap"``, ...) refusing ``description``'s kind, naming
    what handles it.

    Example:
        >>> print(refusal(describe("fixtures/files"), "load_model", "a model file"))
        load_model does not read a folder of files. Expected a model file. Received: filepath=fixtures/files. A folder is repaired file by file with mgpu_io.unwrap(folder, output_folder) (`mgpu-io unwrap DIR OUT`).
    """
    if description.kind in (MISSING, UNKNOWN):
        return not_a_model_file(description)
    handled = HANDLED_BY[description.kind]
    what = description.name
    return error(
        problem=f"{call} does not read {what}",
        expected=expected,
        received=f"filepath={description.path}",
        fix=f"{handled[0].upper()}{handled[1:]}",
        kind=description.kind,
    )


#: Deployable outputs, written by Keras 3's own exporters (:mod:`mgpu_io.keras.exports`, one module per name): each
#: format's name and its output's suffix (``""``: a folder, named by ``format=``). A new one is a line here and a
#: module there.
EXPORT_FORMATS = {"onnx": ".onnx", "litert": ".tflite", "saved_model": ""}


def export_format(output, format=None):
    """The deployable format that ``output``'s name (or ``format``) asks for, else ``None``.

    Example:
        >>> export_format("model.onnx"), export_format("serving/1", format="saved_model"), export_format("m.h5")
        ('onnx', 'saved_model', None)
    """
    if format is not None:
        if format not in EXPORT_FORMATS:
            raise InvalidArgument(
                problem="Unknown output format",
                parameter="format",
                expected=f"one of {sorted(EXPORT_FORMATS)} (or none: the output's name says it)",
                received=Param("format", format),
                fix="Pass a format named here, or name the output .h5, .keras, .onnx or .tflite",
            )
        suffix, named = EXPORT_FORMATS[format], Path(output).suffix.lower()
        others = {*EXPORT_FORMATS.values(), *HDF5_SUFFIXES, KERAS_SUFFIX, JSON_SUFFIX} - {"", suffix}
        if (suffix and named != suffix) or (not suffix and named in others):
            raise InvalidArgument(
                problem=("The output's name and ", Param("format"), " disagree"),
                parameter="format",
                expected=(
                    f"an output {f'ending in {suffix}' if suffix else 'folder named without a file extension'} with ",
                    Param("format", format),
                ),
                received=f"output={output}",
                fix=("Rename the output, or leave out ", Param("format")),
            )
        return format
    suffix = Path(output).suffix.lower()
    return next((name for name, known in EXPORT_FORMATS.items() if known and known == suffix), None)


def output_format(description, output, *, config=None, format=None):
    """``"keras"`` (Keras 3's ``.keras``), ``"same"`` (a legacy file of the input's kind) or a deployable format of
    :data:`EXPORT_FORMATS` (``.onnx``, ``.tflite``, a SavedModel folder with ``format="saved_model"``), chosen by the
    output's name; an extension that names no writer, or one that cannot hold what the input holds, is refused before
    anything is read or written, with the extensions that would work.

    Example:
        >>> output_format(describe("fixtures/files/k224_siamese_x2_full.h5"), "clean.keras")
        'keras'
        >>> output_format(describe("fixtures/files/k224_siamese_x2_full.h5"), "clean.json")
        Traceback (most recent call last):
        ...
        mgpu_io.errors.InvalidArgument: A .json output holds a model config only, and the input's weights would be lost. Expected an output ending in .h5, .hdf5 or .keras for a legacy Keras full-model HDF5 file. Received: output=clean.json. Name the output .h5, .hdf5 or .keras.
    """
    kind, suffix = description.kind, Path(output).suffix.lower()
    exported = export_format(output, format)
    if kind not in LEGACY_KINDS + TENSORFLOW_KINDS:
        return exported or ("keras" if suffix == KERAS_SUFFIX else "same")  # the reading refuses it first
    is_config = kind in CONFIG_KINDS
    whole = not is_config and not (kind in WEIGHTS_ONLY_KINDS and config is None)  # architecture and weights
    if exported is not None:
        if whole:
            return exported
        raise _no_whole_model(description, output, exported)
    if suffix == KERAS_SUFFIX and whole:
        return "keras"
    if (suffix in HDF5_SUFFIXES and not is_config) or (suffix == JSON_SUFFIX and is_config):
        return "same"
    raise _no_writer_for(description, output, suffix, is_config, whole)


def _no_whole_model(description, output, exported):
    """The refusal of a deployable output for a config, or a weights-only file without its architecture."""
    is_config = description.kind in CONFIG_KINDS
    what = "a config holds no weights" if is_config else "a weights-only file holds no architecture"
    fix = (
        "Pass the weights too: mgpu_io.unwrap(weights, output, config=this config)"
        if is_config
        else ("Pass ", Param("config"), " (the JSON saved beside the weights)")
    )
    return InvalidArgument(
        problem=f"A {exported} output holds a whole model, and {what}",
        parameter="output",
        expected=("a full model, or weights with ", Param("config"), f", for a {exported} output"),
        received=f"output={output} from {description.name}",
        fix=fix,
        kind=description.kind,
    )


def _no_writer_for(description, output, suffix, is_config, whole):
    """The refusal of an output whose name says no format, or one that cannot hold what the input holds, with the
    extensions that would work."""
    kind = description.kind
    if is_config:
        works = (".json",)
    elif not whole:
        works = (".h5 or .hdf5", " (or .keras with ", Param("config"), ", the architecture saved beside the weights)")
    else:
        works = (".h5, .hdf5 or .keras",)
    if suffix in YAML_SUFFIXES and is_config:
        return InvalidArgument(
            problem="A repaired config is written as JSON: Keras 3 and TF >= 2.6 read no YAML",
            parameter="output",
            expected="an output ending in .json",
            received=f"output={output}",
            fix="Name the output .json and load it with keras.models.model_from_json",
            kind=kind,
        )
    why, fix = _why_not(suffix, is_config, works)
    return InvalidArgument(
        problem=why,
        parameter="output",
        expected=("an output ending in ", *works, f" for {description.name}"),
        received=f"output={output}",
        fix=fix,
        kind=kind,
    )


def _why_not(suffix, is_config, works):
    """``(problem, fix)`` of an output named ``suffix`` that cannot hold the input (``works``: the extensions that
    would)."""
    if suffix == KERAS_SUFFIX and is_config:
        return (
            "A .keras file holds a whole model, and a config holds no weights",
            "Name the output .json, or pass the weights too: mgpu_io.load_model(config, weights=...).save('x.keras')",
        )
    if suffix == KERAS_SUFFIX:
        fix = (
            "Pass ",
            Param("config"),
            " (the JSON saved beside the weights), or name the output .h5 for the weights alone",
        )
        return "A .keras file holds a whole model, and a weights-only file holds no architecture", fix
    if suffix in HDF5_SUFFIXES:
        return f"A {suffix} output of a config would hold no weights", "Name the output .json"
    if suffix in (JSON_SUFFIX, *YAML_SUFFIXES):
        return (
            f"A {suffix} output holds a model config only, and the input's weights would be lost",
            f"Name the output {works[0]}",
        )
    fix = (
        "Name the output by the format to write (or a deployable one: .onnx, .tflite, or ",
        Param("format", "saved_model"),
        ")",
    )
    return f"The output's name says no format ({suffix or 'no extension'})", fix


def not_a_model_file(description):
    """The :class:`NotAModelFile` for a missing or unknown path."""
    if description.kind == MISSING:
        return NotAModelFile(
            problem="Cannot read the input: nothing is there",
            expected="a Keras file (.h5, .keras, JSON or YAML config), a SavedModel folder or a TF checkpoint",
            received=f"filepath={description.path}",
            fix="Check the path",
            kind=MISSING,
        )
    return NotAModelFile(
        problem="The input is no Keras format mgpu-io knows",
        expected="a Keras .h5 file (model or weights), a .keras archive, a .weights.h5 file, a JSON or YAML config, "
        "a SavedModel folder or a TF checkpoint",
        received=f"filepath={description.path} ({description.detail or 'unrecognized content'})",
        fix="Check the path; `mgpu-io inspect` says what each kind of file is",
        kind=description.kind,
    )
