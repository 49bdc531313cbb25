"""The template's Lambda layers, read as data: what each one is, without ever unmarshalling or running its code.

Keras 1 and 2 stored a ``Lambda``'s function as CPython bytecode (``marshal.dumps(fn.__code__)``, base64 since
Keras 2.1.2, raw_unicode_escape before; legacy-format.md §6). That payload is only ever *read as bytes* here: it is
decoded (base64 or latin-1) and scanned for the length-prefixed printable strings that marshal writes for text, the
way ``strings`` reads a binary. From them come the function's name, the source file the writer recorded and the
names its code mentions, so a user can find their own code. No code object is ever built: the ``marshal`` module is
not imported in this package (a test checks), and nothing the payload says is executed or imported.

A repair writes each such Lambda *by reference* (:func:`reference`): its function becomes a name (the layer's own
name, or ``mgpu_io>...`` for a function Keras itself wrote, see :mod:`mgpu_io.lambdas.by_reference`), which
Keras 3 resolves from ``custom_objects`` with its safe mode on, and the bytecode does not reach the output.
"""

import binascii
import re
from dataclasses import asdict, dataclass, field
from typing import Optional

from mgpu_io.format.config import inbound_nodes, layer_name, walk_layers
from mgpu_io.format.text import summarize

#: Payloads larger than this are not scanned (Keras' own Lambdas are a few hundred bytes).
SCAN_LIMIT = 1 << 20
#: Names of code objects that are not a function's own name.
_CODE_NAMES = {"<lambda>", "<listcomp>", "<dictcomp>", "<setcomp>", "<genexpr>", "<module>"}
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
#: A qualified name (``make_scaler.<locals>.<lambda>``): identifiers and ``<...>`` names joined by dots.
_QUALNAME = re.compile(r"(?:<\w+>|[A-Za-z_]\w*)(?:\.(?:<\w+>|[A-Za-z_]\w*))+\Z")
# marshal's type codes for text (Python 2 and 3): 4-byte lengths, then 1-byte lengths; 0x80 is marshal's ref flag.
_LONG_TEXT, _SHORT_TEXT, _BYTES = set(b"atAuR"), set(b"zZ"), ord("s")


@dataclass
class CodeStrings:
    """What a strings-style scan of one stored function finds (every field may be missing or partial)."""

    function_name: Optional[str] = None
    source_file: Optional[str] = None
    names: list[str] = field(default_factory=list)
    size: int = 0
    scanned: bool = False


def decode_payload(code):
    """The bytes of a stored code string: base64 (Keras >= 2.1.2) or raw_unicode_escape text (older), as Keras'
    own ``func_load`` decodes them; ``None`` when ``code`` is not a string."""
    if not isinstance(code, str):
        return None
    try:
        return binascii.a2b_base64(code.encode("ascii"))
    except (UnicodeEncodeError, binascii.Error, ValueError):
        return code.encode("raw_unicode_escape")


def text_records(data):
    """The printable texts that marshal wrote as length-prefixed strings in ``data``, in order.

    A type byte (``z``/``Z`` with a 1-byte length; ``a``/``A``/``u``/``t`` with a 4-byte little-endian length), then
    exactly that many printable characters (ASCII; UTF-8 for ``u``). ``s`` records (bytes: the bytecode itself, line tables) are stepped over.

    Example:
        >>> text_records(b"\\xe3\\x00s\\x02\\x00\\x00\\x00d\\x01\\xda\\x01x\\xfa\\x04a.py\\xda\\x08<lambda>")
        ['x', 'a.py', '<lambda>']
    """
    found, i, end = [], 0, len(data)
    while i < end:
        code = data[i] & 0x7F
        if code in _SHORT_TEXT and i + 1 < end:
            start, length = i + 2, data[i + 1]
        elif (code in _LONG_TEXT or code == _BYTES) and i + 4 < end:
            start, length = i + 5, int.from_bytes(data[i + 1 : i + 5], "little")
        else:
            i += 1
            continue
        chunk = data[start : start + length]
        if 0 < length == len(chunk):
            if code == _BYTES:
                i = start + length
                continue
            try:  # marshal's `u` is UTF-8; its other text types are ASCII
                text = chunk.decode("utf-8" if code == ord("u") else "ascii")
            except UnicodeDecodeError:
                text = ""
            if text and text.isprintable():
                found.append(text)
                i = start + length
                continue
        i += 1
    return found


