"""Find the innermost template in an opened file: its config, its weights per layer, and the wrapper levels.

This is the one place that turns a :class:`~mgpu_io.format.read.StoredModel` into what ``inspect`` reports and
``unwrap`` writes. A full-model file or a JSON config is read through its graph, a weights-only file through its
layer groups; both by :mod:`mgpu_io.format.detect`.
"""

from dataclasses import dataclass, field
from typing import Any, Optional

from mgpu_io.errors import WeightsMismatch
from mgpu_io.format.config import layer_name, model_layers, name_unnamed_models, output_names
from mgpu_io.format.detect import Unrolled, WrapperLevel, detect_weights_only, unroll
from mgpu_io.format.read import CONFIG, MODEL, StoredModel, cached, check_weight, is_group
from mgpu_io.format.weights import LayerWeights, check_shapes, split_by_layer, split_without_config


@dataclass
class Block:
    """Stored weights that belong together: one layer's group, or the whole template's group."""

    group: Any  # the h5py group that holds the names
    names: list[str]
    layer: Optional[str] = None


@dataclass
class Extraction:
    stored: StoredModel
    unrolled: Optional[Unrolled] = None
    weights_wrapper: Optional[WrapperLevel] = None
    blocks: list[Block] = field(default_factory=list)

    @property
    def is_wrapper(self):
        return bool(self.unrolled and self.unrolled.is_wrapper) or self.weights_wrapper is not None

    @property
    def depth(self):
        if self.unrolled is not None:
            return self.unrolled.depth
        return 1 if self.weights_wrapper else 0

    @property
    def template_config(self):
        return self.unrolled.template if self.unrolled else None

    @property
    def levels(self) -> list[WrapperLevel]:
        """Every wrapper level, outermost first (a weights-only file shows one at most)."""
        if self.unrolled is not None:
            return self.unrolled.levels
        return [self.weights_wrapper] if self.weights_wrapper is not None else []

    @property
    def merge_names(self):
        if self.unrolled and self.unrolled.levels:
            return self.unrolled.levels[0].merge_layers
        return self.weights_wrapper.merge_layers if self.weights_wrapper else []

    def layout(self, config=None) -> list[LayerWeights]:
        """The stored weights per top-level layer of ``config`` (the template's own config by default).

        Raises:
            WeightsMismatch: a weight fits no layer, is missing, or has a shape the config rules out.
        """
        config = config if config is not None else self.template_config
        if config is None:  # weights-only file: no graph, only names
            if self.weights_wrapper is not None:
                block = self.blocks[0]
                layers = split_without_config(block.names)
                for layer in layers:
                    layer.group = block.group
            else:
                # each block is one layer's group here; only a weights wrapper's single block has no layer
                layers = [LayerWeights(b.layer, None, b.names, b.group) for b in self.blocks if b.layer is not None]
            _check_present(layers, self.stored)
            return layers
        top_level = {layer_name(layer): layer for layer in model_layers(config)}
        assigned = {name: LayerWeights(name, layer["class_name"], []) for name, layer in top_level.items()}
        stored_layers = {block.layer for block in self.blocks}
        for block in self.blocks:
            renamed = str(block.layer).replace("/", "_")  # structure's `layer-name-slash`: `conv1/conv` is `conv1_conv`
            if block.layer is not None and block.layer in top_level:
                parts = [LayerWeights(block.layer, None, block.names)]
            elif block.layer is not None and renamed in top_level and renamed not in stored_layers:
                parts = [LayerWeights(renamed, None, block.names)]
            else:
                parts = split_by_layer(config, block.names, where=block.group.name)
            for part in parts:
                if part.names:
                    target = assigned[part.layer]
                    if target.names and target.group is not block.group:
                        raise WeightsMismatch(
                            problem=f"Layer {part.layer!r} has weights in two groups",
                            parameter="filepath",
                            expected="one group per layer",
                            received=f"{target.group.name!r} and {block.group.name!r} in filepath={self.stored.path}",
                            fix="The file was not written by Keras",
                        )
                    target.names += part.names
                    target.group = block.group
        layers = list(assigned.values())
        _check_present(layers, self.stored)
        for layer in layers:
            if layer.names:
                shapes = [layer.group[name].shape for name in layer.names]
                check_shapes(top_level[layer.layer], layer.names, shapes, where=f"filepath={self.stored.path}")
        return layers


