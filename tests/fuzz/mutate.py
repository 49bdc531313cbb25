"""Seeded, deterministic mutators that turn a real fixture into a damaged copy (issue 9: hostile input files).

Every mutator is a class; its name is the class name, so results can be counted by mutator class. A mutator takes
the path of a real fixture (fixtures/files, written by the real old Keras writers), the path of the copy to write,
and a ``random.Random``; it writes the damaged copy (and, for external links, files beside it) and returns a short
description of what it did. It never touches the fixture itself.

Structural mutators open a COPY with h5py in ``r+`` mode; byte-level mutators edit the copy's bytes; config mutators
rewrite the JSON of a ``model_config``/``training_config`` attribute or of a ``.json`` config file.

:func:`make_case` turns ``(seed, index)`` into one mutated input, deterministically: the mutator is chosen round-robin
(so every class gets its share), the fixture and every choice inside the mutator come from
``random.Random(f"{seed}-{index}")``.

Only the standard library, NumPy and h5py are used.
"""

import json
import math
import random
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Optional

import h5py
import numpy as np

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "files"
MANIFEST = json.loads((FIXTURES / "manifest.json").read_text())

# Fixture kinds as the manifest spells them.
MODEL, WEIGHTS, CONFIG, STUB = "model", "weights", "config", "stub"
H5_KINDS = (MODEL, WEIGHTS, STUB)
ALL_KINDS = (MODEL, WEIGHTS, CONFIG, STUB)

#: HDF5's limit on an attribute stored in the object header (legacy Keras files have no dense attribute storage).
ATTR_LIMIT = 60000


class NotApplicable(Exception):
    """This mutator cannot do this variant to this fixture; the caller tries another fixture."""


def fixtures(kinds=ALL_KINDS):
    """The manifest entries of the given kinds, in manifest order (the largest fixture is left out: speed); the
    kinds of :mod:`mutate_kinds` (YAML, SavedModel, TF checkpoint) come from fixtures/tf2, with their ``root``."""
    found = [e for e in MANIFEST if e["file_type"] in kinds and (FIXTURES / e["file"]).stat().st_size < 400_000]
    return found + [e for e in _OTHER_KINDS() if e["file_type"] in kinds]


# ---------------------------------------------------------------------------------------------------------------
# helpers


def _copy(src, dst):
    shutil.copyfile(src, dst)


def _weights_root(h5):
    return h5["model_weights"] if "model_weights" in h5 and isinstance(h5["model_weights"], h5py.Group) else h5


def _datasets(group):
    """Paths of every dataset under ``group`` (absolute), in sorted order (deterministic)."""
    found = []
    group.visititems(lambda name, obj: found.append(obj.name) if isinstance(obj, h5py.Dataset) else None)
    return sorted(found)


def _weight_datasets(h5, optimizer=False):
    root = _weights_root(h5)
    paths = [p for p in _datasets(root) if not p.startswith("/optimizer_weights")]
    if optimizer and "optimizer_weights" in h5:
        paths += _datasets(h5["optimizer_weights"])
    if not paths:
        raise NotApplicable("no weight datasets")
    return paths


def _groups(h5):
    """Paths of every group (not the root), sorted."""
    found = []
    h5.visititems(lambda name, obj: found.append(obj.name) if isinstance(obj, h5py.Group) else None)
    return sorted(found)


def _layer_groups(h5):
    root = _weights_root(h5)
    return sorted(root.name.rstrip("/") + "/" + k for k in root.keys() if isinstance(root[k], h5py.Group))


def _template_group(h5):
    """The layer group that holds the most weights: the wrapper's nested template."""
    root = _weights_root(h5)
    best, size = None, -1
    for key in sorted(root.keys()):
        obj = root[key]
        if isinstance(obj, h5py.Group):
            count = len(_datasets(obj))
            if count > size:
                best, size = obj.name, count
    if best is None:
        raise NotApplicable("no layer group")
    return best


def _replace(h5, path, make):
    """Delete the object at ``path`` and let ``make(parent, leaf)`` put something else there."""
    parent_path, _, leaf = path.rpartition("/")
    parent = h5[parent_path or "/"]
    del parent[leaf]
    make(parent, leaf)


def _attr_targets(h5):
    """``(object path, attribute name)`` pairs of the attributes Keras wrote, sorted."""
    targets = [("/", name) for name in sorted(h5.attrs.keys())]
    for path in _groups(h5):
        targets += [(path, name) for name in sorted(h5[path].attrs.keys())]
    if not targets:
        raise NotApplicable("no attributes")
    return targets


def _set_attr_text(attrs, name, text):
    """Write a JSON/text attribute back in the style of the original (str or bytes), or refuse when too large."""
    if len(text.encode("utf8", "surrogateescape")) > ATTR_LIMIT:
        raise NotApplicable("attribute would exceed the object header limit")
    original = attrs.get(name)
    if isinstance(original, (bytes, np.bytes_)) or "\x00" in text:  # vlen strings cannot hold a NUL
        attrs[name] = np.bytes_(text.encode("utf8", "surrogateescape"))
    else:
        attrs[name] = text


def _attr_text(attrs, name):
    value = attrs[name]
    if isinstance(value, (bytes, np.bytes_)):
        return bytes(value).decode("utf8")
    return str(value)


def _flip_file_bytes(path, offsets, rng):
    data = bytearray(Path(path).read_bytes())
    for offset in offsets:
        data[offset] ^= rng.randrange(1, 256)
    Path(path).write_bytes(bytes(data))


def _walk(obj):
    """Every ``(container, key, value)`` of a JSON tree, iteratively, in a deterministic order."""
    out, stack = [], [obj]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key in list(item.keys()):
                out.append((item, key, item[key]))
                stack.append(item[key])
        elif isinstance(item, list):
            for index, value in enumerate(item):
                out.append((item, index, value))
                stack.append(value)
    return out


# ---------------------------------------------------------------------------------------------------------------
# the mutator base class


class Mutator:
    """One kind of damage. Subclasses set ``kinds`` (the fixture kinds they apply to) and define ``apply``."""

    kinds = ALL_KINDS

    @property
    def name(self):
        return type(self).__name__

    def apply(self, src, dst, rng):  # pragma: no cover - abstract
        raise NotImplementedError


class H5Mutator(Mutator):
    """Copies the fixture, opens the copy ``r+`` and calls ``edit(h5, rng, dst)``; byte edits may follow."""

    kinds = H5_KINDS

    def apply(self, src, dst, rng):
        _copy(src, dst)
        with h5py.File(dst, "r+") as h5:
            description = self.edit(h5, rng, Path(dst))
        after = getattr(self, "after_close", None)
        if after is not None:
            description = after(Path(dst), rng, description)
        return description

    def edit(self, h5, rng, dst):  # pragma: no cover - abstract
        raise NotImplementedError


# ---------------------------------------------------------------------------------------------------------------
# attributes


def _attr_values(rng):
    """Values of the wrong type for a string or list-of-strings attribute."""
    return rng.choice([
        ("int", np.int64(7)),
        ("negative int", np.int64(-1)),
        ("float", np.float64(1.5)),
        ("float array", np.array([1.5, 2.5, float("nan")])),
        ("int array", np.array([1, 2, 3], dtype="int32")),
        ("bool", np.bool_(True)),
        ("complex", np.complex64(1 + 2j)),
        ("2-D bytes array", np.array([[b"a", b"b"], [b"c", b"d"]])),
        ("3-D float array", np.zeros((2, 2, 2))),
        ("bytes array of one", np.array([b"x"])),
    ])