def scan_code(code):
    """Read one stored function (its code string) as data: see :class:`CodeStrings`.

    Example:
        >>> payload = binascii.b2a_base64(b"\\xe3\\xda\\x01x\\xda\\x05scale\\xfa\\x0f/src/helpers.py\\xda\\x08<lambda>")
        >>> scan = scan_code(payload.decode())
        >>> scan.function_name, scan.source_file, scan.names
        ('<lambda>', '/src/helpers.py', ['x', 'scale'])
    """
    data = decode_payload(code)
    if data is None:
        return CodeStrings()
    if len(data) > SCAN_LIMIT:
        return CodeStrings(size=len(data))
    texts = text_records(data)
    files = [i for i, text in enumerate(texts) if _is_file_name(text)]
    scan = CodeStrings(size=len(data), scanned=True)
    if files:
        scan.source_file = texts[files[-1]]
        after = [t for t in texts[files[-1] + 1 :] if t in _CODE_NAMES or _IDENTIFIER.match(t)]
        scan.function_name = after[0] if after else None
        before = texts[: files[0]]
    else:
        before = texts
    own = {scan.function_name}
    scan.names = list(dict.fromkeys(t for t in before if _IDENTIFIER.match(t) and t not in own))
    return scan


def _is_file_name(text):
    if text in _CODE_NAMES or _QUALNAME.match(text):  # Python 3.11+ marshals a qualified name after the file's
        return False
    return (
        text.endswith((".py", ".pyc")) or "/" in text or "\\" in text or (text.startswith("<") and text.endswith(">"))
    )


@dataclass
class LambdaLayer:
    """One ``Lambda`` layer of a template config, as the file stores it (nothing in it has run).

    Attributes:
        layer: the layer's name.
        function_type: the writer's ``function_type`` (``"lambda"``: stored bytecode; ``"function"``: a name).
        module: the ``module`` tf.keras recorded (``fn.__module__``); standalone Keras recorded none.
        arguments: the keyword arguments the function is called with.
        output_shape: a shape, ``None``, or ``"function"`` where an output-shape function is stored as bytecode.
        inbound: the layers feeding it, in order.
        code: the strings scan of the stored function, where it is bytecode.
        reference: the name the function is referred to by (after a repair, or where the writer stored a name).
        known: the name of the function Keras itself wrote (see ``lambdas/by_reference.py``), if recognised.
        recovered: the function's source recovered from its bytecode, as data (:mod:`mgpu_io.lambdas.recovery`;
            only where asked for: ``inspect``, ``mgpu-io lambdas``, a trusted load), or why not (``error``).
        payload, defaults, closure: the stored code string, default values and closure values (Keras' three).
        output_shape_payload: the stored code string of an output-shape function.
    """

    layer: str
    function_type: Optional[str]
    module: Optional[str]
    arguments: Optional[dict]
    output_shape: object
    inbound: list[str]
    code: Optional[CodeStrings] = None
    reference: Optional[str] = None
    known: Optional[str] = None
    recovered: Optional[dict] = None
    payload: Optional[str] = field(default=None, repr=False)
    defaults: Optional[list] = field(default=None, repr=False)
    closure: Optional[list] = field(default=None, repr=False)
    output_shape_payload: Optional[str] = field(default=None, repr=False)

    @property
    def kind(self):
        """``"keras"`` (Keras wrote it; rebuilt automatically), ``"user"`` (the user's code) or ``"reference"``."""
        if self.known:
            return "keras"
        return "user" if self.code is not None else "reference"

    def describe(self):
        """One line on what is known about this Lambda, for messages (``preprocess: <lambda> in /src/a.py ...``)."""
        parts = []
        if self.code is not None:
            if self.code.function_name:
                parts.append(self.code.function_name)
            if self.code.source_file:
                parts.append(f"from {self.code.source_file}")
            if self.code.names:
                parts.append(f"using {', '.join(self.code.names[:8])}{' ...' if len(self.code.names) > 8 else ''}")
        elif self.reference:
            parts.append(f"function {self.reference!r}")
        if self.arguments:
            parts.append(f"arguments={summarize(self.arguments)}")
        if self.output_shape is not None:
            parts.append(f"output_shape={summarize(self.output_shape)}")
        if self.inbound:
            parts.append(f"inputs {', '.join(self.inbound)}")
        return f"{self.layer} ({'; '.join(parts)})" if parts else self.layer

    def to_dict(self):
        found = dict(asdict(self), kind=self.kind)
        del found["payload"], found["closure"], found["defaults"], found["output_shape_payload"]
        return found


def stored_code(function):
    """The code string of a stored function, or ``None`` when the function is stored by name.

    Keras 1 and 2 store ``[code, defaults, closure]``; Keras 3 ``{"class_name": "__lambda__", "config": {"code":
    ..., "defaults": ..., "closure": ...}}`` (a Lambda layer's) or ``{..., "config": {"value": [code, defaults,
    closure]}}`` (``serialize_keras_object`` of any other lambda).

    Example:
        >>> stored_code({"class_name": "__lambda__", "config": {"code": "4wAA", "defaults": None, "closure": None}})
        '4wAA'
        >>> stored_code("preprocess") is None
        True
    """
    if isinstance(function, (list, tuple)):
        return function[0] if function and isinstance(function[0], str) else ""
    if isinstance(function, dict) and function.get("class_name") == "__lambda__":
        inner = function.get("config") if isinstance(function.get("config"), dict) else {}
        code = inner.get("code", inner.get("value"))
        if isinstance(code, (list, tuple)) and code:
            code = code[0]
        return code if isinstance(code, str) else ""
    return None


