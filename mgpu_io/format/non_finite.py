"""What NaN or Inf weights mean, said once for every part of mgpu-io (standard library only).

Multi-GPU training with a last batch smaller than the replica count hands some replica 0 or 1 samples; its
BatchNormalization statistics become NaN (keras #11858, tensorflow #24320) and, through the gradient, so can its
learned ``gamma`` and ``beta``. ``inspect`` scans a file for it, ``load_model`` warns after loading,
``recalibrate_batchnorm`` repairs what data can repair, and ``BaseModelCheckpoint`` refuses to save it: all of them
classify weights and explain them with the functions here.
"""

#: Leaf names of the weights that are statistics of the data, not learned: data can recompute them.
STATISTICS = ("moving_mean", "moving_variance", "running_mean", "running_std")


def is_statistic(weight_name):
    """Whether a weight is a moving statistic (recomputable from data) rather than a learned weight.

    Example:
        >>> is_statistic("bn/moving_mean:0"), is_statistic("template/bn_1/gamma:0")
        (True, False)
    """
    leaf = str(weight_name).rsplit("/", 1)[-1].split(":")[0]
    return any(leaf == name or leaf.endswith("_" + name) for name in STATISTICS)


def split_non_finite(weight_names):
    """``(statistics, learned)``: the NaN/Inf weights that data can recompute, and those it cannot."""
    statistics = [name for name in weight_names if is_statistic(name)]
    return statistics, [name for name in weight_names if not is_statistic(name)]


def non_finite_message(weight_names, where):
    """The one explanation of NaN/Inf weights, naming which can be recomputed and which are lost.

    Example:
        >>> print(non_finite_message(["bn/moving_mean:0", "bn/gamma:0"], "the model"))  # doctest: +ELLIPSIS
        Weights of the model hold NaN or Inf, so predictions will be NaN... Lost (learned, data cannot recompute them; retrain those layers or restore an earlier checkpoint): bn/gamma:0.
    """
    statistics, learned = split_non_finite(weight_names)
    parts = [
        f"Weights of {where} hold NaN or Inf, so predictions will be NaN. In multi-GPU training this is the "
        f"uneven-last-batch bug: a replica got 0 or 1 samples of the last batch."
    ]
    if statistics:
        parts.append(
            f"Recomputable from your data with mgpu_io.recalibrate_batchnorm(model, data): {', '.join(statistics)}."
        )
    if learned:
        parts.append(
            f"Lost (learned, data cannot recompute them; retrain those layers or restore an earlier "
            f"checkpoint): {', '.join(learned)}."
        )
    return " ".join(parts)
