"""One message, two readers: the library names a parameter as the caller passes it (``allow_plain=True``), the
command line by its flag (``--allow-plain``), from the same fields, never by reading the words (issue 34).

Each message here is rendered both ways and compared line for line: an error raised from its fields
(problem, expected, received, fix, with :class:`~mgpu_io.errors.Param` parts), and a report's line, a
:class:`~mgpu_io.errors.Text` that keeps its parameters through the report's ``str``.
"""

import pickle
from types import SimpleNamespace

import pytest
from helpers import fixture_path, fork_here

import mgpu_io
from mgpu_io.cli.render import in_flags, message
from mgpu_io.errors import Param, Text, UnsupportedModel
from mgpu_io.format.batch import DONE, FAILED, PLAIN_REASON, SKIPPED, BatchReport, FileResult, reason

KERAS1_FIX = (
    "Rebuild that layer in code and load the weights with mgpu_io.transfer_weights, or pass {} to write the Keras 1 "
    "config as it is (Keras 1 and 2 can load it)."
)


def both(text):
    """The library's rendering and the command line's of one message, an error or a report's text."""
    if isinstance(text, Exception):
        return str(text), message(text)
    return str(text), in_flags(text)


# --- the words themselves --------------------------------------------------------------------------------------


def test_text_keeps_its_parameters_through_joins_additions_pickles_and_printable():
    from mgpu_io.format.text import printable

    line = Text("pass ", Param("allow_plain", True), " to write it\x1b[2J")
    joined = Text("\n").join(["title", "  ! " + printable(line)])
    assert both(joined) == (
        "title\n  ! pass allow_plain=True to write it\\x1b[2J",
        "title\n  ! pass --allow-plain to write it\\x1b[2J",
    )
    assert both(pickle.loads(pickle.dumps(joined))) == both(joined)
    assert joined == "title\n  ! pass allow_plain=True to write it\\x1b[2J"  # still a string to compare and print


def test_a_name_from_the_file_inside_a_flag_is_printable():
    hostile = Text("Supply: ", Param("lambdas", ("pre\x1b[2J",)))
    assert in_flags(hostile) == "Supply: --lambda pre\\x1b[2J=MODULE:FUNCTION"


def test_an_f_string_is_plain_words_and_the_command_line_reads_none_of_them():
    assert in_flags(f"pass {Text('x ', Param('overwrite', True))}") == "pass x overwrite=True"


# --- errors raised from fields ---------------------------------------------------------------------------------


def test_a_keras1_refusal_names_keep_config_in_each_readers_terms():
    from mgpu_io.format.conversions._keras1_layers import keras1_refusal

    error = keras1_refusal("h", "Highway", "cannot be converted: gone", "a Keras 1 layer that Keras 3 has", "class_name='Highway'")
    head = ("The Keras 1 layer 'h' (Highway) cannot be converted: gone. Expected a Keras 1 layer that Keras 3 has. "
            "Received: class_name='Highway'. ")
    assert both(error) == (head + KERAS1_FIX.format("keep_config=True"), head + KERAS1_FIX.format("--keep-config"))


def test_an_unknown_keras1_class_is_refused_with_the_same_fix():
    from mgpu_io.format.conversions.keras1 import _convert_layer, _Scope

    layer = {"class_name": "MyKeras1Layer", "config": {"name": "mine"}}
    with pytest.raises(UnsupportedModel) as raised:
        _convert_layer(layer, _Scope(orderings=set(), ranks={}))
    library, cli = both(raised.value)
    assert library.endswith("Received: class_name='MyKeras1Layer'. " + KERAS1_FIX.format("keep_config=True"))
    assert cli.endswith("Received: class_name='MyKeras1Layer'. " + KERAS1_FIX.format("--keep-config"))


