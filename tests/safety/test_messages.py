"""The messages a user reads: short enough to read at a glance, with advice that fits the file (issue 24).

- arrays and long values in a message are summarised (shape, dtype, first values), never printed in full;
- a plain model that Keras 3 cannot load as it is points to ``mgpu_io.load_model`` (or ``--allow-plain``), one it
  can load is told to load it as it is;
- an unnamed template (a Keras 2.1 ``Sequential``, saved as a bare list of layers) is called by its class;
- the errors that reject an input are ``ValueError``s too, as Keras users catch them around ``load_model``.
"""

import numpy as np
import pytest
from helpers import FIXTURES, ROOT, runner

import mgpu_io
from mgpu_io import errors
from mgpu_io.cli import app
from mgpu_io.format.text import summarize

PLAIN_SEQUENTIAL = ROOT / "fixtures" / "plain" / "k216_sequential_plain.h5"  # Keras 2.1.6, no model name
KERAS1_PLAIN = ROOT / "fixtures" / "layers" / "k122" / "Dense.h5"  # Keras 1.2.2, a plain functional model
KERAS2_PLAIN = ROOT / "fixtures" / "layers" / "k224" / "Dense.h5"  # Keras 2.2.4: Keras 3 loads it as it is



# --- values in messages ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ([[1.5, 2.0], [3.0, 4.0]], "<array shape=(2, 2) dtype=float [1.5, 2, 3, ...]>"),
        ({"type": "ndarray", "value": 0.3}, "0.3"),  # Keras 2's payload of a scalar stays the scalar
        ({"type": "ndarray", "value": [1, 2]}, "<array shape=(2,) dtype=int [1, 2]>"),
        (
            {"class_name": "__numpy__", "config": {"value": [[1.0, 2.0, 3.0, 4.0]], "dtype": "float32"}},
            "<array shape=(1, 4) dtype=float32 [1, 2, 3, ...]>",
        ),
        ([1, 2, 3], "[1, 2, 3]"),  # a short list of numbers is as readable as it is
        ((None, 3), "(None, 3)"),
        ("short", "'short'"),
        (list(range(20, 40)), "<array shape=(20,) dtype=int [20, 21, 22, ...]>"),
        (["a"] * 10, "['a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', ... (10 items)]"),
    ],
)
def test_a_value_in_a_message_is_summarised(value, expected):
    assert summarize(value) == expected


def test_long_text_in_a_message_is_cut_and_says_how_long_it_was():
    assert summarize("x" * 500, limit=5) == "'xxxxx...' (500 characters)"


def test_the_missing_lambda_message_summarises_the_arrays_it_was_given(tmp_path):
    """Keras' own legacy test (test_saving_lambda): a normalising Lambda with two 4x2x3 arrays as arguments."""
    tf_keras = pytest.importorskip("tf_keras")
    mean, std = np.random.random((4, 2, 3)), np.random.random((4, 2, 3)) + 1
    inputs = tf_keras.Input(shape=(4, 2, 3))
    output = tf_keras.layers.Lambda(lambda image, mu, std: (image - mu) / std, arguments={"mu": mean, "std": std})(
        inputs
    )
    path = tmp_path / "lambda.h5"
    tf_keras.Model(inputs, output).save(path)

    with pytest.raises(ValueError) as raised:  # a ValueError, as Keras users catch it
        mgpu_io.load_model(path)
    message = str(raised.value)
    assert isinstance(raised.value, mgpu_io.MissingLambda)
    assert "'mu': <array shape=(4, 2, 3) dtype=float " in message
    assert "'std': <array shape=(4, 2, 3) dtype=float " in message
    assert len(message) < 1000, message  # with the arrays in full, the layer alone took ~1,800 characters
    assert message.count("\n") == 0


# --- advice that fits the file -----------------------------------------------------------------------------------


def test_a_plain_keras1_file_is_pointed_to_load_model_not_told_to_load_as_it_is(tmp_path):
    with pytest.raises(mgpu_io.NotAWrapper) as raised:
        mgpu_io.unwrap(KERAS1_PLAIN, tmp_path / "out.h5")
    assert str(raised.value).endswith(
        "Keras 3 cannot load it as it is (it needs keras1-to-keras2, keras1-regularizers): load it with "
        "mgpu_io.load_model, or pass allow_plain=True to write it converted."
    )


def test_the_command_line_says_the_same_advice_with_its_flag(tmp_path):
    result = runner.invoke(app, ["unwrap", str(PLAIN_SEQUENTIAL), str(tmp_path / "out.h5")])
    assert result.exit_code == 1
    assert result.stderr.strip().endswith(
        "Keras 3 cannot load it as it is (it needs sequential-list-config, sequential-explicit-input): load it "
        "with mgpu_io.load_model, or pass --allow-plain to write it converted."
    )


def test_a_plain_file_that_keras3_loads_is_told_to_load_it_as_it_is(tmp_path):
    with pytest.raises(mgpu_io.NotAWrapper) as raised:
        mgpu_io.unwrap(KERAS2_PLAIN, tmp_path / "out.h5")
    assert str(raised.value).endswith("Load it as it is, or pass allow_plain=True to copy it through.")


# --- names -------------------------------------------------------------------------------------------------------


def test_an_unnamed_sequential_template_is_called_by_its_class():
    report = mgpu_io.inspect(PLAIN_SEQUENTIAL)
    assert (report.template, report.template_class) == (None, "Sequential")
    assert "└── model: unnamed Sequential; inputs: dense_1_input; outputs: dense_2" in str(report)
    assert "?" not in str(report)


# --- error classes -----------------------------------------------------------------------------------------------

INPUT_ERRORS = [
    errors.NotAModelFile,
    errors.FailedSaveStub,
    errors.NotAWrapper,
    errors.WeightsMismatch,
    errors.UnsupportedModel,
    errors.KerasRefused,
    errors.InvalidArgument,
    errors.AmbiguousTemplate,
    errors.MissingLambda,
    errors.OutputError,
    errors.BaseModelCheckpointError,
]


@pytest.mark.parametrize("error", INPUT_ERRORS, ids=lambda e: e.__name__)
def test_every_error_that_rejects_an_input_is_a_value_error_and_an_mgpu_io_error(error):
    assert issubclass(error, ValueError) and issubclass(error, mgpu_io.MgpuIOError)


def test_a_missing_package_is_an_import_error():
    assert issubclass(errors.MissingDependency, ImportError) and not issubclass(errors.MissingDependency, ValueError)


def test_except_value_error_around_a_load_catches_a_file_that_is_not_a_model(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("epoch 10: loss 0.31\n")
    try:
        mgpu_io.inspect(notes)
    except ValueError as error:
        assert type(error).__name__ == "NotAModelFile"
    else:
        pytest.fail("no error")


def test_the_stub_of_a_failed_save_is_a_value_error_too(tmp_path):
    with pytest.raises(ValueError) as raised:
        mgpu_io.unwrap(FIXTURES / "k216_failed_save_stub.h5", tmp_path / "out.h5")
    assert isinstance(raised.value, mgpu_io.FailedSaveStub)


def test_the_plain_sequential_fixture_loads_with_its_writers_predictions():
    pytest.importorskip("keras")
    data = np.load(PLAIN_SEQUENTIAL.with_suffix(".npz"))
    model = mgpu_io.load_model(PLAIN_SEQUENTIAL)
    assert np.max(np.abs(model.predict(data["x0"], verbose=0) - data["y0"])) <= 1e-5
