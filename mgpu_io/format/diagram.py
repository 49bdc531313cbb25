"""Draw a wrapper file as SVG: the wrapper's graph next to the template inside it (``mgpu-io inspect --diagram``).

Standard library only: the picture is built from the same unrolled config as ``inspect``'s report.
"""

from xml.sax.saxutils import escape

from mgpu_io.format.config import inbound_nodes, layer_name, model_layers, model_name
from mgpu_io.format.detect import unroll

_BOX_W, _BOX_H, _GAP = 150, 30, 18
_COLORS = {"input": "#dbeafe", "slice": "#fde68a", "template": "#bbf7d0", "merge": "#fbcfe8", "layer": "#e5e7eb"}


def wrapper_svg(config):
    """Return an SVG picture of a model config: wrapper levels on the left, the template's layers on the right.

    Example:
        >>> import json
        >>> svg = wrapper_svg(json.load(open("fixtures/files/k224_functional_bn_x2_config.json")))
        >>> svg.startswith("<svg") and "lambda_1" in svg and "BatchNormalization: bn" in svg
        True
    """
    unrolled = unroll(config)
    shapes = []
    if unrolled.levels:
        level = unrolled.levels[0]
        replicas = level.replicas
        width = max(replicas, len(level.merge_layers), len(level.input_layers)) * (_BOX_W + _GAP)
        rows = [
            ("input", level.input_layers),
            ("slice", level.slice_layers),
            ("template", [f"{level.template_layer} (call {r + 1})" for r in range(replicas)]),
            ("merge", [f"{name} (axis 0)" for name in level.merge_layers]),
        ]
        title = f"wrapper {level.name or ''}: {level.replicas} replicas" + (
            f", {unrolled.depth} levels deep" if unrolled.depth > 1 else ""
        )
        shapes += _text(10, 20, title, bold=True)
        y = 40
        centers = {}
        for kind, names in rows:
            row_width = len(names) * (_BOX_W + _GAP)
            x0 = 10 + (width - row_width) / 2
            current = []
            for i, name in enumerate(names):
                x = x0 + i * (_BOX_W + _GAP)
                shapes += _box(x, y, name, _COLORS[kind])
                current.append((x + _BOX_W / 2, y))
            centers[kind] = current
            y += _BOX_H + 40
        shapes += _arrows(centers["input"], centers["slice"], lambda i, j: j % len(level.input_layers) == i)
        per_replica = len(level.input_layers)
        shapes += _arrows(centers["slice"], centers["template"], lambda i, j: i // per_replica == j)
        shapes += _arrows(centers["template"], centers["merge"], lambda i, j: True)
        left = width + 40
        height = y
    else:
        left, height = 10, 40
    template = unrolled.template
    shapes += _text(left, 20, f"template {model_name(template) or ''}".rstrip(), bold=True)
    y = 40
    for layer in model_layers(template):
        sources = sorted({entry[0] for node in inbound_nodes(layer) for entry in node})
        label = f"{layer['class_name']}: {layer_name(layer)}"
        shapes += _box(left, y, label, _COLORS["layer"], width=260)
        if sources:
            shapes += _text(left + 270, y + 20, "<- " + ", ".join(sources), size=11)
        y += _BOX_H + 8
    total_width = left + 480
    total_height = max(height, y) + 10
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{total_width:.0f}" height="{total_height:.0f}" '
        f'font-family="sans-serif">' + "".join(shapes) + "</svg>\n"
    )


def _box(x, y, label, color, width=_BOX_W):
    return [
        f'<rect x="{x:.0f}" y="{y:.0f}" width="{width}" height="{_BOX_H}" rx="5" fill="{color}" stroke="#374151"/>',
        *_text(x + 6, y + 20, label, size=12),
    ]


def _text(x, y, text, bold=False, size=14):
    weight = ' font-weight="bold"' if bold else ""
    return [f'<text x="{x:.0f}" y="{y:.0f}" font-size="{size}"{weight}>{escape(text)}</text>']


def _arrows(sources, targets, connected):
    lines = []
    for i, (x1, y1) in enumerate(sources):
        for j, (x2, y2) in enumerate(targets):
            if connected(i, j):
                lines.append(
                    f'<line x1="{x1:.0f}" y1="{y1 + _BOX_H:.0f}" x2="{x2:.0f}" y2="{y2:.0f}" stroke="#6b7280"/>'
                )
    return lines
