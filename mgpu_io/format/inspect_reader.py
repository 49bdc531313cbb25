"""The reading half of :func:`mgpu_io.format.inspect.inspect`, run in the probe's child: the file's structure,
its findings and its weights' scan, as an :class:`~mgpu_io.format.inspect.InspectReport`."""

import h5py
import numpy as np

from mgpu_io.errors import InvalidArgument, Param, Text
from mgpu_io.format import conversions
from mgpu_io.format.config import input_names, layer_name, model_layers, model_name
from mgpu_io.format.conversions.cudnn import cudnn_layout
from mgpu_io.format.conversions.keras1 import is_keras1
from mgpu_io.format.extract import extract, template_outputs
from mgpu_io.format.inspect_report import Finding, InspectReport
from mgpu_io.format.non_finite import non_finite_message
from mgpu_io.format.read import CONFIG, open_stored, reading
from mgpu_io.format.string_attrs import read_str
from mgpu_io.format.weights import scoped_weight_names
from mgpu_io.lambdas.by_reference import template_lambdas
from mgpu_io.lambdas.recovery import recover_lambdas

_SCAN_CHUNK = 1 << 22  # elements read at a time when scanning weights for NaN/Inf


def inspect_file(path, scan_weights, budget, draw=False):
    """In the probe's child: ``(report, the wrapper's SVG diagram or None)``."""
    with open_stored(path) as stored, reading(stored.path, "inspecting the file"):
        return _inspect(stored, scan_weights, budget), (_drawn(stored) if draw else None)


def _layout_config(template, keras1):
    """The config that lays out the weights: a Keras 1 one in its Keras 2 spelling, where its layers convert
    (Keras 1, and Keras 2.0-2.1's legacy Merge, kept a Sequential's merged branches inside its Merge layer), else as
    stored."""
    if template is None:
        return template
    if not keras1:
        from mgpu_io.format.conversions.keras2_legacy import branches_unfolded

        return branches_unfolded(template)
    from mgpu_io.errors import UnsupportedModel
    from mgpu_io.format.conversions.keras1 import convert_keras1_config

    try:
        return convert_keras1_config(template)
    except UnsupportedModel:
        return template


def _drawn(stored):
    """The SVG of the wrapper next to its template, from the file's graph."""
    from mgpu_io.format.diagram import wrapper_svg

    if stored.model_config is None:
        raise InvalidArgument(
            problem="A diagram needs a graph",
            parameter="filepath",
            expected="a full model file or a JSON config",
            received=f"filepath={stored.path} ({stored.file_type} file)",
            fix="Pass the model file or its JSON config",
        )
    return wrapper_svg(stored.model_config)


