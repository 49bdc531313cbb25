"""Structure: rewrite a legacy template config so that Keras 3 and tf_keras both load it.

The old writers produced configs that Keras 3's legacy loader misreads even after the wrapper is gone
(legacy-format.md §7). Each rule fixes one such case, keeps the model's meaning, and is reported by name so the user
sees what changed. The rules work on plain dicts and never touch weights.
"""

from mgpu_io.errors import Param, UnsupportedModel
from mgpu_io.format.config import (
    FUNCTIONAL_CLASSES,
    MODEL_CLASSES,
    WRAPPED_LAYER_KEYS,
    copy_config,
    layer_name,
    model_layers,
    walk_layers,
)
from mgpu_io.format.conversions.base import KERAS3, Family, Rule

SEPARABLE_CLASSES = ("SeparableConv1D", "SeparableConv2D")
_UNUSED_KERNEL_ARGUMENTS = ("kernel_initializer", "kernel_regularizer", "kernel_constraint")


def normalize_for_keras3(model_config):
    """Return ``(config, changes)``: a copy of ``model_config`` that Keras 3 loads, and what was changed.

    Example:
        >>> config, changes = normalize_for_keras3({"class_name": "Sequential", "config": [
        ...     {"class_name": "Dense", "config": {"name": "d", "units": 1, "batch_input_shape": [None, 3]}}]})
        >>> [layer["class_name"] for layer in config["config"]["layers"]], changes
        (['InputLayer', 'Dense'], ['sequential-list-config', 'sequential-explicit-input'])
    """
    config = copy_config(model_config)
    changes = []
    _normalize_model(config, changes, top_level=True)
    return config, list(dict.fromkeys(changes))


def _normalize_model(model, changes, top_level, keras3=True):
    _rename_scoped_layers(model, changes)
    if model["class_name"] == "Sequential":
        if isinstance(model["config"], list):
            # A nested one (Keras 2.0-2.1 functional models) keeps the name its node gives it: its weights' group.
            model["config"] = {"name": model.get("name") or "sequential", "layers": model["config"]}
            changes.append("sequential-list-config")
        _explicit_sequential_input(model, changes)
    for layer in model_layers(model):
        _normalize_layer(layer, changes, in_functional=model["class_name"] in FUNCTIONAL_CLASSES, keras3=keras3)
        if keras3 and model["class_name"] == "Sequential" and layer["class_name"] in FUNCTIONAL_CLASSES:
            _single_output(layer, changes)
        if model["class_name"] in FUNCTIONAL_CLASSES and layer["class_name"] == "Sequential":
            _sequential_to_functional(layer, changes)
    if model["class_name"] in FUNCTIONAL_CLASSES:
        _inline_consumed_models(model, changes)
        names = {layer_name(layer) for layer in model_layers(model)}
        for layer in model_layers(model) if keras3 else []:  # tf_keras reads its own node format
            _tensor_keywords(layer, names, changes)


def _single_output(model, changes):
    """A functional model of one output inside a Sequential: its output as one tensor, not a list of one (Keras 3's
    Sequential hands the list to the next layer: `Cannot convert '((None, 4), 2)' to a shape`)."""
    config = model.get("config")
    outputs = config.get("output_layers") if isinstance(config, dict) else None
    if isinstance(outputs, list) and len(outputs) == 1 and isinstance(outputs[0], list) and len(outputs[0]) == 3:
        config["output_layers"] = list(outputs[0])
        changes.append("nested-single-output")


def _tensor_keywords(layer, names, changes):
    """A call with tensors among its keywords (tf.keras 2.x: ``MultiHeadAttention(query, value=v)``) in Keras 3's
    node format: its legacy one passes ``['input_2', 0, 0]`` to the layer as a plain list."""
    nodes = layer.get("inbound_nodes")
    if not isinstance(nodes, list):
        return
    for index, node in enumerate(nodes):
        if not (
            isinstance(node, list) and node and all(isinstance(entry, list) and len(entry) in (3, 4) for entry in node)
        ):
            continue
        keywords = next((entry[3] for entry in node if len(entry) == 4 and isinstance(entry[3], dict)), {})
        states = layer.get("class_name") in _RECURRENT and len(node) > 1  # Keras 2: initial_state as extra inputs
        if not states and not any(_is_history(value, names) for value in keywords.values()):
            continue
        inputs = [_keras_tensor(entry[:3]) for entry in node]
        arguments = {
            key: _keras_tensor(value) if _is_history(value, names) else value for key, value in keywords.items()
        }
        if states:
            inputs, arguments["initial_state"] = inputs[:1], inputs[1:]
        nodes[index] = {"args": [inputs[0] if len(inputs) == 1 else inputs], "kwargs": arguments}
        changes.append("node-tensor-keywords")