def test_a_removed_tensorflow_class_names_keep_config_and_target_as_flags():
    from mgpu_io.format.conversions.structure import _refuse_removed_classes

    config = {"class_name": "Model", "config": {"layers": [{"class_name": "TFOpLambda", "name": "tf_op",
                                                           "config": {"name": "tf_op"}}]}}
    with pytest.raises(UnsupportedModel) as raised:
        _refuse_removed_classes(config)
    library, cli = both(raised.value)
    end = ("Received: class_name='TFOpLambda'. Rebuild the template in code (Keras 3 ops for TensorFlow calls) and load "
           "the weights with mgpu_io.transfer_weights, or pass {} and {} for tf_keras, which has the class.")
    assert library.endswith(end.format("keep_config=True", "target='tf_keras'"))
    assert cli.endswith(end.format("--keep-config", "--target tf_keras"))


def test_a_plain_model_is_told_to_load_it_or_pass_allow_plain(tmp_path):
    plain = fixture_path({"folder": "layers/k224", "file": "Dense.h5"})
    with pytest.raises(mgpu_io.NotAWrapper) as raised:
        mgpu_io.unwrap(plain, tmp_path / "out.h5")
    library, cli = both(raised.value)
    assert library.endswith("plain model). Load it as it is, or pass allow_plain=True to copy it through.")
    assert cli.endswith("plain model). Load it as it is, or pass --allow-plain to copy it through.")
    assert raised.value.expected == "a wrapper of slice layers, one nested template and axis-0 merges"


def test_an_export_over_an_existing_output_names_overwrite(tmp_path):
    from mgpu_io.keras.exports import _atomic

    output = tmp_path / "m.onnx"
    output.write_bytes(b"kept")
    with pytest.raises(mgpu_io.OutputError) as raised, _atomic(output, ".onnx", overwrite=False):
        pass
    assert both(raised.value) == (
        f"The output exists. Expected a new path, or overwrite=True. Received: output={output}. "
        "Pass overwrite=True to replace it.",
        f"The output exists. Expected a new path, or --force. Received: output={output}. Pass --force to replace it.",
    )
    assert output.read_bytes() == b"kept"


def test_an_unknown_export_format_is_received_as_the_format_flag():
    from mgpu_io.keras.exports import exporter

    with pytest.raises(mgpu_io.InvalidArgument) as raised:
        exporter("coreml")
    library, cli = both(raised.value)
    assert "Received: format='coreml'. Pass a format named here." in library
    assert "Received: --format 'coreml'. Pass a format named here." in cli


def test_a_strict_transfer_that_does_not_fit_names_strict_false():
    from mgpu_io.keras.transfer import _strict_fields

    report = SimpleNamespace(mismatched=[], missing=[{"index": 2, "layer": "dense_2"}], unexpected=[],
                             source="w.h5", model="model")
    error = mgpu_io.WeightsMismatch(**_strict_fields(report))
    head = ("The weights do not fit the model: the source has no weights for model layers #2 dense_2. Expected the "
            "template that was wrapped, built by the same code. Received: source=w.h5, model=model. Check the model "
            "code (layer sizes, order), or pass {} to load the layers that match.")
    assert both(error) == (head.format("strict=False"), head.format("--no-strict"))


def test_a_custom_class_that_cannot_be_found_is_received_as_custom_objects_or_its_flag():
    from mgpu_io.keras.custom import custom_objects_from

    with pytest.raises(mgpu_io.InvalidArgument) as raised:
        custom_objects_from(["collections:NoSuchClass"])
    line = ("The class cannot be found. Expected a class NoSuchClass in collections. Received: {}. Fix the name, or "
            "give the module alone for every class it defines.")
    assert both(raised.value) == (line.format("custom_objects='collections:NoSuchClass'"),
                                  line.format("--custom-objects collections:NoSuchClass"))
    assert raised.value.parameter == "custom_objects"