class AttrWrongType(H5Mutator):
    """A Keras attribute (model_config, training_config, keras_version, backend, layer_names, weight_names) gets a
    value of the wrong type: int, float, float array, int array, bool, complex, multi-dimensional array."""

    def edit(self, h5, rng, dst):
        path, name = rng.choice(_attr_targets(h5))
        what, value = _attr_values(rng)
        h5[path].attrs[name] = value
        return f"{path}@{name} = {what}"


class AttrEmpty(H5Mutator):
    """A Keras attribute becomes empty: an empty float/int/bytes array, or a null-dataspace (h5py.Empty) value."""

    def edit(self, h5, rng, dst):
        path, name = rng.choice(_attr_targets(h5))
        what, value = rng.choice([
            ("empty float array", np.array([], dtype="float64")),
            ("empty int array", np.array([], dtype="int64")),
            ("empty bytes array", np.array([], dtype="S1")),
            ("empty string", ""),
            ("null dataspace S10", h5py.Empty("S10")),
            ("null dataspace f8", h5py.Empty("f8")),
        ])
        h5[path].attrs[name] = value
        return f"{path}@{name} = {what}"


class AttrNonUTF8(H5Mutator):
    """A string attribute (or one name in a list attribute) holds bytes that are not UTF-8."""

    def edit(self, h5, rng, dst):
        path, name = rng.choice(_attr_targets(h5))
        attrs = h5[path].attrs
        bad = rng.choice([b"\xff\xfe", b"\x80", b"\xc3\x28", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80"])
        value = attrs[name]
        style = rng.choice(["fixed", "vlen-utf8", "vlen-ascii"])
        if isinstance(value, np.ndarray) and value.ndim >= 1 and value.size and value.dtype.kind in "SOU":
            items = [bytes(v) if isinstance(v, (bytes, np.bytes_)) else str(v).encode("utf8") for v in value.ravel()]
            i = rng.randrange(len(items))
            items[i] = items[i][: rng.randrange(len(items[i]) + 1)] + bad + items[i]
            if style == "fixed":
                attrs[name] = np.array(items)
            else:
                dtype = h5py.string_dtype("utf-8" if style == "vlen-utf8" else "ascii")
                attrs.create(name, data=np.array(items, dtype=object), dtype=dtype)
            return f"{path}@{name}[{i}] has non-UTF-8 bytes {bad!r} ({style})"
        text = _attr_text(attrs, name) if isinstance(value, (str, bytes, np.bytes_)) else "x"
        cut = rng.randrange(len(text) + 1)
        raw = text[:cut].encode("utf8") + bad + text[cut:].encode("utf8")
        if len(raw) > ATTR_LIMIT:
            raise NotApplicable("too large")
        if style == "fixed":
            attrs[name] = np.bytes_(raw)
        else:
            attrs.create(name, data=raw, dtype=h5py.string_dtype("utf-8" if style == "vlen-utf8" else "ascii"))
        return f"{path}@{name} has non-UTF-8 bytes {bad!r} at {cut} ({style})"


class AttrDeleted(H5Mutator):
    """A Keras attribute is deleted: model_config, training_config, keras_version, backend, layer_names (of the
    weights root), weight_names (of a layer group or of optimizer_weights)."""

    def edit(self, h5, rng, dst):
        path, name = rng.choice(_attr_targets(h5))
        del h5[path].attrs[name]
        return f"deleted {path}@{name}"


class AttrOddNames(H5Mutator):
    """layer_names / weight_names list odd names: '', '/', '.', '..', absolute paths, a dataset's name for a group,
    duplicates, a 70 000-character name, names with a NUL-free control character, many names."""

    def edit(self, h5, rng, dst):
        root = _weights_root(h5)
        lists = [(root.name, "layer_names")] if "layer_names" in root.attrs else []
        lists += [(p, "weight_names") for p in _groups(h5) if "weight_names" in h5[p].attrs]
        if not lists:
            raise NotApplicable("no name lists")
        path, name = rng.choice(lists)
        attrs = h5[path].attrs
        names = [bytes(v) if isinstance(v, (bytes, np.bytes_)) else str(v).encode() for v in np.ravel(attrs[name])]
        if attrs[name].dtype.kind == "f":
            names = []
        datasets = _datasets(h5)
        odd = rng.choice([
            b"", b"/", b".", b"..", b"/model_weights", b"../" + (names[0] if names else b"x"), b"a/b/c/d:0",
            (datasets[0].encode() if datasets else b"/x"), b"x" * 70000, b"\x01\x02", b" ",
            (names[0] if names else b"dup"),
        ])
        how = rng.choice(["append", "replace", "only", "many"])
        if how == "append" or not names:
            names = names + [odd]
        elif how == "replace":
            names[rng.randrange(len(names))] = odd
        elif how == "only":
            names = [odd]
        else:
            names = names + [b"n%d" % i for i in range(5000)]
        data = np.array(names)
        if data.nbytes > ATTR_LIMIT:
            # keep it writable: split as Keras does (name0, name1, ...) when a single name fits
            if max(len(n) for n in names) > ATTR_LIMIT:
                raise NotApplicable("name too long for one attribute")
            del attrs[name]
            pieces = np.array_split(data, math.ceil(data.nbytes / ATTR_LIMIT) + 1)
            for i, piece in enumerate(pieces):
                attrs[f"{name}{i}"] = piece
            return f"{path}@{name} {how} {odd[:20]!r} (chunked into {len(pieces)})"
        attrs[name] = data
        return f"{path}@{name} {how} {odd[:20]!r}"


class AttrChunkedList(H5Mutator):
    """The Keras >= 2.1.5 chunked-list spelling (layer_names0, layer_names1, ...) made inconsistent: a gap, both
    spellings at once, a chunk of the wrong type, a chunk that is a scalar."""

    def edit(self, h5, rng, dst):
        root = _weights_root(h5)
        lists = [(root.name, "layer_names")] if "layer_names" in root.attrs else []
        lists += [(p, "weight_names") for p in _groups(h5) if "weight_names" in h5[p].attrs]
        if not lists:
            raise NotApplicable("no name lists")
        path, name = rng.choice(lists)
        attrs = h5[path].attrs
        data = attrs[name]
        variant = rng.choice(["gap", "both", "wrong-type-chunk", "scalar-chunk", "empty-chunks"])
        half = max(1, len(np.ravel(data)) // 2)
        if variant == "both":
            attrs[f"{name}0"] = np.array([b"ghost"])
        else:
            del attrs[name]
            flat = np.ravel(data)
            if variant == "gap":
                attrs[f"{name}0"] = flat[:half] if flat.size else np.array([b"a"])
                attrs[f"{name}2"] = flat[half:] if flat.size > half else np.array([b"b"])
            elif variant == "wrong-type-chunk":
                attrs[f"{name}0"] = flat[:half] if flat.size else np.array([b"a"])
                attrs[f"{name}1"] = np.array([1, 2, 3])
            elif variant == "scalar-chunk":
                attrs[f"{name}0"] = np.int64(3)
            else:
                attrs[f"{name}0"] = np.array([], dtype="float64")
                attrs[f"{name}1"] = np.array([], dtype="float64")
        return f"{path}@{name} chunked: {variant}"


# ---------------------------------------------------------------------------------------------------------------
# configs (model_config / training_config attributes, and .json config files)


class ConfigMutator(Mutator):
    """Rewrites a JSON config: the ``model_config`` (or ``training_config``) attribute of a full-model file, or a
    ``.json`` config file. Subclasses define ``mutate_text(text, rng) -> (text, description)``."""

    kinds = (MODEL, CONFIG)
    training = False  # may pick training_config too

    def apply(self, src, dst, rng):
        if str(src).endswith(".json"):
            text = Path(src).read_text(encoding="utf8")
            new, description = self.mutate_text(text, rng)
            Path(dst).write_bytes(new.encode("utf8", "surrogateescape") if isinstance(new, str) else new)
            return description
        _copy(src, dst)
        with h5py.File(dst, "r+") as h5:
            names = ["model_config"] + (["training_config"] if self.training and "training_config" in h5.attrs
                                        else [])
            name = rng.choice(names)
            if name not in h5.attrs:
                raise NotApplicable("no config attribute")
            new, description = self.mutate_text(_attr_text(h5.attrs, name), rng)
            if isinstance(new, bytes):
                if len(new) > ATTR_LIMIT:
                    raise NotApplicable("too large")
                h5.attrs[name] = np.bytes_(new)
            else:
                _set_attr_text(h5.attrs, name, new)
        return f"{name}: {description}"

    def mutate_text(self, text, rng):  # pragma: no cover - abstract
        raise NotImplementedError


class ConfigTopLevelType(ConfigMutator):
    """The config JSON is valid but not an object: null, a list, a number, a string, true, an empty object."""

    training = True

    def mutate_text(self, text, rng):
        new = rng.choice(["null", "[]", "[1, 2]", "42", "-1e400", '"Model"', "true", "{}", '{"class_name": "Model"}',
                          '{"config": {}}', '[{"class_name": "Model", "config": {}}]'])
        return new, f"top level = {new}"


class ConfigInvalidJSON(ConfigMutator):
    """The config text is not valid JSON: truncated, garbage, single quotes, trailing comma, empty, NUL bytes."""

    training = True

    def mutate_text(self, text, rng):
        variant = rng.choice(["truncate", "garbage", "single-quotes", "trailing-comma", "empty", "nul",
                              "unbalanced", "bare-word", "control-char"])
        if variant == "truncate":
            cut = rng.randrange(1, max(2, len(text)))
            return text[:cut], f"truncated at {cut}"
        if variant == "garbage":
            at = rng.randrange(len(text))
            return text[:at] + "}{][,:" + text[at:], f"garbage at {at}"
        if variant == "single-quotes":
            return text.replace('"', "'"), "single quotes"
        if variant == "trailing-comma":
            return text.rstrip()[:-1] + ",}", "trailing comma"
        if variant == "empty":
            return rng.choice(["", " ", "\n"]), "empty"
        if variant == "nul":
            at = rng.randrange(len(text))
            return text[:at] + "\x00" + text[at:], f"NUL at {at}"
        if variant == "unbalanced":
            return "{" * rng.randrange(1, 50) + text, "unbalanced braces"
        if variant == "bare-word":
            return text.replace("null", "undefined", 1).replace("true", "True", 1), "bare words"
        at = rng.randrange(len(text))
        return text[:at] + "\x07\x1b" + text[at:], f"control characters at {at}"


class ConfigNaN(ConfigMutator):
    """Numbers in the config become NaN, Infinity or -Infinity (Python's json accepts them)."""

    training = True

    def mutate_text(self, text, rng):
        config = json.loads(text)
        numbers = [(c, k) for c, k, v in _walk(config) if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if not numbers:
            raise NotApplicable("no numbers")
        picked = rng.sample(numbers, min(len(numbers), rng.choice([1, 3, 10, len(numbers)])))
        value = rng.choice([float("nan"), float("inf"), float("-inf")])
        for container, key in picked:
            container[key] = value
        return json.dumps(config), f"{len(picked)} numbers -> {value}"


#: Keys whose loss the readers should notice.
CONFIG_KEYS = ("class_name", "config", "layers", "inbound_nodes", "name", "input_layers", "output_layers",
               "arguments", "axis", "function", "units", "batch_input_shape", "layer", "optimizer_config", "loss",
               "metrics", "loss_weights", "output_shape", "keras_version", "filters", "kernel_size")


class ConfigDeleteKey(ConfigMutator):
    """A key is deleted somewhere in the config: class_name, config, layers, inbound_nodes, name, input_layers,
    output_layers, arguments, ... (the top level, a layer, the nested template, a wrapped layer)."""

    training = True

    def mutate_text(self, text, rng):
        config = json.loads(text)
        targets = [(c, k) for c, k, _ in _walk(config) if isinstance(c, dict) and k in CONFIG_KEYS]
        if isinstance(config, dict):
            targets += [(config, k) for k in config if k in CONFIG_KEYS]
        if not targets:
            raise NotApplicable("no keys")
        key = rng.choice(sorted({k for _, k in targets}))
        places = [(c, k) for c, k in targets if k == key]
        container, key = rng.choice(places)
        count = "all" if rng.random() < 0.3 else "one"
        for c, k in (places if count == "all" else [(container, key)]):
            c.pop(k, None)
        return json.dumps(config), f"deleted {count} {key!r}"


_WRONG = [None, 0, -1, 1.5, True, "", "x", [], {}, [None], [[["a"]]], {"a": 1}, ["a", "b"], [1, 2, 3],
          {"class_name": None, "config": None}]


class ConfigWrongType(ConfigMutator):
    """A significant value in the config gets the wrong type (null, number, string, list, object...)."""

    training = True

    def mutate_text(self, text, rng):
        config = json.loads(text)
        targets = [(c, k) for c, k, _ in _walk(config) if isinstance(c, dict) and k in CONFIG_KEYS]
        if not targets:
            raise NotApplicable("no keys")
        key = rng.choice(sorted({k for _, k in targets}))
        places = [(c, k) for c, k in targets if k == key]
        container, key = rng.choice(places)
        value = rng.choice(_WRONG)
        container[key] = value
        return json.dumps(config), f"{key!r} = {json.dumps(value)}"


class ConfigElementWrongType(ConfigMutator):
    """An element of a list in the config (a layer entry, an inbound node, a [name, node, tensor] reference) gets
    the wrong type, or a reference gets too few / too many items."""

    def mutate_text(self, text, rng):
        config = json.loads(text)
        lists = [(c, k) for c, k, v in _walk(config) if isinstance(c, list)]
        if not lists:
            raise NotApplicable("no lists")
        container, index = rng.choice(lists)
        old = container[index]
        variant = rng.choice(["wrong-type", "short", "long"])
        if variant == "wrong-type" or not isinstance(old, list):
            container[index] = rng.choice(_WRONG)
        elif variant == "short":
            container[index] = old[: max(0, len(old) - rng.randrange(1, 3))]
        else:
            container[index] = old + [rng.choice(_WRONG)] * rng.randrange(1, 4)
        before, after = json.dumps(old)[:40], json.dumps(container[index])[:40]
        return json.dumps(config), f"list element {variant}: {before} -> {after}"


def _deep_text(kind, depth):
    if kind == "lists":
        return "[" * depth + "]" * depth
    if kind == "dicts":
        return '{"a":' * depth + "0" + "}" * depth
    if kind == "models":
        return '{"class_name":"Model","config":{"name":"m","layers":[' * depth + "]}}" * depth
    if kind == "sequentials":
        return '{"class_name":"Sequential","config":[' * depth + "]}" * depth
    if kind == "bidirectional":
        return ('{"class_name":"Bidirectional","config":{"name":"b","layer":' * depth
                + '{"class_name":"LSTM","config":{"name":"l","units":1}}' + "}}" * depth)
    if kind == "keras3-node":
        return '{"args":[' * depth + "]}" * depth
    raise ValueError(kind)


class ConfigDeepNesting(ConfigMutator):
    """The config is nested 600 to 3000 levels deep somewhere: nested lists in inbound_nodes, nested objects in a
    layer's config, a chain of nested Model / Sequential layers, nested Bidirectional wrappers, a Keras 3 node."""

    def mutate_text(self, text, rng):
        config = json.loads(text)
        kind = rng.choice(["lists", "dicts", "models", "sequentials", "bidirectional", "keras3-node"])
        depth = rng.randrange(600, 3001)
        marker = "\u2603DEEP\u2603"
        layer_dicts = [v for _, _, v in _walk(config) if isinstance(v, dict) and "class_name" in v]
        if kind in ("models", "sequentials", "bidirectional"):
            # a new layer entry: in the top level's layers, or in a nested model's layers
            models = [v for v in layer_dicts + [config] if isinstance(v.get("config"), (dict, list))]
            model = rng.choice(models)
            layers = model["config"] if isinstance(model["config"], list) else model["config"].setdefault("layers", [])
            if not isinstance(layers, list):
                raise NotApplicable("layers is not a list")
            layers.insert(rng.randrange(len(layers) + 1), marker)
        elif kind in ("lists", "keras3-node"):
            nodes = [v for v in layer_dicts if isinstance(v.get("inbound_nodes"), list)]
            if not nodes:
                raise NotApplicable("no inbound nodes")
            layer = rng.choice(nodes)
            layer["inbound_nodes"] = [marker]
        else:
            holder = rng.choice(layer_dicts) if layer_dicts else config
            if not isinstance(holder.get("config"), dict):
                raise NotApplicable("no layer config")
            holder["config"][rng.choice(["name", "arguments", "extra", "axis", "layers"])] = marker
        out = json.dumps(config)
        deep = _deep_text(kind, depth)
        if len(out) + len(deep) > ATTR_LIMIT and not getattr(self, "_file", False):
            depth = max(600, (ATTR_LIMIT - len(out)) * depth // max(1, len(deep)) - 10)
            deep = _deep_text(kind, depth)
        return out.replace(json.dumps(marker), deep), f"{kind} nested {depth} deep"

    def apply(self, src, dst, rng):
        self._file = str(src).endswith(".json")
        return super().apply(src, dst, rng)


class ConfigHugeNumbers(ConfigMutator):
    """Integers in the config (units, filters, kernel sizes, slice arguments, axes, node indices) become huge,
    negative or zero: 10**18, 2**63, 10**400, 10**5000 (past Python's int-parsing limit), 1e308, 1e400, -1, 0."""

    training = True

    def mutate_text(self, text, rng):
        config = json.loads(text)
        ints = [(c, k) for c, k, v in _walk(config) if isinstance(v, int) and not isinstance(v, bool)]
        if not ints:
            raise NotApplicable("no integers")
        picked = rng.sample(ints, min(len(ints), rng.choice([1, 2, 5, len(ints)])))
        token = rng.choice(["1000000000000000000", str(2 ** 63), str(2 ** 64 + 1), "1" + "0" * 400,
                            "1" + "0" * 5000, "1e308", "1e400", "-1", "0", "-9223372036854775809"])
        marker = "\u2603NUM\u2603"
        for container, key in picked:
            container[key] = marker
        return json.dumps(config).replace(json.dumps(marker), token), f"{len(picked)} ints -> {token[:12]}" \
            f"{'...' if len(token) > 12 else ''}"


class ConfigGraph(ConfigMutator):
    """The graph is odd but well typed: an inbound node naming a missing layer, a layer feeding itself, a cycle,
    node/tensor indices out of range, duplicate layer names, no layers, outputs naming a missing layer, a merge on
    axis 1, slice arguments that disagree."""

    def mutate_text(self, text, rng):
        config = json.loads(text)
        layer_dicts = [v for _, _, v in _walk(config) if isinstance(v, dict) and "inbound_nodes" in v]
        models = [v for _, _, v in _walk(config) if isinstance(v, dict) and v.get("class_name") in ("Model",
                                                                                                       "Functional")]
        if isinstance(config, dict) and config.get("class_name") in ("Model", "Functional"):
            models.append(config)
        variant = rng.choice(["missing-inbound", "self-loop", "cycle", "node-index", "tensor-index", "duplicate",
                              "no-layers", "missing-output", "merge-axis", "slice-args", "empty-name"])

        def name_of(layer):
            return layer.get("name") or (layer.get("config") or {}).get("name")

        def refs(layer):
            return [entry for node in layer.get("inbound_nodes") or [] if isinstance(node, list)
                    for entry in node if isinstance(entry, list) and entry]

        with_refs = [layer for layer in layer_dicts if refs(layer)]
        if variant in ("missing-inbound", "self-loop", "node-index", "tensor-index") and with_refs:
            layer = rng.choice(with_refs)
            entry = rng.choice(refs(layer))
            if variant == "missing-inbound":
                entry[0] = "no_such_layer"
            elif variant == "self-loop":
                entry[0] = name_of(layer)
            elif variant == "node-index" and len(entry) > 1:
                entry[1] = rng.choice([-1, 7, 99, 10 ** 6])
            elif len(entry) > 2:
                entry[2] = rng.choice([-1, 5, 99])
            return json.dumps(config), f"{variant} in {name_of(layer)}"
        if variant == "cycle" and len(with_refs) >= 2:
            a, b = rng.sample(with_refs, 2)
            rng.choice(refs(a))[0] = name_of(b)
            rng.choice(refs(b))[0] = name_of(a)
            return json.dumps(config), f"cycle {name_of(a)} <-> {name_of(b)}"
        if variant == "duplicate" and len(layer_dicts) >= 2:
            a, b = rng.sample(layer_dicts, 2)
            for layer in (b,):
                if "name" in layer:
                    layer["name"] = name_of(a)
                if isinstance(layer.get("config"), dict):
                    layer["config"]["name"] = name_of(a)
            return json.dumps(config), f"duplicate name {name_of(a)}"
        if variant == "no-layers" and models:
            model = rng.choice(models)
            model["config"]["layers"] = []
            return json.dumps(config), f"no layers in {name_of(model)}"
        if variant == "missing-output" and models:
            model = rng.choice(models)
            outs = model["config"].get("output_layers")
            if isinstance(outs, list) and outs and isinstance(outs[0], list):
                outs[0][0] = "no_such_output"
                return json.dumps(config), f"missing output in {name_of(model)}"
        if variant == "merge-axis":
            merges = [v for v in layer_dicts if v.get("class_name") in ("Concatenate", "Merge")]
            if merges:
                merge = rng.choice(merges)
                key = "axis" if merge["class_name"] == "Concatenate" else "concat_axis"
                merge["config"][key] = rng.choice([1, -1, 2, None, "0"])
                return json.dumps(config), f"merge axis {merge['config'][key]}"
        if variant == "slice-args":
            slices = [v for v in layer_dicts if v.get("class_name") == "Lambda"
                      and isinstance((v.get("config") or {}).get("arguments"), dict)]
            if slices:
                layer = rng.choice(slices)
                arguments = layer["config"]["arguments"]
                if arguments:
                    key = rng.choice(sorted(arguments))
                    arguments[key] = rng.choice([-1, 0, 99, 10 ** 12, "1", None, 1.5, [1]])
                    return json.dumps(config), f"slice argument {key} = {arguments[key]}"
        if variant == "empty-name" and layer_dicts:
            layer = rng.choice(layer_dicts)
            value = rng.choice(["", "/", "..", "a/b", None])
            layer["name"] = value
            if isinstance(layer.get("config"), dict):
                layer["config"]["name"] = value
            return json.dumps(config), f"layer name {value!r}"
        raise NotApplicable(variant)


class JsonFileEncoding(Mutator):
    """A .json config file in an odd encoding: a UTF-8 BOM, UTF-16, non-UTF-8 bytes in a string, empty, only
    whitespace, a NUL byte, a JSON document followed by a second one."""

    kinds = (CONFIG,)

    def apply(self, src, dst, rng):
        data = Path(src).read_bytes()
        variant = rng.choice(["bom", "utf16", "non-utf8", "empty", "whitespace", "nul", "two-documents", "latin1"])
        if variant == "bom":
            data = b"\xef\xbb\xbf" + data
        elif variant == "utf16":
            data = data.decode("utf8").encode("utf-16")
        elif variant == "non-utf8":
            at = data.index(b'"name"') + 8
            data = data[:at] + b"\xff\xfe\x80" + data[at:]
        elif variant == "empty":
            data = b""
        elif variant == "whitespace":
            data = b" \n\t " * rng.randrange(1, 100)
        elif variant == "nul":
            at = rng.randrange(len(data))
            data = data[:at] + b"\x00" + data[at:]
        elif variant == "two-documents":
            data = data + b"\n" + data
        else:
            data = data.replace(b'"model_1"', b'"mod\xe9le"', 1)
        Path(dst).write_bytes(data)
        return variant


class ConfigWide(ConfigMutator):
    """The config is very wide instead of deep: thousands of extra layers chained in the top level or the nested
    template (2 000 to 50 000 in a .json file; as many as fit in the 64 KB attribute of a full-model file), or one
    layer with thousands of inbound nodes. Anything quadratic in the number of layers shows up as a hang."""

    def mutate_text(self, text, rng):
        config = json.loads(text)
        in_file = getattr(self, "_file", False)
        count = rng.choice([2000, 10000, 50000]) if in_file else rng.choice([300, 450])
        models = [v for _, _, v in _walk(config) if isinstance(v, dict) and isinstance(v.get("config"), dict)
                  and isinstance(v["config"].get("layers"), list)]
        if isinstance(config, dict) and isinstance(config.get("config"), dict) and \
                isinstance(config["config"].get("layers"), list):
            models.append(config)
        if not models:
            raise NotApplicable("no layer list")
        model = rng.choice(models)
        layers = model["config"]["layers"]
        variant = rng.choice(["chain", "chain", "fan-in"])
        if variant == "fan-in" and layers:
            layer = rng.choice(layers)
            source = layers[0].get("name") or "x"
            layer["inbound_nodes"] = [[[source, 0, 0, {}]] for _ in range(count)]
        else:
            previous = layers[-1].get("name") if layers and isinstance(layers[-1], dict) else None
            for i in range(count):
                name = f"w{i}"
                nodes = [[[previous, 0, 0, {}]]] if previous else []
                layers.append({"name": name, "class_name": "Dropout", "config": {"name": name, "rate": 0.1},
                               "inbound_nodes": nodes})
                previous = name
        out = json.dumps(config, separators=(",", ":"))
        if not in_file and len(out) > ATTR_LIMIT:
            raise NotApplicable("too wide for an attribute")
        return out, f"{variant}: {count} in {model['config'].get('name')}"

    def apply(self, src, dst, rng):
        self._file = str(src).endswith(".json")
        return super().apply(src, dst, rng)


class ManyLayerGroups(H5Mutator):
    """A weights file (or model_weights) lists thousands of extra layer groups, split over layer_names0,
    layer_names1, ... as Keras does above 64 KB; each group exists (empty weight_names) or, in one variant, none
    does."""

    kinds = (MODEL, WEIGHTS)

    def edit(self, h5, rng, dst):
        root = _weights_root(h5)
        if "layer_names" not in root.attrs:
            raise NotApplicable("no layer_names")
        names = [bytes(v) for v in np.ravel(root.attrs["layer_names"])]
        count = rng.choice([2000, 5000, 10000])
        create = rng.random() < 0.7
        extra = [b"g%06d" % i for i in range(count)]
        if create:
            for name in extra:
                root.create_group(name.decode()).attrs["weight_names"] = np.array([], dtype="float64")
        names = names + extra if rng.random() < 0.5 else extra + names
        data = np.array(names)
        del root.attrs["layer_names"]
        pieces = np.array_split(data, math.ceil(data.nbytes / ATTR_LIMIT) + 1)
        for i, piece in enumerate(pieces):
            root.attrs[f"layer_names{i}"] = piece
        return f"{count} extra layer groups ({'created' if create else 'missing'}), layer_names in {len(pieces)} chunks"


#: Strings a terminal or a one-line error message must not get from a file.
_CONTROL = ["a\nb", "line\r\nnext", "\x1b[2J\x1b[31mred", "[bold red]markup[/]", "tab\there", "x\u2028y",
            "\x1b]0;title\x07", "back\x08space"]


class NamesWithControlChars(H5Mutator):
    """Names and strings with control characters, ANSI escape sequences or rich markup: a layer group renamed
    consistently (layer_names and the group), a weight renamed consistently (weight_names and the dataset), a
    name listed that does not exist (so an error message echoes it), keras_version / backend."""

    def edit(self, h5, rng, dst):
        bad = rng.choice(_CONTROL)
        root = _weights_root(h5)
        variant = rng.choice(["layer", "weight", "listed-only", "version"])
        if variant == "version" or "layer_names" not in root.attrs:
            key = rng.choice(["keras_version", "backend"])
            h5.attrs[key] = np.bytes_(("2.2.4" + bad).encode())
            return f"@{key} = {bad!r}"
        names = [bytes(v).decode() for v in np.ravel(root.attrs["layer_names"])]
        if variant == "layer" and names:
            i = rng.randrange(len(names))
            new = names[i] + bad
            if names[i] in root:
                root.move(names[i], new)
            names[i] = new
            root.attrs["layer_names"] = np.array([n.encode() for n in names])
            return f"layer {names[i]!r} renamed consistently"
        if variant == "weight":
            groups = [n for n in names if n in root and isinstance(root[n], h5py.Group)
                      and len(np.ravel(root[n].attrs.get("weight_names", []))) and
                      root[n].attrs["weight_names"].dtype.kind != "f"]
            if groups:
                group = root[rng.choice(groups)]
                weights = [bytes(v).decode() for v in np.ravel(group.attrs["weight_names"])]
                j = rng.randrange(len(weights))
                new = weights[j].replace(":", bad + ":", 1) if ":" in weights[j] else weights[j] + bad
                if weights[j] in group:
                    parent = group.require_group(new.rpartition("/")[0]) if "/" in new else group
                    group.move(weights[j], (parent.name + "/" + new.rpartition("/")[2]))
                weights[j] = new
                group.attrs["weight_names"] = np.array([w.encode() for w in weights])
                return f"weight {new!r} of {group.name} renamed consistently"
        names.append("ghost" + bad)
        root.attrs["layer_names"] = np.array([n.encode() for n in names])
        return f"layer_names lists missing {names[-1]!r}"


class ConfigControlChars(ConfigMutator):
    """Names in the config (a layer, the template, an input, an output) get control characters, ANSI escape
    sequences or rich markup."""

    def mutate_text(self, text, rng):
        config = json.loads(text)
        spots = [(c, k) for c, k, v in _walk(config) if k == "name" and isinstance(v, str)]
        if not spots:
            raise NotApplicable("no names")
        bad = rng.choice(_CONTROL)
        container, key = rng.choice(spots)
        old = container[key]
        new = old + bad
        renamed = 0
        for c, k, v in _walk(config):  # rename every use of the name, so the config stays consistent
            if v == old and isinstance(c, (dict, list)):
                c[k] = new
                renamed += 1
        return json.dumps(config), f"name {old!r} -> {new!r} ({renamed} places)"


# ---------------------------------------------------------------------------------------------------------------
# structure: groups, datasets, links


class GroupForDataset(H5Mutator):
    """A weight dataset is replaced by a group of the same name (possibly with a dataset inside)."""

    kinds = (MODEL, WEIGHTS)

    def edit(self, h5, rng, dst):
        path = rng.choice(_weight_datasets(h5, optimizer=rng.random() < 0.2))

        def make(parent, leaf):
            group = parent.create_group(leaf)
            if rng.random() < 0.5:
                group.create_dataset("inner", data=np.zeros(3, "f4"))

        _replace(h5, path, make)
        return f"{path} is a group"


class DatasetForGroup(H5Mutator):
    """A group (a layer group, a sub-group such as template/d1, model_weights, optimizer_weights) is replaced by a
    dataset of the same name."""

    kinds = (MODEL, WEIGHTS)

    def edit(self, h5, rng, dst):
        path = rng.choice(_groups(h5))
        data = rng.choice([np.zeros((2, 3), "f4"), np.array(b"group"), np.arange(5)])
        _replace(h5, path, lambda parent, leaf: parent.create_dataset(leaf, data=data))
        return f"{path} is a dataset"


class TemplateGroupToDataset(H5Mutator):
    """The wrapper's template group (the layer group holding the weights) is replaced by a dataset, keeping or
    dropping its attributes."""

    kinds = (MODEL, WEIGHTS)

    def edit(self, h5, rng, dst):
        path = _template_group(h5)
        attrs = dict(h5[path].attrs.items()) if rng.random() < 0.5 else {}

        def make(parent, leaf):
            ds = parent.create_dataset(leaf, data=np.zeros(rng.choice([1, 8, 48]), "f4"))
            for key, value in attrs.items():
                ds.attrs[key] = value

        _replace(h5, path, make)
        return f"template {path} is a dataset ({'with' if attrs else 'without'} its attributes)"


def _wrong_dtype_data(shape, rng):
    size = int(np.prod(shape)) if shape else 1
    what = rng.choice(["int32", "int64", "uint8", "bool", "complex64", "complex128", "vlen-str", "bytes",
                       "compound", "float16", "enum", "opaque", "float128"])
    if what in ("int32", "int64", "uint8", "bool", "complex64", "complex128", "float16"):
        return what, np.ones(shape, dtype=what)
    if what == "float128":
        return what, np.ones(shape, dtype=np.longdouble)
    if what == "vlen-str":
        return what, np.array(["w"] * size, dtype=h5py.string_dtype()).reshape(shape)
    if what == "bytes":
        return what, np.array([b"abcd"] * size).reshape(shape)
    if what == "compound":
        return what, np.zeros(shape, dtype=[("a", "<f4"), ("b", "<i4")])
    if what == "enum":
        return what, np.zeros(shape, dtype=h5py.enum_dtype({"A": 0, "B": 1}, basetype="i1"))
    return what, np.zeros(shape, dtype="V4")


class DatasetWrongDtype(H5Mutator):
    """A weight (or optimizer) dataset keeps its shape but gets another dtype: int, bool, complex, string, bytes,
    compound, float16, enum, opaque, long double."""

    kinds = (MODEL, WEIGHTS)

    def edit(self, h5, rng, dst):
        path = rng.choice(_weight_datasets(h5, optimizer=rng.random() < 0.25))
        shape = h5[path].shape
        what, data = _wrong_dtype_data(shape, rng)
        _replace(h5, path, lambda parent, leaf: parent.create_dataset(leaf, data=data, dtype=data.dtype))
        return f"{path} dtype {what}"


class DatasetWrongShape(H5Mutator):
    """A weight (or optimizer) dataset gets another shape: empty, scalar, a null dataspace, transposed, an extra
    axis, a missing axis, zero-sized axes, a larger (but small) array."""

    kinds = (MODEL, WEIGHTS)

    def edit(self, h5, rng, dst):
        path = rng.choice(_weight_datasets(h5, optimizer=rng.random() < 0.25))
        shape = h5[path].shape or (1,)
        variant = rng.choice(["empty", "scalar", "null", "transposed", "extra-axis", "missing-axis", "zero-axes",
                              "bigger", "many-axes"])
        if variant == "null":
            _replace(h5, path, lambda parent, leaf: parent.create_dataset(leaf, data=h5py.Empty("f4")))
            return f"{path} null dataspace"
        new = {
            "empty": (0,),
            "scalar": (),
            "transposed": tuple(reversed(shape)) if len(shape) > 1 else shape + (2,),
            "extra-axis": shape + (3,),
            "missing-axis": shape[1:] or (0,),
            "zero-axes": tuple(0 for _ in shape),
            "bigger": tuple(s * 7 + 1 for s in shape),
            "many-axes": (1,) * 20,
        }[variant]
        data = np.ones(new, dtype="f4")
        _replace(h5, path, lambda parent, leaf: parent.create_dataset(leaf, data=data))
        return f"{path} shape {shape} -> {new}"


class HugeDeclaredShape(H5Mutator):
    """A weight (or optimizer) dataset declares 10**9+ elements: chunked and gzip-compressed with no chunk written,
    so the file stays tiny; the first axis (or the only one) is the huge one, so shape checks on the last axis pass."""

    kinds = (MODEL, WEIGHTS)

    def edit(self, h5, rng, dst):
        path = rng.choice(_weight_datasets(h5, optimizer=rng.random() < 0.2))
        shape = h5[path].shape or (1,)
        target = rng.choice([10 ** 9 + rng.randrange(1000), 2 ** 31 + 1, 5 * 10 ** 9, 10 ** 12])
        variant = rng.choice(["first-axis", "first-axis", "flat", "square"])
        if variant == "first-axis":
            rest = int(np.prod(shape[1:])) if len(shape) > 1 else 1
            new = (math.ceil(target / rest),) + tuple(shape[1:])
        elif variant == "flat":
            new = (target,)
        else:
            side = math.isqrt(target) + 1
            new = (side, side)
        dtype = rng.choice(["f4", "f4", "f8"])
        fill = rng.choice([0.0, 0.0, float("nan")])
        _replace(h5, path, lambda parent, leaf: parent.create_dataset(
            leaf, shape=new, dtype=dtype, chunks=True, compression="gzip", fillvalue=fill))
        return f"{path} declares {new} {dtype} (fill {fill})"


class SoftLinkDangling(H5Mutator):
    """A weight dataset or a group is replaced by a soft link to a path that does not exist."""

    kinds = (MODEL, WEIGHTS)

    def edit(self, h5, rng, dst):
        path = rng.choice(_weight_datasets(h5) + _layer_groups(h5))
        target = rng.choice(["/nowhere", "/model_weights/nothing", "relative/nothing", "/a/b/c/d/e"])
        _replace(h5, path, lambda parent, leaf: parent.__setitem__(leaf, h5py.SoftLink(target)))
        return f"{path} -> soft link {target}"


class SoftLinkLoop(H5Mutator):
    """Soft links that loop: a link to itself, two links to each other, a group linked to its own parent or the
    root (a cycle for anything that walks the tree)."""

    kinds = (MODEL, WEIGHTS)

    def edit(self, h5, rng, dst):
        variant = rng.choice(["self", "pair", "parent", "root", "template-to-root"])
        if variant in ("self", "pair"):
            path = rng.choice(_weight_datasets(h5) + _layer_groups(h5))
            if variant == "self":
                _replace(h5, path, lambda parent, leaf: parent.__setitem__(leaf, h5py.SoftLink(path)))
                return f"{path} -> itself"
            other = path + "_twin"
            _replace(h5, path, lambda parent, leaf: parent.__setitem__(leaf, h5py.SoftLink(other)))
            h5[other] = h5py.SoftLink(path)
            return f"{path} <-> {other}"
        if variant == "template-to-root":
            path = _template_group(h5)
            _replace(h5, path, lambda parent, leaf: parent.__setitem__(leaf, h5py.SoftLink("/")))
            return f"{path} -> /"
        group = rng.choice(_groups(h5))
        target = group.rpartition("/")[0] or "/" if variant == "parent" else "/"
        name = rng.choice(["loop", "zzz"])
        h5[group][name] = h5py.SoftLink(target)
        return f"{group}/{name} -> {target}"


class SoftLinkValid(H5Mutator):
    """A weight dataset is replaced by a (valid) soft link to another dataset of the file: the same shape or not."""

    kinds = (MODEL, WEIGHTS)

    def edit(self, h5, rng, dst):
        paths = _weight_datasets(h5, optimizer=True)
        path, target = rng.choice(paths), rng.choice(paths)
        if path == target:
            raise NotApplicable("same")
        _replace(h5, path, lambda parent, leaf: parent.__setitem__(leaf, h5py.SoftLink(target)))
        return f"{path} -> soft link {target}"


class ExternalLink(H5Mutator):
    """A weight dataset or a layer group is replaced by an external link: to another file beside it (a dataset of
    the right shape, of another shape, a group), to the file itself (a loop), or to a file that does not exist."""

    kinds = (MODEL, WEIGHTS)

    def edit(self, h5, rng, dst):
        path = rng.choice(_weight_datasets(h5) + _layer_groups(h5))
        obj = h5[path]
        variant = rng.choice(["other-file", "other-file-wrong", "self", "missing-file", "missing-object",
                              "absolute-missing"])
        other = dst.with_name("linked.h5")
        if variant in ("other-file", "other-file-wrong", "missing-object"):
            with h5py.File(other, "w") as f:
                if isinstance(obj, h5py.Dataset):
                    data = obj[()] if variant == "other-file" else np.ones((3, 3, 3), "f8")
                    f.create_dataset("target", data=data)
                elif variant == "other-file":
                    h5.copy(obj, f, name="target")  # the group whole: its datasets and attributes
                else:
                    group = f.create_group("target")
                    for key, value in obj.attrs.items():
                        group.attrs[key] = value
            file_name, target = "linked.h5", ("/target" if variant != "missing-object" else "/nothing")
        elif variant == "self":
            file_name, target = dst.name, rng.choice(["/", path, _weights_root(h5).name])
        elif variant == "missing-file":
            file_name, target = "missing.h5", "/target"
        else:
            file_name, target = "/nonexistent/dir/missing.h5", "/target"
        _replace(h5, path, lambda parent, leaf: parent.__setitem__(leaf, h5py.ExternalLink(file_name, target)))
        return f"{path} -> external link {file_name}:{target} ({variant})"


class WeightRenamed(H5Mutator):
    """A weight dataset (or a layer group) is renamed, so weight_names / layer_names name something missing."""

    kinds = (MODEL, WEIGHTS)

    def edit(self, h5, rng, dst):
        if rng.random() < 0.7:
            path = rng.choice(_weight_datasets(h5, optimizer=rng.random() < 0.2))
        else:
            path = rng.choice(_layer_groups(h5))
        new = path + rng.choice(["_renamed", "x", ":1", " "])
        h5.move(path, new)
        return f"{path} renamed to {new}"


class OptimizerDamage(H5Mutator):
    """The optimizer state is damaged: a listed optimizer weight missing, weight_names listing fewer / more,
    an optimizer dataset of the wrong shape, optimizer_weights empty."""

    kinds = (MODEL,)

    def edit(self, h5, rng, dst):
        if "optimizer_weights" not in h5:
            raise NotApplicable("no optimizer")
        group = h5["optimizer_weights"]
        datasets = _datasets(group)
        variant = rng.choice(["missing", "fewer-names", "more-names", "wrong-shape", "empty", "iterations"])
        if variant == "missing" and datasets:
            path = rng.choice(datasets)
            del h5[path]
            return f"deleted {path}"
        if variant in ("fewer-names", "more-names") and "weight_names" in group.attrs:
            names = list(group.attrs["weight_names"])
            names = names[: len(names) // 2] if variant == "fewer-names" else names + [names[0]] if names else names
            group.attrs["weight_names"] = np.array(names) if names else np.array([], "f8")
            return variant
        if variant == "wrong-shape" and datasets:
            path = rng.choice(datasets)
            _replace(h5, path, lambda parent, leaf: parent.create_dataset(leaf, data=np.ones((2, 7), "f4")))
            return f"{path} (2, 7)"
        if variant == "iterations":
            its = [p for p in datasets if "iterations" in p]
            if its:
                value = rng.choice([np.float32(np.nan), np.int64(-1), np.array([1, 2]), np.array(b"x")])
                _replace(h5, its[0], lambda parent, leaf: parent.create_dataset(leaf, data=value))
                return f"{its[0]} = {value!r}"
        for key in list(group.keys()):
            del group[key]
        return "optimizer_weights emptied"


def _chunk_offset(dst, path):
    with h5py.File(dst, "r") as h5:
        info = h5[path].id.get_chunk_info(0)
        return info.byte_offset, info.size


class Fletcher32Corrupt(H5Mutator):
    """A weight dataset is rewritten with a Fletcher-32 checksum (chunked), then a byte of its stored chunk is flipped
    on disk: reading it fails the checksum."""

    kinds = (MODEL, WEIGHTS)

    def edit(self, h5, rng, dst):
        candidates = [p for p in _weight_datasets(h5, optimizer=rng.random() < 0.2) if h5[p].size and h5[p].shape]
        if not candidates:
            raise NotApplicable("no non-empty datasets")
        path = rng.choice(candidates)
        data = h5[path][()]
        _replace(h5, path, lambda parent, leaf: parent.create_dataset(leaf, data=data, chunks=True, fletcher32=True))
        self._path = path
        return f"{path} fletcher32"

    def after_close(self, dst, rng, description):
        offset, size = _chunk_offset(dst, self._path)
        at = offset + rng.randrange(max(1, size - 4))  # in the data, before the stored checksum
        _flip_file_bytes(dst, [at], rng)
        return f"{description}, byte {at} flipped"


class CompressedChunkCorrupt(H5Mutator):
    """A weight dataset is rewritten gzip-compressed (chunked), then bytes of its compressed chunk are flipped or
    zeroed on disk: decompression fails or yields garbage."""

    kinds = (MODEL, WEIGHTS)

    def edit(self, h5, rng, dst):
        candidates = [p for p in _weight_datasets(h5) if h5[p].size and h5[p].shape]
        if not candidates:
            raise NotApplicable("no non-empty datasets")
        path = rng.choice(candidates)
        data = h5[path][()]
        _replace(h5, path, lambda parent, leaf: parent.create_dataset(
            leaf, data=data, chunks=True, compression="gzip", shuffle=rng.random() < 0.5))
        self._path = path
        return f"{path} gzip"

    def after_close(self, dst, rng, description):
        offset, size = _chunk_offset(dst, self._path)
        count = rng.choice([1, 4, size])
        offsets = [offset + rng.randrange(size) for _ in range(count)]
        _flip_file_bytes(dst, offsets, rng)
        return f"{description}, {count} bytes of its chunk flipped"


# ---------------------------------------------------------------------------------------------------------------
# bytes


class Truncate(Mutator):
    """The file is cut short: at 0, 1, 8 bytes, inside the first 2 KB (superblock, root header), at a random
    offset, at half, one byte short."""

    def apply(self, src, dst, rng):
        data = Path(src).read_bytes()
        n = len(data)
        cut = rng.choice([0, 1, 8, rng.randrange(min(n, 2048)), rng.randrange(n), rng.randrange(n), n // 2, n - 1])
        Path(dst).write_bytes(data[:cut])
        return f"truncated to {cut} of {n} bytes"


class BitFlip(Mutator):
    """1 to 32 random bits are flipped: anywhere, or in the first 4 KB (HDF5 metadata lives there)."""

    def apply(self, src, dst, rng):
        data = bytearray(Path(src).read_bytes())
        count = rng.choice([1, 1, 2, 4, 8, 32])
        head = rng.random() < 0.5
        span = min(len(data), 4096) if head else len(data)
        offsets = sorted(rng.randrange(span) for _ in range(count))
        for offset in offsets:
            data[offset] ^= 1 << rng.randrange(8)
        Path(dst).write_bytes(bytes(data))
        return f"{count} bits flipped {'in the first 4 KB' if head else 'anywhere'} at {offsets[:8]}"


class ZeroRegion(Mutator):
    """A 4 KB-aligned region (4 KB, or a shorter span at its start) is zeroed."""

    def apply(self, src, dst, rng):
        data = bytearray(Path(src).read_bytes())
        start = rng.randrange(max(1, math.ceil(len(data) / 4096))) * 4096
        length = rng.choice([4096, 4096, 512, 64])
        end = min(len(data), start + length)
        data[start:end] = bytes(end - start)
        Path(dst).write_bytes(bytes(data))
        return f"zeroed [{start}, {end})"


class AppendRandom(Mutator):
    """1 byte to 64 KB of random bytes are appended."""

    def apply(self, src, dst, rng):
        data = Path(src).read_bytes()
        count = rng.choice([1, 7, 512, 4096, 65536])
        Path(dst).write_bytes(data + rng.randbytes(count))
        return f"{count} random bytes appended"


class PrependBytes(Mutator):
    """Bytes are put in front of the file (HDF5 looks for its signature at 0, 512, 1024, ...): 1, 511, 512 or 4096
    bytes of zeros or noise."""

    def apply(self, src, dst, rng):
        data = Path(src).read_bytes()
        count = rng.choice([1, 511, 512, 4096])
        fill = bytes(count) if rng.random() < 0.5 else rng.randbytes(count)
        Path(dst).write_bytes(fill + data)
        return f"{count} bytes prepended"


# ---------------------------------------------------------------------------------------------------------------
# the registry and cases

#: Every mutator, in the round-robin order of :func:`make_case`.
MUTATORS = [
    AttrWrongType(), AttrEmpty(), AttrNonUTF8(), AttrDeleted(), AttrOddNames(), AttrChunkedList(),
    ConfigTopLevelType(), ConfigInvalidJSON(), ConfigNaN(), ConfigDeleteKey(), ConfigWrongType(),
    ConfigElementWrongType(), ConfigDeepNesting(), ConfigHugeNumbers(), ConfigGraph(), JsonFileEncoding(),
    ConfigWide(), ManyLayerGroups(), NamesWithControlChars(), ConfigControlChars(),
    GroupForDataset(), DatasetForGroup(), TemplateGroupToDataset(), DatasetWrongDtype(), DatasetWrongShape(),
    HugeDeclaredShape(), SoftLinkDangling(), SoftLinkLoop(), SoftLinkValid(), ExternalLink(), WeightRenamed(),
    OptimizerDamage(), Fletcher32Corrupt(), CompressedChunkCorrupt(),
    Truncate(), BitFlip(), ZeroRegion(), AppendRandom(), PrependBytes(),
]


def register(mutators, manifest=None):
    """Add mutators of another input kind (their ``kinds`` name it) to the round robin; ``manifest()`` returns
    the fixture entries of that kind, each with its ``root`` folder (and ``input``, its case's input name, where
    :func:`mutate_kinds.input_name` does not know the kind), as :mod:`mutate_kinds` and :mod:`mutate_bytecode` do."""
    MUTATORS.extend(mutators)
    BY_NAME.update({m.name: m for m in mutators})
    if manifest is not None:
        _MANIFESTS.append(manifest)


_MANIFESTS = []


def _OTHER_KINDS():  # noqa: N802 - read like a constant, made on first use
    return [entry for manifest in _MANIFESTS for entry in manifest()]


BY_NAME = {m.name: m for m in MUTATORS}


@dataclass
class Case:
    """One mutated input: ``path`` in its own folder ``folder`` (which may also hold link targets)."""

    index: int
    seed: int
    mutator: str
    fixture: str
    fixture_type: str
    description: str
    path: str
    folder: str
    config: Optional[str] = None  # the architecture given with the input (config=), for a TF checkpoint

    def to_dict(self):
        return asdict(self)


def make_case(seed, index, workdir, mutators=None):
    """Write the mutated input number ``index`` of ``seed`` under ``workdir``/case-NNNNN/ and return its Case.

    The mutator is ``mutators[index % len(mutators)]``; the fixture and every choice come from
    ``random.Random(f"{seed}-{index}")``, so the same (seed, index) always gives the same bytes.
    """
    mutators = mutators or MUTATORS
    mutator = mutators[index % len(mutators)]
    rng = random.Random(f"{seed}-{index}")
    folder = Path(workdir) / f"case-{index:05d}"
    candidates = fixtures(mutator.kinds)
    last = None
    for _attempt in range(12):
        entry = rng.choice(candidates)
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        if "input" in entry:  # a kind that names its input (mutate_bytecode)
            path = folder / entry["input"]
        elif "root" in entry:  # a kind of mutate_kinds
            path = folder / mutate_kinds.input_name(entry)
        else:
            path = folder / ("input.json" if entry["file"].endswith(".json") else "input.h5")
        try:
            description = mutator.apply(Path(entry.get("root", FIXTURES)) / entry["file"], path, rng)
        except NotApplicable as error:
            last = error
            continue
        config = mutate_kinds.case_config(entry, path) if "root" in entry else None
        return Case(index, seed, mutator.name, entry["file"], entry["file_type"], description, str(path), str(folder),
                    config)
    raise NotApplicable(f"{mutator.name}: no applicable fixture after 12 tries ({last})")


import mutate_kinds  # noqa: E402  (YAML, SavedModel and TF checkpoint mutators; they use this module's classes)

register(mutate_kinds.MUTATORS, mutate_kinds.manifest)

import mutate_bytecode  # noqa: E402  (stored bytecode: the Lambda functions that issue 22 decompiles)

register(mutate_bytecode.MUTATORS, mutate_bytecode.manifest)


if __name__ == "__main__":  # pragma: no cover - a quick way to look at a few cases
    import sys
    import tempfile

    out = Path(tempfile.mkdtemp(prefix="mgpu-fuzz-"))
    for i in range(int(sys.argv[1]) if len(sys.argv) > 1 else len(MUTATORS)):
        case = make_case(0, i, out)
        print(f"{case.index:5d} {case.mutator:24s} {case.fixture:40s} {case.description[:90]}")
    print(out)
