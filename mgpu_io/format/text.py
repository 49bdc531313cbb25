"""Plain text for reports: what ``str(report)`` prints, in the library and (styled) in the command line.

Standard library only. Every string that comes from a file (layer names, paths) goes through :func:`printable`, so a
hostile name cannot move the cursor or clear a terminal.
"""

import re

from mgpu_io.errors import Text

_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


def printable(text):
    r"""``text`` with control characters and undecodable bytes shown as escapes.

    A name that reached Python as undecodable bytes (a UTF-8 file name under a non-UTF-8 locale) is shown as the
    UTF-8 text it is, where it is valid UTF-8.

    A :class:`~mgpu_io.errors.Text` stays one: its words are made printable, its parameters kept.

    Example:
        >>> printable("dense_1\x1b[2J"), printable("\udcc3\udcbc.h5") == "\u00fc.h5"
        ('dense_1\\x1b[2J', True)
    """
    if isinstance(text, Text):
        return Text(*(part if not isinstance(part, str) else printable(part) for part in text.parts))
    text = str(text)
    try:
        text.encode("utf8")
    except UnicodeEncodeError:  # lone surrogates: bytes that were not decoded; those that are UTF-8 are decoded
        text = text.encode("utf8", "surrogateescape").decode("utf8", "surrogateescape")
    return _UNPRINTABLE.sub(
        lambda m: (
            m.group(0).encode("unicode_escape", "backslashreplace").decode("ascii")
            if not "\ud800" <= m.group(0) <= "\udfff"
            else f"\\u{ord(m.group(0)):04x}"
        ),
        text,
    )


def first_sentence(text, end="."):
    """The first sentence of ``text`` (up to its first ``". "``), ending with ``end``; the parameters of a
    :class:`~mgpu_io.errors.Text` kept.

    Example:
        >>> first_sentence("The file is truncated. Expected an HDF5 file. Received: filepath=m.h5.")
        Text('The file is truncated.')
    """
    parts = text.parts if isinstance(text, Text) else (str(text),)
    cut = str(text).find(". ")
    kept, at = [], 0
    for part in parts:
        if cut != -1 and at >= cut:
            break
        kept.append(part[: cut - at] if cut != -1 and isinstance(part, str) else part)
        at += len(str(part))
    if kept and isinstance(kept[-1], str):
        kept[-1] = kept[-1].rstrip(".")
    return Text(*kept, end)


def names(values):
    """Names from a file, comma-separated and printable."""
    return printable(", ".join(str(value) for value in values))


def plural(count, noun):
    """``"1 level"``, ``"3 levels"``."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def columns(header, rows, indent="  "):
    """Rows of cells as aligned text lines under ``header``; cells are never cut (the last column runs long).

    Example:
        >>> print("\\n".join(columns(("file", "status"), [("a.h5", "repaired"), ("long_name.h5", "failed")])))
          file          status
          a.h5          repaired
          long_name.h5  failed
    """
    table = [tuple(header)] + [tuple(printable(cell) for cell in row) for row in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(header) - 1)]
    return [_row(indent, [cell.ljust(width) for cell, width in zip(row, widths)], row[-1]) for row in table]


def _row(indent, padded, last):
    """A table's line: the last cell unpadded (a :class:`~mgpu_io.errors.Text` kept, with its parameters)."""
    line = indent + "".join(cell + "  " for cell in padded) + last
    return line if isinstance(last, Text) else line.rstrip()


def _numeric_shape(value):
    """The shape of a nested list of numbers (a JSON-stored array), or ``None`` when ``value`` is not one."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return ()
    if not isinstance(value, list) or not value:
        return None
    inner = [_numeric_shape(item) for item in value]
    if inner[0] is None or any(shape != inner[0] for shape in inner):
        return None
    return (len(value), *inner[0])


def _flat(value):
    return [item for part in value for item in _flat(part)] if isinstance(value, list) else [value]


def _array(shape, dtype, values):
    first = ", ".join(f"{v:.4g}" if isinstance(v, float) else str(v) for v in values[:3])
    more = ", ..." if len(values) > 3 else ""
    return f"<array shape={shape} dtype={dtype} [{first}{more}]>"


def summarize(value, limit=80):
    """``value`` as a short text for a message: arrays by shape, dtype and first values, long text cut.

    Configs store arrays as nested lists (tf.keras), ``{"type": "ndarray", "value": ...}`` (Keras 2) or
    ``{"class_name": "__numpy__", "config": {...}}`` (Keras 3); a message names them without printing every number.

    Example:
        >>> summarize({"mu": [[0.5, 1.0], [1.5, 2.0]], "scale": 2})
        "{'mu': <array shape=(2, 2) dtype=float [0.5, 1, 1.5, ...]>, 'scale': 2}"
        >>> summarize({"type": "ndarray", "value": [1, 2]})
        '<array shape=(2,) dtype=int [1, 2]>'
        >>> summarize("x" * 100, limit=10)
        "'xxxxxxxxxx...' (100 characters)"
    """
    if isinstance(value, dict):
        if value.get("type") == "ndarray" and "value" in value:  # Keras 2's numpy payload: an array even if small
            shape = _numeric_shape(value["value"])
            if shape:
                values = _flat(value["value"])
                return _array(shape, "float" if any(isinstance(v, float) for v in values) else "int", values)
            return summarize(value["value"], limit)
        if value.get("class_name") == "__numpy__" and isinstance(value.get("config"), dict):
            stored = value["config"].get("value")
            shape = _numeric_shape(stored)
            if shape is not None:
                return _array(shape, value["config"].get("dtype", "?"), _flat(stored))
        return "{" + ", ".join(f"{key!r}: {summarize(item, limit)}" for key, item in value.items()) + "}"
    shape = _numeric_shape(value)
    if shape:  # a list of numbers, at any depth
        values = _flat(value)
        if len(values) > 3 or len(shape) > 1:
            return _array(shape, "float" if any(isinstance(v, float) for v in values) else "int", values)
    if isinstance(value, (list, tuple)):
        items = [summarize(item, limit) for item in value[:8]]
        more = [f"... ({len(value)} items)"] if len(value) > 8 else []
        text = ", ".join(items + more)
        return f"[{text}]" if isinstance(value, list) else f"({text}{',' if len(value) == 1 else ''})"
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:limit]!r}... ({len(value)} characters)".replace("'...", "...'", 1)
    return repr(value)