#: Layers that Keras 2 called with their initial states as extra inputs of the same node.
_RECURRENT = ("LSTM", "GRU", "SimpleRNN", "RNN", "ConvLSTM2D", "Bidirectional", "CuDNNLSTM", "CuDNNGRU")


def _is_history(value, names):
    return (
        isinstance(value, list) and len(value) == 3 and value[0] in names and all(isinstance(v, int) for v in value[1:])
    )


def _keras_tensor(history):
    """Keras 3's serialised reference to a layer's output tensor (its shape is a placeholder: the tensor is looked
    up by its history when the model is rebuilt)."""
    return {
        "class_name": "__keras_tensor__",
        "config": {"shape": [], "dtype": "float32", "keras_history": list(history)},
    }


#: Layer configs that Keras 3's legacy reader misbuilds and its native reader builds as written: (rule, test).
_NATIVE_READER = (
    # The legacy reader keeps an `axis` list of one axis only (keras/src/legacy/saving/saving_utils.py).
    ("several-axes", lambda cls, config: isinstance(config.get("axis"), list) and len(config["axis"]) > 1),
    # It turns the string 'dot' into the function keras.ops.dot.
    ("attention-score-mode", lambda cls, config: cls == "Attention" and isinstance(config.get("score_mode"), str)),
)


#: Modules that tf_keras 2.x's JSON names for its own classes (``keras.layers``, ``keras.initializers``, and
#: ``tf_keras.src.engine.functional`` for a nested model).
_TF_KERAS_MODULES = ("keras.", "tf_keras.")


def _tf_keras_modules(value, changes):
    """Take tf_keras' ``module`` and ``registered_name`` off its own classes' configs, nested ones included: Keras 3
    then reads the config with its legacy reader, as it reads the same model's HDF5 config (which has neither).

    Only the configs of tf_keras' own classes are entered: a class of the user's (a module of theirs, or none
    named, as in tf_keras' HDF5 config) reads its config in its own ``from_config``, often with Keras 3's native
    deserializer (``serialize_keras_object(self.sublayers)``), which finds Keras' own classes by their ``module``.
    """
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if (
                "class_name" in item
                and str(item.get("module")).startswith(_TF_KERAS_MODULES)
                and "registered_name" in item  # tf_keras writes both; mgpu-io's own rules add `module` alone
                and item["registered_name"] in (None, item["class_name"])
            ):
                del item["module"]
                item.pop("registered_name", None)
                changes.append("tf-keras-module")
            elif "class_name" in item:
                continue  # a class that is not tf_keras' own: its config is the user's
            stack.extend(v for k, v in item.items() if k != "layers")  # a model's layers: normalised one by one
        elif isinstance(item, list):
            stack.extend(item)


