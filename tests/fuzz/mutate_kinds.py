"""Mutators for the input kinds beyond HDF5 and JSON (issue 21): YAML configs, TF 2.x SavedModel folders
(``saved_model.pb`` and ``variables/``) and TF-format checkpoints (index, data shards, and the architecture JSON
given beside them with ``config=``).

They follow :mod:`mutate`'s rules: each is a seeded class applied to a COPY of a real fixture (fixtures/tf2, written
by the real tf.keras 2.0-2.3 and Keras 2.x writers), never to the fixture itself. Byte-level mutators edit the
copy's bytes; structural ones parse what the writer wrote and write it back damaged: the Keras JSON and the object
graph inside ``saved_model.pb`` through TensorFlow's own protocol buffers, and a checkpoint's object graph and
tensors written again by TensorFlow's own ``SaveV2`` op (so the table, its checksums and the shards are as
TensorFlow writes them, and only the content is hostile). TensorFlow is imported by those mutators only, once.

The fixture kinds (as fixtures/tf2/manifest.json spells them): ``yaml``, ``savedmodel``, ``tf_checkpoint``.
A case's input is ``input.yaml``, the folder ``input_savedmodel/``, or ``input_ckpt.index`` with its shards and
``arch.json`` (the case's ``config``) beside it.

Stored bytecode (the Lambda functions that issue 22 decompiles) is not mutated here: that issue's mutators register
themselves with :func:`mutate.register` (kind ``"bytecode"``), and the harness runs them like these.
"""

import functools
import json
import random
import shutil
from pathlib import Path

import numpy as np

import mutate
from mutate import Mutator, NotApplicable

TF2 = mutate.ROOT / "fixtures" / "tf2"
YAML, SAVEDMODEL, TF_CHECKPOINT = "yaml", "savedmodel", "tf_checkpoint"
KINDS = (YAML, SAVEDMODEL, TF_CHECKPOINT)


@functools.cache
def manifest():
    """The fixtures/tf2 entries of the kinds above, each with its ``root`` folder (the largest left out: speed)."""
    entries = json.loads((TF2 / "manifest.json").read_text())
    return tuple(dict(e, root=str(TF2)) for e in entries if e["file_type"] in KINDS)


# ---------------------------------------------------------------------------------------------------------------
# byte-level damage, shared by every kind