def test_a_custom_classes_module_that_defines_none_or_cannot_be_imported_names_custom_objects(tmp_path):
    from mgpu_io.keras.custom import custom_objects_from

    module = tmp_path / "no_classes.py"
    module.write_text("def build():\n    return None\n")
    with pytest.raises(mgpu_io.InvalidArgument) as raised:
        custom_objects_from([str(module)])
    line = ("The module defines no class. Expected a module that defines the template's custom classes. Received: {}. "
            "Name the class itself as MODULE:CLASS.")
    assert both(raised.value) == (line.format(f"custom_objects={str(module)!r}"),
                                  line.format(f"--custom-objects {module}"))
    with pytest.raises(mgpu_io.InvalidArgument) as raised:
        custom_objects_from(["no_such_module_here"])
    line = ("The module of the custom classes cannot be imported. Expected a module (or .py file) importable from the "
            "current folder. Received: {} (No module named 'no_such_module_here'). Run from the folder that holds it, "
            "or fix the name.")
    assert both(raised.value) == (line.format("custom_objects='no_such_module_here'"),
                                  line.format("--custom-objects no_such_module_here"))


KEEP_CONFIG_FIX = "Pass {} to write the config as the writer did (tf_keras loads it)."


def test_layer_names_that_cannot_be_renamed_for_keras3_name_keep_config_in_each_readers_terms():
    from mgpu_io.format.conversions.structure import _rename_scoped_layers

    model = {"class_name": "Model", "config": {"layers": [{"class_name": "Dense", "name": "conv1/conv"},
                                                          {"class_name": "Dense", "name": "conv1_conv"}]}}
    with pytest.raises(UnsupportedModel) as raised:
        _rename_scoped_layers(model, [])
    head = ("Layer names with '/' cannot be renamed for Keras 3: the new names are taken. Expected unique names after "
            "replacing '/' with '_'. Received: ['conv1_conv']. ")
    assert both(raised.value) == (head + KEEP_CONFIG_FIX.format("keep_config=True"),
                                  head + KEEP_CONFIG_FIX.format("--keep-config"))


def test_a_nested_model_that_cannot_be_inlined_names_keep_config_in_each_readers_terms():
    from mgpu_io.format.conversions.structure import _inline

    nested = {"class_name": "Model", "name": "inner", "inbound_nodes": [],
              "config": {"input_layers": [["x", 0, 0]], "layers": [{"name": "x"}, {"name": "dense", "inbound_nodes": []}]}}
    model = {"class_name": "Model", "config": {"layers": [nested, {"name": "dense"}]}}
    with pytest.raises(UnsupportedModel) as raised:
        _inline(model, nested)
    head = ("The nested model 'inner' cannot be inlined for Keras 3: its layer names are used outside it too. Expected "
            "unique layer names. Received: ['dense']. ")
    assert both(raised.value) == (head + KEEP_CONFIG_FIX.format("keep_config=True"),
                                  head + KEEP_CONFIG_FIX.format("--keep-config"))


# --- report lines ----------------------------------------------------------------------------------------------


def test_a_folder_report_names_allow_plain_overwrite_and_verbose_in_each_readers_terms():
    from mgpu_io.format.batch import ALL_ROWS_UP_TO, DONE_REASON

    files = [FileResult("a.h5", DONE, reason=DONE_REASON), FileResult("b.h5", SKIPPED, reason=PLAIN_REASON)]
    library, cli = both(str(BatchReport("src", "out", files=files)))
    assert library.splitlines()[3] == "  b.h5  skipped      a plain model, not a wrapper: pass allow_plain=True to " \
                                      "write it normalised too"
    assert cli.splitlines()[3] == "  b.h5  skipped      a plain model, not a wrapper: pass --allow-plain to write " \
                                  "it normalised too"
    assert both(DONE_REASON) == (
        "the output exists, newer than its input: an earlier run completed it (overwrite=True redoes it)",
        "the output exists, newer than its input: an earlier run completed it (--force redoes it)",
    )
    many = [FileResult(f"{i}.h5", FAILED, reason="Broken. More.") for i in range(ALL_ROWS_UP_TO + 1)]
    library, cli = both(str(BatchReport("src", "out", files=many)))
    assert library.splitlines()[0] == "src -> out: the 31 failures of 31 files (verbose=True lists every file)"
    assert cli.splitlines()[0] == "src -> out: the 31 failures of 31 files (--verbose lists every file)"