def _normalize_layer(layer, changes, in_functional, keras3=True):
    config = layer.get("config")
    if keras3:
        _tf_keras_modules(layer, changes)
    if layer["class_name"] in MODEL_CLASSES:
        _normalize_model(layer, changes, top_level=False, keras3=keras3)
        return
    if not isinstance(config, dict):
        return
    if config.get("name") is None and isinstance(layer.get("name"), str):
        config["name"] = layer["name"]  # tf_keras' JSON of a class named `_Scale`: `private__scale` is outside only
        changes.append("layer-name-from-node")
    if layer["class_name"] in SEPARABLE_CLASSES and any(key in config for key in _UNUSED_KERNEL_ARGUMENTS):
        for key in _UNUSED_KERNEL_ARGUMENTS:  # tf.keras' Conv base class wrote them; the layer never used them
            config.pop(key, None)
        changes.append("separable-kernel-arguments")
    for rule, misread in _NATIVE_READER if keras3 and "module" not in layer else ():
        if misread(layer["class_name"], config):
            layer["module"] = "keras.layers"  # Keras 3 then builds the layer with its native reader
            changes.append(rule)
            break
    if keras3 and layer["class_name"] == "Bidirectional":
        _backward_of_backwards(config, changes)
    if keras3 and layer["class_name"] in INFERENCE_IDENTITY:
        layer["class_name"] = "Identity"
        for key in [key for key in config if key not in _IDENTITY_KEYS]:
            del config[key]
        changes.append("augmentation-identity")
    if in_functional and layer["class_name"] != "InputLayer" and "batch_input_shape" in config:
        del config["batch_input_shape"]  # the InputLayer carries the shape; Keras 3 would add a batch axis
        changes.append("functional-drop-batch-input-shape")
    for key, value in config.items():
        if isinstance(value, dict) and "class_name" in value and isinstance(value.get("config"), dict):
            if key in WRAPPED_LAYER_KEYS:
                _normalize_layer(value, changes, in_functional=False, keras3=keras3)
                value.setdefault("module", "keras.layers")  # after: the inner layer's own tf_keras module goes
                changes.append("nested-layer-module")
            elif "dtype" in value["config"] and key.endswith(("_initializer", "_regularizer", "_constraint")):
                del value["config"]["dtype"]
                changes.append("initializer-dtype")
    for cell in config.get("cells") if isinstance(config.get("cells"), list) else []:  # StackedRNNCells
        if isinstance(cell, dict) and "class_name" in cell and isinstance(cell.get("config"), dict):
            _normalize_layer(cell, changes, in_functional=False, keras3=keras3)
            cell.setdefault("module", "keras.layers")
            changes.append("nested-layer-module")


#: tf.keras 2.x augmentation layers that Keras 3 does not have and that are the identity at inference (their
#: ``call`` returns the inputs unless ``training``).
INFERENCE_IDENTITY = ("RandomHeight", "RandomWidth")
_IDENTITY_KEYS = ("name", "trainable", "dtype", "batch_input_shape")


def _backward_of_backwards(config, changes):
    """``Bidirectional(LSTM(..., go_backwards=True))``: Keras 2 and tf_keras ran the layer as given (backwards) and a
    copy with ``go_backwards`` flipped (forwards) as the backward direction. Keras 3 sets ``go_backwards=True`` on
    its copy and refuses the pair; given that copy as ``backward_layer``, it computes what Keras 2 did."""
    inner = config.get("layer")
    settings = inner.get("config") if isinstance(inner, dict) else None
    if (
        config.get("backward_layer") is not None
        or not isinstance(settings, dict)
        or settings.get("go_backwards") is not True
    ):
        return
    backward = copy_config(inner)
    backward["config"]["go_backwards"] = False
    backward["config"]["name"] = f"backward_{settings.get('name', 'layer')}"
    config["backward_layer"] = backward
    changes.append("bidirectional-go-backwards")


#: The fix of a config that Keras 3 cannot be given: write it as its writer did, for tf_keras.
_KEEP_CONFIG_FIX = ("Pass ", Param("keep_config", True), " to write the config as the writer did (tf_keras loads it)")


def _rename_scoped_layers(model, changes):
    """Layer names with a ``/`` (keras_applications' DenseNet: ``conv1/conv``) get ``_``: Keras 3 refuses them."""
    layers = model_layers(model)
    scoped = [layer for layer in layers if isinstance(layer_name(layer), str) and "/" in layer_name(layer)]
    if not scoped:
        return
    names = {layer_name(layer) for layer in layers}
    renamed = {layer_name(layer): layer_name(layer).replace("/", "_") for layer in scoped}
    clashes = sorted(new for new in renamed.values() if new in names)
    if clashes or len(set(renamed.values())) != len(renamed):
        raise UnsupportedModel(
            problem="Layer names with '/' cannot be renamed for Keras 3: the new names are taken",
            expected="unique names after replacing '/' with '_'",
            received=str(clashes or sorted(renamed)),
            fix=_KEEP_CONFIG_FIX,
        )
    for layer in layers:
        old = layer_name(layer)
        if old in renamed:
            if "name" in layer:
                layer["name"] = renamed[old]
            if isinstance(layer.get("config"), dict):
                layer["config"]["name"] = renamed[old]
        for node in layer.get("inbound_nodes") or []:
            for entry in node if isinstance(node, list) else []:
                if isinstance(entry, list) and entry and entry[0] in renamed:
                    entry[0] = renamed[entry[0]]
    if isinstance(model.get("config"), dict):
        for key in ("input_layers", "output_layers"):
            refs = model["config"].get(key) or []
            for ref in [refs] if refs and isinstance(refs[0], str) else refs:
                if isinstance(ref, list) and ref and ref[0] in renamed:
                    ref[0] = renamed[ref[0]]
    changes.append("layer-name-slash")