def _stored_part(function, index, key):
    """Keras' stored defaults (``index`` 1) or closure values (2) of a bytecode function, as a list, or ``None``."""
    if isinstance(function, (list, tuple)):
        part = function[index] if len(function) > index else None
    elif isinstance(function, dict) and isinstance(function.get("config"), dict):
        inner = function["config"]
        value = inner.get("value")  # Keras 3's serialize_keras_object of a lambda: {"value": [code, defaults, closure]}
        part = (value[index] if len(value) > index else None) if isinstance(value, (list, tuple)) else inner.get(key)
    else:
        part = None
    return list(part) if isinstance(part, (list, tuple)) else None


def reference_name(function):
    """The name a stored function refers to (``"preprocess"``, ``"mgpu_io>inception_resnet_scale"``), or ``None``."""
    if isinstance(function, str):
        return function
    if isinstance(function, dict) and function.get("class_name") == "function":
        name = function.get("config")
        return name if isinstance(name, str) else None
    return None


def reference(name, target="keras3", builtin=False):
    """The stored form of a function referred to by ``name``: what Keras 3 resolves from ``custom_objects`` (and
    its registered objects) in safe mode; tf_keras reads the Keras 2 spelling, a bare name.

    With ``builtin``, Keras 3 also looks the name up among its own functions (``relu``): for names the writer
    stored itself. A layer-name reference is not: a Lambda named ``relu`` must never silently become Keras' relu.

    Example:
        >>> reference("preprocess")
        {'module': None, 'class_name': 'function', 'config': 'preprocess', 'registered_name': 'preprocess'}
    """
    if target != "keras3":
        return name
    return {
        "module": "builtins" if builtin else None,
        "class_name": "function",
        "config": name,
        "registered_name": name,
    }


def lambda_layers(model_config):
    """Every ``Lambda`` layer of ``model_config`` (nested models and wrapped layers included), read as data; and
    every Keras 1 ``Merge`` whose mode is a Python function (it becomes a Lambda: ``conversions/_merge.py``).

    Example:
        >>> config = {"class_name": "Model", "config": {"layers": [{"class_name": "Lambda", "name": "double",
        ...     "config": {"name": "double", "function": "double", "function_type": "function", "arguments": {}},
        ...     "inbound_nodes": [[["inp", 0, 0, {}]]]}]}}
        >>> [(l.layer, l.kind, l.reference, l.inbound) for l in lambda_layers(config)]
        [('double', 'reference', 'double', ['inp'])]
    """
    found = []
    for layer in walk_layers(model_config, wrapped=True):
        if not isinstance(layer, dict) or layer.get("class_name") not in ("Lambda", "Merge"):
            continue
        config = layer.get("config") if isinstance(layer.get("config"), dict) else {}
        if layer["class_name"] == "Merge":  # a Python function as Keras 1's merge mode: a Lambda on the inputs
            if config.get("mode_type") not in ("lambda", "function"):
                continue
            config = dict(config, function=config.get("mode"), function_type=config.get("mode_type"))
        function = config.get("function")
        code = stored_code(function)
        output_shape = config.get("output_shape")
        shape_code = None
        if config.get("output_shape_type") == "lambda" or isinstance(output_shape, dict):
            shape_code = stored_code(output_shape) if isinstance(output_shape, (list, tuple, dict)) else None
            output_shape = "function"
        try:
            inbound = [entry[0] for node in inbound_nodes(layer) for entry in node if isinstance(entry[0], str)]
        except (TypeError, IndexError, KeyError, AttributeError):
            inbound = []
        arguments = config.get("arguments")
        found.append(
            LambdaLayer(
                layer=str(layer_name(layer)),
                function_type=config.get("function_type") if isinstance(config.get("function_type"), str) else None,
                module=config.get("module") if isinstance(config.get("module"), str) else None,
                arguments=arguments if isinstance(arguments, dict) else None,
                output_shape=output_shape,
                inbound=inbound,
                code=scan_code(code) if code is not None else None,
                reference=reference_name(function) if code is None else None,
                payload=code or None,
                defaults=_stored_part(function, 1, "defaults"),
                closure=_stored_part(function, 2, "closure"),
                output_shape_payload=shape_code or None,
            )
        )
    return found
