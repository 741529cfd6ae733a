"""Plots of attention weights (matplotlib, imported when first needed).

- `alignment_weights`: the soft alignment of a decomposable attention
  model for a batch of sentence pairs.
- `plot_alignment`: a premise x hypothesis heatmap of such weights.
"""

import numpy as np
from keras import ops

from keras_attention.models.decomposable_attention import ALIGNMENT_LAYER


def alignment_weights(model, premise, hypothesis, layer_name=ALIGNMENT_LAYER):
    """Reads the premise-to-hypothesis alignment weights out of a model.

    Args:
        model: a functional model with a `SoftAlignment` layer called with
            `return_attention_scores=True`, such as
            `keras_attention.models.decomposable_attention_model`.
        premise: int array `(B, T)` of token ids (0 = padding).
        hypothesis: int array `(B, S)` of token ids.
        layer_name: name of the `SoftAlignment` layer. Defaults to
            `"soft_alignment"`.

    Returns:
        A float NumPy array `(B, T, S)`: row `i` holds the weights of
        premise token `i` over the hypothesis tokens (zero at padding).

    Raises:
        ValueError: if the model has no such layer, or the layer does not
            output its weights.
    """
    import keras

    try:
        layer = model.get_layer(layer_name)
    except ValueError:
        raise ValueError(
            f"The model has no layer named {layer_name!r}. Received: "
            f"layer_name={layer_name!r}"
        ) from None
    outputs = layer.output
    if not isinstance(outputs, (list, tuple)) or len(outputs) < 3:
        raise ValueError(
            f"Layer {layer_name!r} does not output its attention weights; "
            "call it with return_attention_scores=True when building the "
            "model."
        )
    probe = keras.Model(model.inputs, outputs[2])
    weights = probe.predict_on_batch(
        {"premise": np.asarray(premise), "hypothesis": np.asarray(hypothesis)}
    )
    return np.asarray(ops.convert_to_numpy(weights))


def plot_alignment(
    weights,
    premise_tokens,
    hypothesis_tokens,
    ax=None,
    title=None,
    cmap="Blues",
    annotate=True,
):
    """Draws an alignment matrix as a heatmap.

    Rows are premise tokens, columns hypothesis tokens; the matrix is cut
    to the token lists' lengths, so padded positions are not drawn.

    Args:
        weights: array `(T, S)` (or `(1, T, S)`), for example one row of
            `alignment_weights`.
        premise_tokens: list of the premise's tokens (the row labels).
        hypothesis_tokens: list of the hypothesis's tokens (the column
            labels).
        ax: optional matplotlib `Axes` to draw into. Defaults to a new
            figure.
        title: optional title.
        cmap: matplotlib colormap name. Defaults to `"Blues"`.
        annotate: bool. Write each weight into its cell. Defaults to
            `True`.

    Returns:
        The matplotlib `Axes`.

    Raises:
        ValueError: if `weights` is not 2-D (after dropping a batch of one)
            or is smaller than the token lists.
    """
    import matplotlib

    if ax is None:
        matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    weights = np.asarray(ops.convert_to_numpy(weights), dtype="float32")
    if weights.ndim == 3 and weights.shape[0] == 1:
        weights = weights[0]
    rows, cols = len(premise_tokens), len(hypothesis_tokens)
    if weights.ndim != 2 or weights.shape[0] < rows or weights.shape[1] < cols:
        raise ValueError(
            "Argument `weights` must be a (T, S) matrix with at least "
            f"{rows} rows and {cols} columns (the token counts). Received: "
            f"weights with shape {weights.shape}"
        )
    weights = weights[:rows, :cols]
    if ax is None:
        _, ax = plt.subplots(figsize=(1.0 + 0.55 * cols, 1.0 + 0.45 * rows))
    image = ax.imshow(weights, cmap=cmap, vmin=0.0, vmax=1.0, aspect="auto")
    ax.set_xticks(range(cols), labels=list(hypothesis_tokens), rotation=60)
    ax.set_yticks(range(rows), labels=list(premise_tokens))
    ax.set_xlabel("hypothesis")
    ax.set_ylabel("premise")
    if annotate:
        for i in range(rows):
            for j in range(cols):
                value = weights[i, j]
                ax.text(
                    j,
                    i,
                    f"{value:.2f}",
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="white" if value > 0.5 else "black",
                )
    if title:
        ax.set_title(title)
    ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    ax.figure.tight_layout()
    return ax