def _explicit_sequential_input(model, changes):
    """Give a Sequential an explicit InputLayer instead of ``batch_input_shape`` on its first layer."""
    layers = model["config"]["layers"]
    if not layers or layers[0]["class_name"] == "InputLayer":
        return
    first = layers[0]["config"]
    if "batch_input_shape" not in first:
        return
    layers.insert(
        0,
        {
            "class_name": "InputLayer",
            "config": {
                "batch_input_shape": first.pop("batch_input_shape"),
                "dtype": first.get("dtype", "float32"),
                "sparse": False,
                "name": f"{first['name']}_input",
            },
        },
    )
    changes.append("sequential-explicit-input")


def _sequential_to_functional(layer, changes):
    """Turn a nested Sequential into the equivalent functional config, whose node indices both Kerases agree on."""
    layers = layer["config"]["layers"]
    if not layers or layers[0]["class_name"] != "InputLayer":
        return  # no known input shape: left as written
    chained = []
    previous = None
    for sub in layers:
        sub = dict(sub, name=layer_name(sub), inbound_nodes=[[[previous, 0, 0, {}]]] if previous else [])
        chained.append(sub)
        previous = sub["name"]
    layer["class_name"] = "Model"
    layer["config"] = {
        "name": layer["config"].get("name", layer_name(layer)),
        "layers": chained,
        "input_layers": [[chained[0]["name"], 0, 0]],
        "output_layers": [[chained[-1]["name"], 0, 0]],
    }
    changes.append("nested-sequential-as-functional")


def _inline_consumed_models(model, changes):
    """Inline every nested functional model whose outputs feed another layer of ``model``.

    Keras 2 and tf_keras count a nested model's calls from node 1 (node 0 is its own graph); Keras 3's legacy loader
    does so for ``output_layers`` but not for layers that consume the nested model, so no single config with such
    a consumer loads in both. Inlined, the nested model's layers become shared layers of the parent: the same
    computation, the same weights (one group per inner layer), node indices that both loaders read alike.
    """
    while True:
        layers = model["config"]["layers"]
        consumed = {entry[0] for layer in layers for node in layer.get("inbound_nodes") or [] for entry in node}
        nested = next(
            (lyr for lyr in layers if lyr["class_name"] in FUNCTIONAL_CLASSES and layer_name(lyr) in consumed), None
        )
        if nested is None:
            return
        _inline(model, nested)
        changes.append("nested-model-inlined")


def _inline(model, nested):
    name = layer_name(nested)
    inner = nested["config"]
    inner_inputs = [ref[0] for ref in inner["input_layers"]]
    inner_layers = [lyr for lyr in inner["layers"] if layer_name(lyr) not in inner_inputs]
    counts = {layer_name(lyr): len(lyr.get("inbound_nodes") or []) for lyr in inner_layers}
    calls = nested.get("inbound_nodes") or []
    clashes = set(counts) & {layer_name(lyr) for lyr in model["config"]["layers"] if lyr is not nested}
    if clashes:
        raise UnsupportedModel(
            problem=f"The nested model {name!r} cannot be inlined for Keras 3: its layer names are used outside it too",
            expected="unique layer names",
            received=str(sorted(clashes)),
            fix=_KEEP_CONFIG_FIX,
        )

    def at_call(entry, call):
        target, index, tensor, rest = entry[0], entry[1], entry[2], list(entry[3:])
        if target in inner_inputs:
            source = calls[call][inner_inputs.index(target)]
            return [source[0], source[1], source[2], *rest]
        return [target, call * counts[target] + index, tensor, *rest]

    def outer(entry):
        if entry[0] != name:
            return entry
        call = entry[1] - 1  # a nested model's calls count from 1
        inner_output = inner["output_layers"][entry[2]]
        return at_call(list(inner_output[:3]) + list(entry[3:]), call)

    for layer in inner_layers:
        own = layer.get("inbound_nodes") or []
        layer["inbound_nodes"] = [[at_call(e, c) for e in node] for c in range(len(calls)) for node in own]
    rebuilt = []
    for layer in model["config"]["layers"]:
        if layer is nested:
            rebuilt.extend(inner_layers)
            continue
        layer["inbound_nodes"] = [[outer(e) for e in node] for node in layer.get("inbound_nodes") or []]
        rebuilt.append(layer)
    model["config"]["layers"] = rebuilt
    model["config"]["output_layers"] = [outer(ref) for ref in model["config"]["output_layers"]]