def extract(stored: StoredModel) -> Extraction:
    """Locate the innermost template of ``stored``; a plain model is its own template."""
    if stored.file_type == CONFIG:
        return Extraction(stored=stored, unrolled=unroll(name_unnamed_models(stored.model_config)))
    if stored.file_type == MODEL:
        unrolled = unroll(name_unnamed_models(stored.model_config, stored.layer_names))
        if unrolled.is_wrapper:
            group_name = unrolled.levels[0].template_layer
            block = Block(_group(stored, group_name), stored.weight_names(group_name))
            return Extraction(stored=stored, unrolled=unrolled, blocks=[block])
        return Extraction(stored=stored, unrolled=unrolled, blocks=_layer_blocks(stored))
    wrapper = _weights_only_wrapper(stored)
    if wrapper is None:
        return Extraction(stored=stored, blocks=_layer_blocks(stored))
    block = Block(_group(stored, wrapper.template_layer), stored.weight_names(wrapper.template_layer))
    return Extraction(stored=stored, weights_wrapper=wrapper, blocks=[block])


def _layer_blocks(stored):
    if not stored.layer_names and any(is_group(stored.weights_root[k]) for k in stored.weights_root):
        raise WeightsMismatch(
            problem="The file lists no layers",
            parameter="filepath",
            expected=f"`layer_names` on {stored.weights_root.name!r}, as Keras writes it",
            received=f"groups {sorted(stored.weights_root.keys())[:12]} in filepath={stored.path}",
            fix="The file is damaged; restore it from its source",
        )
    blocks = []
    for name in stored.layer_names:
        names = stored.weight_names(name) if name in stored.weights_root else []
        if names:
            blocks.append(Block(_group(stored, name), names, name))
    return blocks


def _weights_only_wrapper(stored):
    names = stored.layer_names
    return detect_weights_only(names, lambda name: stored.weight_names(name) if name in stored.weights_root else [])


def _group(stored, name):
    group = cached(stored.weights_root.get(name))
    if group is None:
        raise WeightsMismatch(
            problem=f"The weight group of layer {name!r} is missing",
            parameter="filepath",
            expected=f"a group {name!r} in {stored.weights_root.name!r}, as `layer_names` lists it",
            received=f"groups {sorted(stored.weights_root.keys())[:12]} in filepath={stored.path}",
            fix="The file is damaged; restore it from its source",
        )
    return group


def _check_present(layers, stored):
    path = stored.path
    for layer in layers:
        if len(set(layer.names)) != len(layer.names):
            raise WeightsMismatch(
                problem=f"Layer {layer.layer!r} lists a weight twice",
                parameter="filepath",
                expected="distinct names in `weight_names`",
                received=f"{layer.names} in filepath={path}",
                fix="The file is damaged; restore it from its source",
            )
        missing = [name for name in layer.names if name not in layer.group]
        if missing:
            raise WeightsMismatch(
                problem=f"Weights of layer {layer.layer!r} are listed but missing",
                parameter="filepath",
                expected=f"datasets {missing} in group {layer.group.name!r}",
                received=f"{sorted(layer.group.keys())[:12]} in filepath={path}",
                fix="The file is damaged; restore it from its source",
            )
        for name in layer.names:
            check_weight(layer.group[name], name, stored)


def template_outputs(extraction, config=None):
    """The template's output layer names (of ``config`` when given); ``None`` for weights-only files.

    A weights-only file names its merge layers, not the template's outputs (kuza55's are ``merge_1``...).
    """
    config = config if config is not None else extraction.template_config
    return output_names(config) if config is not None else None
