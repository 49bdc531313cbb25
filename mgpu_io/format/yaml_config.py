"""Read a ``model.to_yaml()`` config (Keras 2.x, tf.keras) as plain data, with a safe YAML loader only.

Keras 3 and TF >= 2.6 removed ``model_from_yaml``, and ``yaml.safe_load`` refuses these files: the old writers
tagged Python objects in them (docs/tf2-writers.md §3). Each known tag is mapped to the plain value it stands for,
and any other Python tag is refused; nothing is ever constructed, imported or run:

- ``!!python/tuple`` (every writer: shapes) -> a list;
- ``!!python/object/apply:builtins.dict`` (TF 2.0: the slice Lambdas' ``arguments``) -> its mapping;
- ``!!python/object/apply:...data_structures.ListWrapper`` (tf.keras 2.0-2.3: BatchNormalization ``axis``) -> its
  list;
- ``!!python/object/apply:...tensor_shape.TensorShape`` / ``...Dimension`` (TF 2.2: ``build_input_shape``) -> a list
  of ints and nulls;
- ``!!python/object/new:tensorflow.python.util.module_wrapper.TFModuleWrapper {state: tensorflow}`` (Keras 2.1.6 on
  TF 1.15: the slice Lambda's closure over the ``tensorflow`` module, which made its ``save()`` and ``to_json()``
  fail) -> the text ``"<module tensorflow>"``; nothing is imported.

YAML anchors and aliases (``&id001``/``*id001``, which the writers used for repeated shapes) are expanded, up to
:data:`MAX_NODES` nodes in all, so that a few kilobytes of aliases cannot become gigabytes of config.
"""

import math

from mgpu_io.errors import MissingDependency, NotAModelFile, first_line

#: Largest YAML config read (YAML is parsed in Python; Keras' configs are kilobytes).
MAX_YAML_BYTES = 16 << 20
#: Most nodes a YAML config may expand to, aliases counted each time they are used.
MAX_NODES = 2_000_000

_APPLY = "tag:yaml.org,2002:python/object/apply:"
_NEW = "tag:yaml.org,2002:python/object/new:"
#: Python objects the writers created with ``object/new`` (module objects, closed over by slice Lambdas).
_KNOWN_NEW = ("tensorflow.python.util.module_wrapper.TFModuleWrapper",)
#: The Python objects the old writers put in their YAML, and how each becomes plain data.
_KNOWN_APPLY = {
    "builtins.dict": "mapping",
    "tensorflow.python.training.tracking.data_structures.ListWrapper": "first",
    "tensorflow.python.framework.tensor_shape.TensorShape": "first",
    "tensorflow.python.framework.tensor_shape.Dimension": "first",
}


def _yaml():
    try:
        import yaml
    except ImportError:
        raise MissingDependency(
            problem="Reading a YAML config needs PyYAML, which is not installed",
            expected="an importable `yaml`",
            received="ImportError",
            fix="Install it: pip install pyyaml (mgpu-io declares it), or pass the JSON of to_json()",
        ) from None
    return yaml