def damage_bytes(data, rng):
    """``data`` damaged one of the ways :mod:`mutate`'s byte mutators damage an HDF5 file; returns (bytes, what)."""
    n = len(data)
    how = rng.choice(["truncate", "truncate", "bitflip", "bitflip", "zero", "append", "prepend", "empty", "dup"])
    if how == "truncate" and n:
        cut = rng.choice([1, 8, rng.randrange(n), n // 2, n - 1])
        return data[:cut], f"truncated to {cut} of {n} bytes"
    if how == "bitflip" and n:
        count = rng.choice([1, 1, 2, 8, 32])
        data = bytearray(data)
        offsets = sorted(rng.randrange(n) for _ in range(count))
        for offset in offsets:
            data[offset] ^= 1 << rng.randrange(8)
        return bytes(data), f"{count} bits flipped at {offsets[:6]}"
    if how == "zero" and n:
        start = rng.randrange(n)
        end = min(n, start + rng.choice([16, 512, 4096]))
        return data[:start] + bytes(end - start) + data[end:], f"zeroed [{start}, {end})"
    if how == "append":
        count = rng.choice([1, 512, 65536])
        return data + rng.randbytes(count), f"{count} random bytes appended"
    if how == "prepend":
        count = rng.choice([1, 16, 512])
        return rng.randbytes(count) + data, f"{count} random bytes prepended"
    if how == "dup" and n:
        start = rng.randrange(n)
        return data[:start] + data[start:] + data[start:], f"bytes from {start} repeated"
    return b"", "emptied"


# ---------------------------------------------------------------------------------------------------------------
# YAML configs (model.to_yaml(), Keras <= 2.4 and tf.keras <= 2.5)


def _config_mutators():
    """The JSON config mutators of :mod:`mutate`, reused on the YAML's content (parsed, mutated, dumped again)."""
    return [m for m in mutate.MUTATORS if isinstance(m, mutate.ConfigMutator)]


class YamlConfig(Mutator):
    """The YAML's config damaged as :mod:`mutate`'s config mutators damage a JSON one (wrong types, deleted keys,
    deep nesting, huge numbers, a broken graph, control characters), then written back as YAML (or as the broken
    text itself, where the mutation left no valid JSON: YAML reads most JSON)."""

    kinds = (YAML,)

    def apply(self, src, dst, rng):
        import yaml

        class Loader(yaml.SafeLoader):  # to_yaml() tags tuples (!!python/tuple): read here as lists
            pass

        def plain(loader, suffix, node):  # every python/ tag read as the plain data under it
            if isinstance(node, yaml.SequenceNode):
                return loader.construct_sequence(node, deep=True)
            if isinstance(node, yaml.MappingNode):
                value = loader.construct_mapping(node, deep=True)
                return value.get("dictitems", value) if isinstance(value, dict) else value
            return loader.construct_scalar(node)

        Loader.add_multi_constructor("tag:yaml.org,2002:python/", plain)
        config = yaml.load(Path(src).read_text(encoding="utf8"), Loader=Loader)  # noqa: S506 - a safe loader
        mutator = rng.choice(_config_mutators())
        text, description = mutator.mutate_text(json.dumps(config), rng)
        try:
            value = json.loads(text)
            out = yaml.safe_dump(value, default_flow_style=rng.random() < 0.3, allow_unicode=rng.random() < 0.5)
            if rng.random() < 0.5:  # as to_yaml() writes shapes
                out = out.replace("batch_input_shape:\n", "batch_input_shape: !!python/tuple\n")
        except (ValueError, TypeError, RecursionError, yaml.YAMLError):
            out = text
        data = out.encode("utf8", "surrogateescape") if isinstance(out, str) else out
        Path(dst).write_bytes(data)
        return f"{mutator.name}: {description}"


_YAML_HOSTILE = {
    "python-apply": "!!python/object/apply:os.system ['touch PWNED']\n",
    "python-object": "class_name: Model\nconfig: !!python/object:os.PathLike {}\n",
    "python-name": "class_name: !!python/name:os.system ''\nconfig: {}\n",
    "python-module": "class_name: Model\nconfig: !!python/module:os\n",
    "laughs": "a: &a [x, x, x, x, x, x, x, x, x]\n"
    + "".join(f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
              f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n" for i in range(9))
    + "class_name: Model\nconfig: *j\n",
    "deep-flow": "class_name: Model\nconfig: " + "[" * 5000 + "]" * 5000 + "\n",
    "deep-block": "class_name: Model\nconfig:\n" + "".join("  " * i + "- \n" for i in range(1, 400)),
    "tabs": "class_name: Model\nconfig:\n\tname: m\n",
    "duplicate-keys": "class_name: Model\nclass_name: Sequential\nconfig: {name: m, layers: []}\n",
    "documents": "class_name: Model\nconfig: {name: m}\n---\nclass_name: Sequential\n",
    "merge-keys": "base: &b {name: m, layers: []}\nclass_name: Model\nconfig: {<<: *b, <<: *b}\n",
    "binary": "class_name: Model\nconfig: !!binary aGVsbG8=\n",
    "set": "class_name: Model\nconfig: !!set {a, b}\n",
    "timestamp": "class_name: 2001-12-14t21:59:43.10-05:00\nconfig: {name: 2002-12-14}\n",
    "empty": "",
    "comment": "# nothing here\n",
    "null": "~\n",
    "scalar": "Model\n",
    "huge-scalar": "class_name: Model\nconfig: {name: '" + "m" * 2_000_000 + "'}\n",
    "bom-utf16": "\ufeffclass_name: Model\n",
    "non-utf8": None,
    "unclosed": "class_name: Model\nconfig: {name: [m, \n",
    "anchor-loop": "a: &a [*a]\n",
    "unknown-tag": "class_name: Model\nconfig: !keras/layer {name: m}\n",
}


class YamlHostile(Mutator):
    """A YAML file that attacks its reader: Python object tags (a safe reader refuses them; an unsafe one would run
    ``touch PWNED``, which the harness would see), billion laughs through aliases, nesting 5,000 deep, tabs,
    duplicate keys, several documents, merge keys, binary and set tags, an empty or comment-only file, a 2 MB
    scalar, UTF-16 or undecodable bytes, an unclosed flow, an alias of itself, an unknown tag."""

    kinds = (YAML,)

    def apply(self, src, dst, rng):
        name = rng.choice(sorted(_YAML_HOSTILE))
        text = _YAML_HOSTILE[name]
        if name == "non-utf8":
            data = Path(src).read_bytes()
            at = rng.randrange(len(data))
            data = data[:at] + rng.choice([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\x00"]) + data[at:]
        elif name == "bom-utf16":
            data = (text + Path(src).read_text(encoding="utf8")).encode("utf-16")
        elif name in ("empty", "comment", "null", "scalar") or rng.random() < 0.5:
            data = text.encode("utf8")
        else:  # the hostile part inside the real file: appended as one more top-level key or document
            data = Path(src).read_bytes() + b"\n" + text.encode("utf8")
        Path(dst).write_bytes(data)
        return f"{name} ({len(data)} bytes)"


class YamlBytes(Mutator):
    """The YAML file's bytes damaged: truncated, bits flipped, a region zeroed, bytes appended or prepended,
    emptied, a part repeated."""

    kinds = (YAML,)

    def apply(self, src, dst, rng):
        data, description = damage_bytes(Path(src).read_bytes(), rng)
        Path(dst).write_bytes(data)
        return description


# ---------------------------------------------------------------------------------------------------------------
# SavedModel folders


def _savedmodel_files(folder):
    return sorted(p for p in Path(folder).rglob("*") if p.is_file())


class SavedModelBytes(Mutator):
    """One file of the SavedModel folder damaged byte by byte: ``saved_model.pb``, ``variables/variables.index`` or
    a ``variables.data-*`` shard (truncated, bits flipped, zeroed, appended, prepended, emptied, repeated)."""

    kinds = (SAVEDMODEL,)

    def apply(self, src, dst, rng):
        shutil.copytree(src, dst)
        target = rng.choice(_savedmodel_files(dst))
        data, description = damage_bytes(target.read_bytes(), rng)
        target.write_bytes(data)
        return f"{target.relative_to(dst)}: {description}"


class SavedModelFiles(Mutator):
    """The SavedModel folder's files moved about: ``variables/`` or one of its files missing, an extra or missing
    shard, ``saved_model.pb`` or ``variables/`` of another model, ``saved_model.pb`` a folder, a symbolic link
    out of the folder (to the fixture's own file outside it, or to /etc/passwd), ``variables`` a file."""

    kinds = (SAVEDMODEL,)

    def apply(self, src, dst, rng):
        shutil.copytree(src, dst)
        dst = Path(dst)
        others = [e for e in manifest() if e["file_type"] == SAVEDMODEL and e["file"] != Path(src).name]
        other = TF2 / rng.choice(others)["file"]
        how = rng.choice(["no-variables", "no-index", "no-data", "extra-shard", "other-pb", "other-variables",
                          "pb-folder", "link-out", "link-passwd", "variables-file", "no-pb-link"])
        variables = dst / "variables"
        if how == "no-variables":
            shutil.rmtree(variables)
        elif how == "no-index":
            (variables / "variables.index").unlink()
        elif how == "no-data":
            for shard in variables.glob("variables.data-*"):
                shard.unlink()
        elif how == "extra-shard":
            shard = next(variables.glob("variables.data-*"))
            (variables / "variables.data-00001-of-00002").write_bytes(shard.read_bytes()[::-1])
        elif how == "other-pb":
            shutil.copyfile(other / "saved_model.pb", dst / "saved_model.pb")
        elif how == "other-variables":
            shutil.rmtree(variables)
            shutil.copytree(other / "variables", variables)
        elif how == "pb-folder":
            (dst / "saved_model.pb").unlink()
            (dst / "saved_model.pb").mkdir()
        elif how in ("link-out", "no-pb-link"):
            name = rng.choice(["saved_model.pb", "variables/variables.index"]) if how == "link-out" else "saved_model.pb"
            (dst / name).unlink()
            (dst / name).symlink_to((Path(src) / name).resolve())
        elif how == "link-passwd":
            (variables / "variables.index").unlink()
            (variables / "variables.index").symlink_to("/etc/passwd")
        elif how == "variables-file":
            shutil.rmtree(variables)
            variables.write_bytes(b"not a folder")
        return how


_PB_MODULES = {}


def _protos():
    """TensorFlow's own protocol buffer classes (imported once, here only)."""
    if not _PB_MODULES:
        from tensorflow.core.protobuf import saved_model_pb2, trackable_object_graph_pb2

        _PB_MODULES.update(saved_model=saved_model_pb2, graph=trackable_object_graph_pb2)
    return _PB_MODULES


def _keras_nodes(graph):
    """Indices of the object graph's nodes that carry Keras JSON metadata."""
    return [i for i, node in enumerate(graph.nodes) if node.WhichOneof("kind") == "user_object"
            and node.user_object.metadata]


class SavedModelGraph(Mutator):
    """``saved_model.pb`` parsed with TensorFlow's protocol buffers and written back with hostile content: a
    Keras node's JSON metadata damaged as :mod:`mutate`'s config mutators damage a config; a node's identifier
    changed; child references out of range, to themselves, or in a cycle; a node's children removed or
    duplicated; a variable's shape or dtype changed; the graph emptied."""

    kinds = (SAVEDMODEL,)

    def apply(self, src, dst, rng):
        protos = _protos()
        shutil.copytree(src, dst)
        pb = Path(dst) / "saved_model.pb"
        model = protos["saved_model"].SavedModel()
        model.ParseFromString(pb.read_bytes())
        graph = model.meta_graphs[0].object_graph_def
        keras = _keras_nodes(graph)
        how = rng.choice(["metadata", "metadata", "metadata", "identifier", "child-out-of-range", "child-self",
                          "child-cycle", "drop-children", "duplicate-children", "variable-shape", "variable-dtype",
                          "empty-graph"])
        if how == "metadata":
            index = rng.choice(keras)
            mutator = rng.choice(_config_mutators())
            text, description = mutator.mutate_text(graph.nodes[index].user_object.metadata, rng)
            if isinstance(text, bytes):
                text = text.decode("utf8", "surrogateescape")
            graph.nodes[index].user_object.metadata = text.encode("utf8", "replace").decode("utf8")
            how = f"node {index} metadata, {mutator.name}: {description}"
        elif how == "identifier":
            index = rng.choice(keras)
            graph.nodes[index].user_object.identifier = rng.choice(
                ["_tf_keras_layer", "_tf_keras_network", "_tf_keras_model", "_tf_keras_sequential",
                 "_tf_keras_input_layer", "_generic_user_object", "", "\x1b[2J"])
            how = f"node {index} identifier -> {graph.nodes[index].user_object.identifier!r}"
        elif how.startswith("child"):
            index = rng.choice([i for i, node in enumerate(graph.nodes) if node.children])
            child = rng.choice(graph.nodes[index].children)
            child.node_id = {"child-out-of-range": len(graph.nodes) + rng.choice([0, 7, 1 << 30]),
                             "child-self": index, "child-cycle": 0}[how]
            how = f"node {index} child {child.local_name} -> {child.node_id}"
        elif how == "drop-children":
            index = rng.choice([i for i, node in enumerate(graph.nodes) if node.children])
            del graph.nodes[index].children[:]
            how = f"node {index} children removed"
        elif how == "duplicate-children":
            index = rng.choice([i for i, node in enumerate(graph.nodes) if node.children])
            graph.nodes[index].children.extend(list(graph.nodes[index].children) * rng.choice([1, 50]))
            how = f"node {index} children repeated"
        elif how.startswith("variable"):
            variables = [i for i, node in enumerate(graph.nodes) if node.WhichOneof("kind") == "variable"]
            if not variables:
                raise NotApplicable("no variable nodes")
            index = rng.choice(variables)
            variable = graph.nodes[index].variable
            if how == "variable-shape":
                del variable.shape.dim[:]
                for size in rng.choice([[], [0], [-1], [1 << 40, 1 << 40], [3, 3, 3, 3, 3, 3, 3, 3]]):
                    variable.shape.dim.add(size=size)
            else:
                variable.dtype = rng.choice([0, 7, 10, 20, 999])
            how = f"node {index} {how}"
        else:
            del graph.nodes[1:]
        pb.write_bytes(model.SerializeToString())
        return how


# ---------------------------------------------------------------------------------------------------------------
# TF-format checkpoints


def _checkpoint_files(src_index):
    """The index and its data shards, by name."""
    prefix = str(src_index)[: -len(".index")]
    folder = Path(prefix).parent
    return [Path(src_index)] + sorted(folder.glob(Path(prefix).name + ".data-*"))


def _copy_checkpoint(src_index, dst_index):
    """Copy the checkpoint (index and shards, renamed to ``dst_index``'s prefix) and the architecture beside it to
    ``arch.json``; return the shards' new paths."""
    src_prefix, dst_prefix = str(src_index)[: -len(".index")], str(dst_index)[: -len(".index")]
    copied = []
    for path in _checkpoint_files(src_index):
        target = Path(dst_prefix + str(path)[len(src_prefix):])
        shutil.copyfile(path, target)
        copied.append(target)
    config = Path(src_prefix.replace("_ckpt", "_config.json"))
    shutil.copyfile(config, Path(dst_index).parent / "arch.json")
    return copied


class CheckpointBytes(Mutator):
    """The checkpoint's index or a data shard damaged byte by byte; or a shard missing, an extra shard, a shard of
    another checkpoint, the index and a shard swapped."""

    kinds = (TF_CHECKPOINT,)

    def apply(self, src, dst, rng):
        files = _copy_checkpoint(src, dst)
        how = rng.choice(["bytes", "bytes", "bytes", "bytes", "no-shard", "extra-shard", "other-shard", "swap"])
        if how == "bytes":
            target = rng.choice(files)
            data, description = damage_bytes(target.read_bytes(), rng)
            target.write_bytes(data)
            return f"{target.name}: {description}"
        shards = files[1:]
        if how == "no-shard":
            rng.choice(shards).unlink()
        elif how == "extra-shard":
            prefix = str(dst)[: -len(".index")]
            Path(prefix + ".data-00007-of-00008").write_bytes(rng.randbytes(1024))
        elif how == "other-shard":
            others = [e for e in manifest() if e["file_type"] == TF_CHECKPOINT and e["file"] != Path(src).name]
            other = _checkpoint_files(TF2 / rng.choice(others)["file"])[1]
            shutil.copyfile(other, rng.choice(shards))
        else:
            index_bytes = files[0].read_bytes()
            files[0].write_bytes(shards[0].read_bytes())
            shards[0].write_bytes(index_bytes)
        return how


class CheckpointConfig(Mutator):
    """The architecture JSON given beside the checkpoint (``config=``) damaged as :mod:`mutate`'s config mutators
    damage a config: it is an input too."""

    kinds = (TF_CHECKPOINT,)

    def apply(self, src, dst, rng):
        _copy_checkpoint(src, dst)
        arch = Path(dst).parent / "arch.json"
        mutator = rng.choice(_config_mutators())
        text, description = mutator.mutate_text(arch.read_text(encoding="utf8"), rng)
        arch.write_bytes(text.encode("utf8", "surrogateescape") if isinstance(text, str) else text)
        return f"arch.json, {mutator.name}: {description}"


_OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"


class CheckpointGraph(Mutator):
    """The checkpoint read with TensorFlow's ``CheckpointReader`` and written again by TensorFlow's ``SaveV2``
    with hostile content: its object graph's child references out of range, to themselves or in a cycle, a node's
    children or attributes removed, an attribute's key pointing at no tensor, names with control characters; or a
    tensor of another shape or dtype, a tensor missing, NaN values, a huge scalar where a kernel was."""

    kinds = (TF_CHECKPOINT,)

    def apply(self, src, dst, rng):
        import tensorflow as tf

        _copy_checkpoint(src, dst)
        prefix = str(dst)[: -len(".index")]
        for path in _checkpoint_files(dst):
            path.unlink()
        src_prefix = str(src)[: -len(".index")]
        reader = tf.train.load_checkpoint(src_prefix)
        tensors = {name: reader.get_tensor(name) for name in reader.get_variable_to_dtype_map()}
        graph = _protos()["graph"].TrackableObjectGraph()
        graph.ParseFromString(tensors[_OBJECT_GRAPH_KEY])
        keys = sorted(name for name in tensors if name != _OBJECT_GRAPH_KEY)
        how = rng.choice(["child-out-of-range", "child-self", "child-cycle", "drop-children", "drop-attributes",
                          "dangling-key", "control-names", "tensor-shape", "tensor-dtype", "tensor-missing",
                          "tensor-nan", "tensor-scalar"])
        with_children = [i for i, node in enumerate(graph.nodes) if node.children]
        with_attributes = [i for i, node in enumerate(graph.nodes) if node.attributes]
        if how.startswith("child"):
            index = rng.choice(with_children)
            child = rng.choice(graph.nodes[index].children)
            child.node_id = {"child-out-of-range": len(graph.nodes) + rng.choice([0, 1 << 30]), "child-self": index,
                             "child-cycle": 0}[how]
            how = f"node {index} child {child.local_name} -> {child.node_id}"
        elif how == "drop-children":
            index = rng.choice(with_children)
            del graph.nodes[index].children[:]
            how = f"node {index} children removed"
        elif how == "drop-attributes":
            index = rng.choice(with_attributes)
            del graph.nodes[index].attributes[:]
            how = f"node {index} attributes removed"
        elif how == "dangling-key":
            index = rng.choice(with_attributes)
            graph.nodes[index].attributes[0].checkpoint_key = "no/such/tensor/.ATTRIBUTES/VARIABLE_VALUE"
            how = f"node {index} attribute points at no tensor"
        elif how == "control-names":
            index = rng.choice(with_children)
            graph.nodes[index].children[0].local_name = rng.choice(["\x1b[2J", "a\nb", "[red]x[/]", "../../x", ""])
            how = f"node {index} child renamed {graph.nodes[index].children[0].local_name!r}"
        else:
            key = rng.choice(keys)
            value = tensors[key]
            if how == "tensor-shape":
                tensors[key] = np.zeros(tuple(s + 1 for s in value.shape) or (2,), value.dtype)
            elif how == "tensor-dtype":
                tensors[key] = np.asarray(value).astype(rng.choice([np.int64, np.float16, np.bool_, np.uint8]))
            elif how == "tensor-missing":
                del tensors[key]
            elif how == "tensor-nan" and np.asarray(value).dtype.kind == "f":
                tensors[key] = np.full_like(value, np.nan)
            else:
                tensors[key] = np.float32(1e38)
            how = f"{how} {key}"
        tensors[_OBJECT_GRAPH_KEY] = graph.SerializeToString()
        names = sorted(tensors)
        values = [tf.constant(tensors[name]) for name in names]
        tf.raw_ops.SaveV2(prefix=prefix, tensor_names=names, shape_and_slices=[""] * len(names), tensors=values)
        return how


#: The mutators of this module, added to :data:`mutate.MUTATORS` by :func:`mutate.register`.
MUTATORS = [YamlConfig(), YamlHostile(), YamlBytes(), SavedModelBytes(), SavedModelFiles(), SavedModelGraph(),
            CheckpointBytes(), CheckpointConfig(), CheckpointGraph()]


def input_name(entry):
    """The name of a case's input for a fixture entry of these kinds."""
    return {YAML: "input.yaml", SAVEDMODEL: "input_savedmodel", TF_CHECKPOINT: "input_ckpt.index"}[entry["file_type"]]


def case_config(entry, path):
    """The ``config=`` a case passes with its input (the architecture beside a checkpoint), or ``None``."""
    return str(Path(path).parent / "arch.json") if entry["file_type"] == TF_CHECKPOINT else None


if __name__ == "__main__":  # pragma: no cover - a quick look at a few inputs
    import sys
    import tempfile

    out = Path(tempfile.mkdtemp(prefix="mgpu-fuzz-kinds-"))
    for i, mutator in enumerate(MUTATORS * int(sys.argv[1] if len(sys.argv) > 1 else 1)):
        rng = random.Random(f"0-{i}")
        entry = rng.choice([e for e in manifest() if e["file_type"] in mutator.kinds])
        folder = out / f"case-{i:03d}"
        folder.mkdir()
        target = folder / input_name(entry)
        print(f"{i:3d} {mutator.name:18s} {entry['file']:38s} {mutator.apply(TF2 / entry['file'], target, rng)[:90]}")
    print(out)
