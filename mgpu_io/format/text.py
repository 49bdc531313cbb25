"""Plain text for reports: what ``str(report)`` prints, in the library and (styled) in the command line.

Standard library only. Every string that comes from a file (layer names, paths) goes through :func:`printable`, so a
hostile name cannot move the cursor or clear a terminal.
"""

import re

_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


def printable(text):
    r"""``text`` with control characters and undecodable bytes shown as escapes.

    A name that reached Python as undecodable bytes (a UTF-8 file name under a non-UTF-8 locale) is shown as the
    UTF-8 text it is, where it is valid UTF-8.

    Example:
        >>> printable("dense_1\x1b[2J"), printable("\udcc3\udcbc.h5") == "\u00fc.h5"
        ('dense_1\\x1b[2J', True)
    """
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
    return [
        indent + "  ".join([cell.ljust(width) for cell, width in zip(row, widths)] + [row[-1]]).rstrip()
        for row in table
    ]