def test_a_failed_files_detail_keeps_the_parameter_its_first_sentence_names():
    error = mgpu_io.InvalidArgument(problem=(Param("jobs"), " sets the worker processes"), fix="Leave it out")
    detail = BatchReport("src", "out", files=[FileResult("a.h5", FAILED, reason=reason(error))])
    assert [text.splitlines()[2] for text in both(str(detail))] == [
        "  a.h5  failed  jobs= sets the worker processes.",
        "  a.h5  failed  --jobs sets the worker processes.",
    ]


def test_the_lambda_finding_names_every_function_to_pass_as_a_flag():
    report = mgpu_io.inspect(fixture_path({"folder": "applications", "file": "k224_user_lambdas_x2_full.h5"}))
    library, cli = (next(line for line in text.splitlines() if "Supply" in line) for text in both(str(report)))
    start = ("  ! template-lambda: Lambda layers hold your own code, stored as bytecode that mgpu-io never runs nor "
             "copies: the repaired config refers to each by its layer name. Supply the functions: ")
    end = (" (load_model, a .keras output), or custom_objects={'preprocess': fn, ...} when Keras 3 loads a repaired "
           ".h5 (preprocess, channel_stats, scale_by_factor, square_features, gate, l2_norm)")
    assert library == start + "lambdas={'preprocess': fn, ...}" + end
    layers = ("preprocess", "channel_stats", "scale_by_factor", "square_features", "gate", "l2_norm")
    assert cli == start + " ".join(f"--lambda {layer}=MODULE:FUNCTION" for layer in layers) + end


def test_a_partly_scanned_file_says_scan_weights_in_each_readers_terms(monkeypatch):
    import mgpu_io.format.inspect

    fork_here(monkeypatch)  # the child that scans sees the budget set here
    monkeypatch.setattr(mgpu_io.format.inspect, "SCAN_BUDGET", 0)  # every file is "large" now
    report = mgpu_io.inspect(fixture_path({"file": "k224_bn_uneven_batch_x2_full.h5"}))
    library, cli = (next(line for line in text.splitlines() if "partly" in line) for text in both(str(report)))
    line = ("  ! weights-partly-scanned: Only BatchNormalization weights were checked for NaN/Inf (0.00 GiB of weights "
            "in all); pass {} to read every weight.")
    assert (library, cli) == (line.format("scan_weights=True"), line.format("--scan-weights"))


def test_the_recovered_module_report_says_how_to_pass_it():
    from mgpu_io.lambdas.source_module import LambdaSources

    sources = LambdaSources(file="m.h5", output="my_lambdas.py")
    library, cli = (text.splitlines()[-1] for text in both(str(sources)))
    assert library == "  Review it, define the names its header lists, then pass it: lambdas='my_lambdas.py'"
    assert cli == "  Review it, define the names its header lists, then pass it: --lambda-module my_lambdas.py"


def test_keras_refusing_a_keras_file_is_wrapped_in_fields_naming_custom_objects_and_lambdas(monkeypatch, tmp_path):
    from mgpu_io.errors import KerasRefused
    from mgpu_io.format import keras3
    from mgpu_io.keras import load

    def refuse(*args, **kwargs):
        raise TypeError("Could not locate class 'Gate'. Make sure custom classes are decorated.\nTraceback ...")

    monkeypatch.setattr(keras3, "archive_config", lambda path: {"class_name": "Sequential", "config": {"layers": []}})
    keras = SimpleNamespace(models=SimpleNamespace(load_model=refuse))
    path = tmp_path / "m.keras"
    with pytest.raises(KerasRefused) as raised:
        load._load_archive(keras, path, None, True, True, None)
    line = ("Keras 3 cannot load the .keras file: Could not locate class 'Gate'. Make sure custom classes are "
            f"decorated. Expected a .keras file whose layers Keras 3 builds. Received: filepath={path} (TypeError). "
            "Pass your own layers and functions in {} (and Lambda functions in {}); `mgpu-io inspect` "
            "lists its Lambda layers.")
    assert both(raised.value) == (line.format("custom_objects=", "lambdas="), line.format("--custom-objects", "--lambda"))
    assert raised.value.fix[1] == Param("custom_objects") and raised.value.received.endswith("(TypeError)")