#: Layer classes that Keras 3 does not have, and what they were.
REMOVED_CLASSES = {
    "TensorFlowOpLayer": "a TensorFlow op that tf.keras 2.x wrapped as a layer when it was called on Keras tensors",
    "TFOpLambda": "a TensorFlow function that tf.keras 2.4+ wrapped as a layer when it was called on Keras tensors",
    "SlicingOpLambda": "a tensor slice that tf.keras 2.4+ wrapped as a layer",
    "Highway": "a Keras 1 layer (kept in Keras 2.0-2.3 as a legacy layer)",
    "RandomFourierFeatures": "an experimental tf.keras layer (tf.keras.layers.experimental)",
    "MaxoutDense": "a Keras 1 layer (kept in Keras 2.0-2.3 as a legacy layer)",
    "Merge": "Keras 1's merge layer (kept in Keras 2.0-2.1 as a legacy layer; Keras 2.2 and 3 have Add, "
    "Concatenate, Multiply, Average, Maximum and Dot instead)",
}


#: The removed classes that tf_keras still builds.
TF_KERAS_HAS = ("TensorFlowOpLayer", "TFOpLambda", "SlicingOpLambda")


def _refuse_removed_classes(config, target=KERAS3):
    for layer in walk_layers(config, wrapped=True):
        if isinstance(layer, dict) and layer.get("class_name") in REMOVED_CLASSES:
            if target != KERAS3 and layer["class_name"] in TF_KERAS_HAS:
                continue  # tf_keras builds it as the writer stored it
            cls = layer["class_name"]
            elsewhere = (
                (
                    ", or pass ",
                    Param("keep_config", True),
                    " and ",
                    Param("target", "tf_keras"),
                    " for tf_keras, which has the class",
                )
                if cls in TF_KERAS_HAS
                else ()
            )
            raise UnsupportedModel(
                problem=f"Layer {layer_name(layer)!r} is a {cls}: {REMOVED_CLASSES[cls]}, which Keras 3 does not have",
                expected="layers that Keras 3 builds",
                received=f"class_name={cls!r}",
                fix=(
                    "Rebuild the template in code (Keras 3 ops for TensorFlow calls) and load the weights with "
                    "mgpu_io.transfer_weights",
                    *elsewhere,
                ),
            )


def _rewrite_config(config, context):
    _refuse_removed_classes(config, context.target)
    changes = []
    _normalize_model(config, changes, top_level=True, keras3=context.target == KERAS3)
    return list(dict.fromkeys(changes))