def _inspect(stored, scan_weights, budget):
    extraction = extract(stored)
    template = extraction.template_config
    keras1 = is_keras1(stored.keras_version, template)
    layers = extraction.layout(_layout_config(template, keras1)) if stored.file_type != CONFIG else []
    levels = [level.to_dict() for level in extraction.levels]
    wrapper = extraction.weights_wrapper
    findings = []
    if template is not None:
        findings += _config_findings(template, conversions.Context(keras1=keras1))
    if template is None:
        cudnn = [layer.layer for layer in layers if cudnn_layout([layer.group[n].shape for n in layer.names])]
        if cudnn:
            findings.append(
                Finding(
                    "cudnn-layers",
                    Text(
                        "CuDNN-layout weights (a bias twice the standard size): only CuDNN layers, on NVIDIA GPUs, "
                        "load them as they are. Unwrap with ",
                        Param("config"),
                        " (the JSON saved beside them) to convert them for LSTM/GRU, or load them with "
                        "mgpu_io.transfer_weights into your model, which converts them.",
                    ),
                    cudnn,
                )
            )
    if template is None and wrapper is not None:
        scoped = scoped_weight_names([name for layer in layers for name in layer.names])
        if scoped:
            findings.append(
                Finding(
                    "scoped-weight-names",
                    Text(
                        "Weight names carry scopes (or layer names with '/'): which layer owns each cannot be told "
                        "without the architecture. Unwrap with ",
                        Param("config"),
                        " (the JSON saved beside these weights).",
                    ),
                    scoped[:20],
                )
            )
    if stored.file_type == "weights" and wrapper is not None:
        findings.append(
            Finding(
                "weights-only",
                "A weights-only file has no graph: the template's config and output names come from your model code, "
                "the writer and any nesting are not recorded, and replicas are counted from the slice layers' names.",
            )
        )
    findings += _weight_findings(layers, _configs(template), scan_weights, budget)
    if stored.double_encoded:
        findings.append(
            Finding(
                "double-encoded-json",
                "The config is a JSON string that holds the model's JSON (saved with json.dump(model.to_json(), f)): "
                "it is read one level deeper.",
            )
        )
    if keras1:
        findings.append(Finding("keras1", "Written by Keras 1: configs are converted to Keras 2 spelling on unwrap."))
    return InspectReport(
        file=str(stored.path),
        file_type=stored.file_type,
        is_wrapper=extraction.is_wrapper,
        variant=extraction.levels[-1].variant if extraction.levels else None,
        replicas=levels[-1]["replicas"] if levels else None,
        depth=extraction.depth,
        template=model_name(template) if template is not None else (wrapper.template_layer if wrapper else None),
        inputs=input_names(template) if template is not None else (wrapper.input_layers if wrapper else []),
        outputs=template_outputs(extraction),
        keras_version=stored.keras_version,
        backend=stored.backend,
        has_optimizer_weights=stored.optimizer_weights is not None,
        findings=findings,
        levels=levels,
        weights=sum(len(layer.names) for layer in layers),
        layer_count=len(model_layers(template)) if template is not None else sum(1 for layer in layers if layer.names),
        parameters=sum(layer.group[name].size or 0 for layer in layers for name in layer.names),
        lambdas=[lam.to_dict() for lam in recover_lambdas(template_lambdas(template), stored.keras_version)]
        if template is not None
        else [],
        template_class=template.get("class_name") if template is not None else None,
    )


def _config_findings(template, context):
    return [
        Finding(family.finding, message, layers)
        for family, message, layers in conversions.checks(template, context)
        if family.finding
    ]


def _configs(template):
    return {layer_name(lyr): lyr for lyr in model_layers(template)} if template is not None else {}


def _weight_findings(layers, configs, scan_weights, budget):
    weights = [(layer, name) for layer in layers for name in layer.names]
    total = sum(layer.group[name].size * layer.group[name].dtype.itemsize for layer, name in weights)
    findings = []
    if scan_weights is False:
        weights = []
    elif scan_weights is None and total > budget:
        weights = [(layer, name) for layer, name in weights if _is_batchnorm(layer, configs)]
        findings.append(
            Finding(
                "weights-partly-scanned",
                Text(
                    f"Only BatchNormalization weights were checked for NaN/Inf ({total / 2**30:.2f} GiB of weights in "
                    f"all); pass ",
                    Param("scan_weights", True),
                    " to read every weight.",
                ),
            )
        )
    bad = [
        name for layer, name in weights if layer.group[name].dtype.kind == "f" and _has_non_finite(layer.group[name])
    ]
    if not bad:
        return findings
    return [*findings, Finding("non-finite-weights", non_finite_message(bad, "this file"), bad)]


def _is_batchnorm(layer, configs):
    config = configs.get(layer.layer)
    if config is not None:
        return config["class_name"] == "BatchNormalization"
    return any("moving_" in name or "running_" in name for name in layer.names)  # weights only: by its weights


def _has_non_finite(dataset):
    if dataset.shape == ():
        return not np.isfinite(dataset[()])
    flat = dataset.size
    if flat <= _SCAN_CHUNK:
        return not np.isfinite(dataset[()]).all()
    rows = max(1, _SCAN_CHUNK // max(1, flat // dataset.shape[0]))
    return any(not np.isfinite(dataset[i : i + rows]).all() for i in range(0, dataset.shape[0], rows))


def stub_report(path, stub):
    with reading(path, "reading the stub's attributes"), h5py.File(path, "r") as h5:
        keras_version, backend = read_str(h5.attrs, "keras_version"), read_str(h5.attrs, "backend")
    return InspectReport(
        file=str(path),
        file_type="stub",
        is_wrapper=False,
        variant=None,
        replicas=None,
        depth=0,
        template=None,
        inputs=[],
        outputs=[],
        keras_version=keras_version,
        backend=backend,
        has_optimizer_weights=False,
        findings=[Finding("failed-save-stub", stub.text())],
    )
