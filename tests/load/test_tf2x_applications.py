"""The keras.applications templates of tf.keras 2.4-2.15 (EfficientNet, EfficientNetV2, MobileNetV3, ResNetRS,
RegNet, ConvNeXt with its LayerScale and StochasticDepth) and a model holding `RandomCrop`, each saved whole by the
real release that has it (fixtures/applications, fixtures/generate/applications/run_tf2x.sh), load with
`mgpu_io.load_model` and predict what the writer did, or are refused by name.

The bound is relative: ``1e-5 × max(1, max|prediction|)``. These templates are chains of 50-100 layers whose
logits reach about 13; today's TensorFlow rounds float32 differently from the writer's release along such a chain
(tf_keras, the writer's own code on today's TensorFlow, differs from tf.keras 2.4 by 2.9e-5 on
tf24_efficientnet_full.h5, whose logits reach 13.0).
"""

import json
import warnings

import numpy as np
import pytest
from helpers import APPLICATIONS, fixture_batch, fixture_path

import mgpu_io

keras = pytest.importorskip("keras")

#: The writers of this family (fixtures/applications holds the wrapper era's too).
TF2X = ("tf24", "tf28", "tf210", "tf215")
ENTRIES = [dict(e, folder="applications") for e in json.loads((APPLICATIONS / "manifest.json").read_text())
           if e["writer"] in TF2X]
#: tf.keras 2.2-2.6's RandomCrop predicts by resizing to the shorter side and then cropping, which no Keras 3 layer
#: computes (tf.keras 2.7+ uses smart_resize: Keras 3's Resizing(crop_to_aspect_ratio=True)).
REFUSED = {"tf24_random_crop_full.h5": "RandomCrop"}


def bound(ys):
    return 1e-5 * max(1.0, max(float(np.abs(y).max()) for y in ys))


def difference(model, entry):
    xs, ys = fixture_batch(entry)
    got = model(xs[0], training=False)
    return float(np.max(np.abs(np.asarray(got, dtype="float64") - ys[0]))), bound(ys)


def test_every_release_wrote_its_templates():
    templates = {}
    for entry in ENTRIES:
        templates.setdefault(entry["writer"], set()).add(entry["file"].split("_", 1)[1].rsplit("_full", 1)[0])
    common = {"efficientnet", "mobilenet_v3_small", "mobilenet_v3_large", "random_crop"}
    assert templates["tf24"] == common
    assert templates["tf28"] >= common | {"efficientnet_v2"}
    assert templates["tf210"] >= common | {"efficientnet_v2", "resnet_rs", "regnet_x", "regnet_y", "convnext"}
    assert templates["tf215"] == templates["tf210"]


@pytest.mark.parametrize("entry", [pytest.param(e, id=e["file"]) for e in ENTRIES if e["file"] not in REFUSED])
def test_each_template_loads_with_the_writers_predictions(entry):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = mgpu_io.load_model(fixture_path(entry), compile=False)
    found, allowed = difference(model, entry)
    assert found <= allowed, f"{entry['file']}: {found:.3g} > {allowed:.3g}"


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_random_crop_of_tf_keras_2_4_is_refused_by_name_with_the_fix(name):
    with pytest.raises(mgpu_io.UnsupportedModel) as refused:
        mgpu_io.load_model(APPLICATIONS / name, compile=False)
    message = str(refused.value)
    assert REFUSED[name] in message and "Received: keras_version='2.4.0'" in message
    assert "transfer_weights" in message


def test_a_random_crop_of_tf_keras_2_7_and_later_predicts_its_centre_window_as_the_writer_did():
    """Keras 3's own RandomCrop would return the 32x32 input unchanged when predicting (and the Dense after it would
    refuse the shape); the writer cropped the largest 20:26 window and resized it."""
    for entry in (e for e in ENTRIES if e["file"].endswith("random_crop_full.h5") and e["file"] not in REFUSED):
        report = mgpu_io.unwrap(fixture_path(entry), fixture_path(entry).with_suffix(".out.h5"), allow_plain=True,
                                dry_run=True)
        assert "random-crop-inference" in report.config_changes
        model = mgpu_io.load_model(fixture_path(entry), compile=False)
        assert [type(layer).__name__ for layer in model.layers][1] == "Resizing"
        found, allowed = difference(model, entry)
        assert found <= allowed, entry["file"]


def test_convnext_keeps_its_layer_scale_and_stochastic_depth():
    entry = next(e for e in ENTRIES if e["file"] == "tf215_convnext_full.h5")
    assert {"LayerScale", "StochasticDepth"} <= set(entry["layer_classes"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = mgpu_io.load_model(fixture_path(entry), compile=False)
    found, allowed = difference(model, entry)
    assert found <= allowed


@pytest.mark.parametrize("keras_version, refused", [("2.5.0", True), ("2.6.0", True), ("2.7.0", False), ("2.15.0", False)])
def test_the_random_crop_rule_draws_its_line_where_tf_keras_changed_its_inference(keras_version, refused):
    """keras 2.6.0's RandomCrop still resized to the shorter side and cropped; 2.7.0's called smart_resize (read in
    the two wheels' image_preprocessing.py): only 2.7 and later become Resizing(crop_to_aspect_ratio=True)."""
    from types import SimpleNamespace

    from mgpu_io.errors import UnsupportedModel
    from mgpu_io.format.conversions import arguments
    from mgpu_io.format.conversions.base import KERAS3

    layer = {"class_name": "RandomCrop", "config": {"name": "crop", "height": 4, "width": 4, "seed": None}}
    context = SimpleNamespace(target=KERAS3, keras_version=keras_version)
    if refused:
        with pytest.raises(UnsupportedModel, match=r"^Layer 'crop' \(RandomCrop\) of tf\.keras " + keras_version):
            arguments._random_crop(layer, layer["config"], "RandomCrop", context)
    else:
        assert arguments._random_crop(layer, layer["config"], "RandomCrop", context) == ["random-crop-inference"]
        assert layer["class_name"] == "Resizing" and layer["config"]["crop_to_aspect_ratio"] is True