FAMILY = Family(
    name="structure",
    summary="config structures that Keras 3's legacy loader misreads",
    rules=(
        Rule(
            "sequential-list-config",
            "a Keras <= 2.1 Sequential config written as a bare list gets a dict",
            "Keras 3: `TypeError: pop expected at most 1 argument, got 2`",
            (),
        ),
        Rule(
            "sequential-explicit-input",
            "`batch_input_shape` on a Sequential's first layer becomes an explicit InputLayer",
            "Keras 3 adds a second batch axis: `(None, None, 400, 3)`",
            ("keras224", "keras231", "tfkeras115"),
        ),
        Rule(
            "functional-drop-batch-input-shape",
            "`batch_input_shape` on non-input layers of a functional model is dropped (the InputLayer carries it)",
            "the same second batch axis",
            (),
        ),
        Rule(
            "nested-single-output",
            "a functional model of one output inside a Sequential gives that output as one tensor, not a list of one",
            "Keras 3's Sequential hands the list to the next layer: `Cannot convert '((None, 4), 2)' to a shape`",
            (),
        ),
        Rule(
            "layer-name-from-node",
            "a layer config without a name (tf_keras' JSON of a class whose name starts with `_`, which tf_keras "
            "names `private__scale`) gets the name its functional node gives it",
            "Keras 3 names the layer itself (`scale_1`), and its stored weights fit no layer: `Weights do not fit "
            "layer #1 (named scale_1) ... Received: []`",
            (),
        ),
        Rule(
            "tf-keras-module",
            "tf_keras 2.x JSON (`to_json()`): its own classes lose `module` and `registered_name` "
            "(`keras.layers`, `tf_keras.src.engine.functional`), as in the same model's HDF5 config",
            "Keras 3 reads a config with a `module` natively: `BatchNormalization could not be deserialized "
            "properly` (tf_keras' arguments), `Dense ... {'batch_input_shape': ...}`, `Could not locate class "
            "'Functional'`",
            (),
        ),
        Rule(
            "nested-layer-module",
            "a `Bidirectional`/`TimeDistributed` layer's inner layer config (and an "
            "`RNN`'s cells) gets `module: keras.layers`",
            "Keras 3: `Could not locate class 'LSTM'`",
            ("keras224",),
        ),
        Rule(
            "bidirectional-go-backwards",
            "`Bidirectional` around a recurrent layer built with `go_backwards=True` gets its backward copy "
            "(`go_backwards=False`, as Keras 2 and tf_keras made it) as `backward_layer`",
            "Keras 3: `Forward layer and backward layer should have different `go_backwards` value`",
            ("k205", "k212", "k224"),
        ),
        Rule(
            "augmentation-identity",
            "tf.keras 2.x `RandomHeight`/`RandomWidth` (augmentations that return their inputs at inference) become "
            "`Identity`: the same predictions; the augmentation is gone from training",
            "Keras 3: `Could not locate class 'RandomHeight'` (Keras 3 has no such layer)",
            (),
        ),
        Rule(
            "several-axes",
            "a layer with a list of several axes (`LayerNormalization(axis=[1, 2])`) gets "
            "`module: keras.layers`, so that Keras 3 builds it with its native reader",
            "Keras 3's legacy reader drops an `axis` list of more than one axis (the layer normalises the last "
            "axis only): a weight-shape mismatch, or other predictions",
            (),
        ),
        Rule(
            "attention-score-mode",
            "an `Attention` layer with a `score_mode` (TF 2.4+, tf_keras) gets `module: "
            "keras.layers`, so that Keras 3 builds it with its native reader",
            "Keras 3's legacy reader turns "
            "`score_mode='dot'` into the function `dot`: `Invalid value for argument score_mode`",
            (),
        ),
        Rule(
            "node-tensor-keywords",
            "a layer call with tensors among its keywords (tf.keras 2.x "
            "`MultiHeadAttention(query, value=v)`), or a recurrent layer called with `initial_state` (which Keras 2 "
            "stored as extra inputs: seq2seq decoders), is written in Keras 3's node format",
            "Keras 3's legacy reader passes `['input_2', 0, 0]` to the layer as a list: `MultiHeadAttention.build() "
            "missing 1 required positional argument: 'value_shape'`; `Layer \"decoder\" expects 1 input(s), but it "
            "received 3 input tensors`",
            (),
        ),
        Rule(
            "layer-name-slash",
            "layer names with `/` (keras_applications' DenseNet: `conv1/conv`) get `_` "
            "(`conv1_conv`); their weights follow them",
            "Keras 3: `Argument 'name' must be a string and cannot contain character '/'`",
            ("tfkeras115",),
        ),
        Rule(
            "separable-kernel-arguments",
            "tf.keras `SeparableConv1D/2D` configs lose the unused `kernel_*` "
            "arguments (their kernels are `depthwise_*` and `pointwise_*`)",
            "Keras 3: `SeparableConv2D.__init__() got an unexpected keyword argument 'kernel_initializer'`",
            ("tfkeras115",),
        ),
        Rule(
            "initializer-dtype",
            "tf.keras initializer configs lose their `dtype`",
            "Keras 3: `GlorotUniform.__init__() got an unexpected keyword argument 'dtype'`",
            ("tfkeras115",),
        ),
        Rule(
            "nested-sequential-as-functional",
            "a nested Sequential whose output feeds another layer becomes the equivalent functional config",
            "see `nested-model-inlined`",
            ("keras224",),
        ),
        Rule(
            "nested-model-inlined",
            "a nested model whose output feeds another layer (a Siamese branch) is "
            "inlined as shared layers: same weights, same computation",
            "Keras 3's legacy loader applies Keras 2's node offset to `output_layers` but not to consuming "
            "layers, so no nested config loads in both Keras 3 and tf_keras",
            ("keras224",),
        ),
    ),
    rewrite_config=_rewrite_config,
)