def _loader(path):
    yaml = _yaml()
    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class KerasYamlLoader(base):
        """PyYAML's safe loader, plus the tags Keras' writers used, each read as plain data."""

    def as_list(loader, node):
        return loader.construct_sequence(node, deep=True)

    def apply(loader, suffix, node):
        kind = _KNOWN_APPLY.get(suffix)
        if kind is None:
            raise NotAModelFile(
                problem="The YAML config holds a Python object that Keras' writers never wrote",
                parameter="filepath",
                expected="only the tags of to_yaml() (tuples, dicts, ListWrapper, TensorShape)",
                received=f"filepath={path} (tag !!python/object/apply:{suffix})",
                fix="The file is not a Keras config; it is never constructed",
            )
        if isinstance(node, yaml.MappingNode):
            value = loader.construct_mapping(node, deep=True)
            args = value.get("args") or []
        else:
            args = loader.construct_sequence(node, deep=True)
        if kind == "mapping":
            return dict(args[0]) if args and isinstance(args[0], dict) else {}
        return args[0] if args else None

    def new(loader, suffix, node):
        if suffix not in _KNOWN_NEW:
            return refuse(loader, suffix, node)
        state = loader.construct_mapping(node, deep=True).get("state") if isinstance(node, yaml.MappingNode) else None
        return f"<module {state if isinstance(state, str) else '?'}>"

    def refuse(loader, suffix, node):
        raise NotAModelFile(
            problem="The YAML config holds a Python object tag",
            parameter="filepath",
            expected="only the tags of to_yaml()",
            received=f"filepath={path} (tag {node.tag})",
            fix="The file is not a Keras config; it is never constructed",
        )

    def not_keras(loader, node):
        raise NotAModelFile(
            problem="The YAML config holds a value that Keras' writers never wrote",
            parameter="filepath",
            expected="the plain values of to_yaml() (strings, numbers, lists, mappings)",
            received=f"filepath={path} (tag {node.tag})",
            fix="The file is not a Keras config; pass the config as the writer saved it, or its JSON",
        )

    # A date-like scalar that to_yaml() would have quoted (a hand edit) is the text it is, not a date; binary data
    # and sets are nothing a config holds (and no JSON output could carry them).
    KerasYamlLoader.add_constructor("tag:yaml.org,2002:timestamp", lambda loader, node: loader.construct_scalar(node))
    KerasYamlLoader.add_constructor("tag:yaml.org,2002:binary", not_keras)
    KerasYamlLoader.add_constructor("tag:yaml.org,2002:set", not_keras)
    KerasYamlLoader.add_constructor("tag:yaml.org,2002:python/tuple", as_list)
    KerasYamlLoader.add_multi_constructor(_APPLY, apply)
    KerasYamlLoader.add_multi_constructor(_NEW, new)
    KerasYamlLoader.add_multi_constructor("tag:yaml.org,2002:python/", refuse)
    KerasYamlLoader.add_multi_constructor("!", refuse)
    return KerasYamlLoader


def load_yaml_config(path, text):
    """The decoded config of a ``to_yaml()`` file (plain dicts, lists and scalars).

    Raises:
        NotAModelFile: not YAML, an unknown Python tag, too large, or aliases that expand too far.

    Example:
        >>> config = load_yaml_config("m.yaml", "class_name: Model\\nconfig:\\n  shape: !!python/tuple [null, 6]\\n")
        >>> config
        {'class_name': 'Model', 'config': {'shape': [None, 6]}}
    """
    yaml = _yaml()
    try:
        value = yaml.load(text, Loader=_loader(path))
    except yaml.YAMLError as error:
        first = first_line(error)
        raise NotAModelFile(
            problem="The YAML config cannot be parsed",
            parameter="filepath",
            expected="the YAML of model.to_yaml()",
            received=f"filepath={path} ({first})",
            fix="Pass the config as the writer saved it, or its JSON",
        ) from None
    nodes = _count_nodes(value, MAX_NODES, path)
    if nodes > MAX_NODES:
        raise NotAModelFile(
            problem="The YAML config expands to too many values",
            parameter="filepath",
            expected=f"at most {MAX_NODES} (Keras' configs hold thousands)",
            received=f"filepath={path} (more, through YAML aliases)",
            fix="The file is damaged or hostile",
        )
    return value


def _count_nodes(value, limit, path="the file"):
    """How many values ``value`` holds with every alias expanded, counting no further than ``limit + 1``."""
    count, stack = 0, [value]
    while stack and count <= limit:
        item = stack.pop()
        count += 1
        if isinstance(item, float) and not math.isfinite(item):
            raise NotAModelFile(
                problem=f"The YAML config holds {item}",
                parameter="filepath",
                expected="finite numbers: Keras never writes NaN or infinity in a config",
                received=f"filepath={path}",
                fix="The file is damaged or hostile",
            )
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return count
