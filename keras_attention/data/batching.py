"""Length-bucketed batches of padded token ids, for `model.fit`.

Sentence-pair data padded to the longest sentence of the corpus wastes
most of an attention model's work: on the SNLI subset the median sentence
has 10 tokens and the longest 59, and self-attention costs grow with the
square of the padded width. `BucketedBatches` groups examples of similar
length, cuts each batch to a multiple of `width_step` that holds its
longest example, and feeds `model.fit` through a `tf.data` pipeline that
works on every Keras backend. Translation uses the same class with its
own bucket widths, a token budget per batch and targets cut with the
inputs (`keras_attention.data.translation.make_batches`).

The order of the batches is a function of the seed and the epoch number
only, so a run resumed from a backup (which restarts at an epoch
boundary) sees the same batches as an uninterrupted one:

```python
batches = BucketedBatches(x, y, batch_size=32, seed=1337)
backup = keras_attention.callbacks.BackupAndRestore("run/backup")
model.fit(
    batches.as_dataset(epochs=None, initial_epoch=backup.initial_epoch()),
    steps_per_epoch=len(batches),
    epochs=10,
    callbacks=[backup],
)
```
"""

import numpy as np

from keras_attention.utils.optional import import_optional
from keras_attention.utils.validation import check_non_negative_int
from keras_attention.utils.validation import check_positive_int


def padded_lengths(ids):
    """Length of each right-padded row of `ids` (0 is padding).

    The length is one past the last non-zero id, so a zero inside a
    sentence is never cut off.
    """
    ids = np.asarray(ids)
    nonzero = ids != 0
    last = ids.shape[1] - np.argmax(nonzero[:, ::-1], axis=1)
    return np.where(nonzero.any(axis=1), last, 0)


class BucketedBatches:
    """Batches of examples of similar length, each cut to its own width.

    Examples are grouped by their longest input (over all arrays of
    `inputs`) into buckets of widths `width_step, 2 * width_step, ...` (or
    the given `widths`: each example goes to the narrowest that holds it);
    a batch takes examples from one bucket and every input array is cut to
    that bucket's width. Shuffling draws a new order of the examples within
    each bucket and of the batches for every epoch from `(seed, epoch)`.

    Args:
        inputs: dict of name to int array `(num_examples, length)`,
            right-padded with 0, or a single such array.
        targets: optional array with `num_examples` rows.
        batch_size: int, examples per batch (the last batch of a bucket
            may be smaller unless `drop_remainder`).
        width_step: int, batch widths are multiples of this (and at most
            the arrays' length).
        shuffle: bool, new order every epoch.
        seed: int, seed of the order.
        drop_remainder: bool, drop each bucket's last incomplete batch
            (for strategies that need equal batches).
        widths: optional list of int, the bucket widths (instead of
            multiples of `width_step`); the widest must hold every example.
        tokens_per_batch: optional int. A bucket of width `w` makes batches
            of `max(1, tokens_per_batch // w)` examples (instead of
            `batch_size`): about the same number of padded tokens each.
        cut_targets: bool. `targets` are token ids `(num_examples, length)`
            cut to the batch's width like the inputs (sequence labels).
        per_input_widths: bool. Bucket by each input's own length instead
            of the longest: a bucket is a tuple of widths, one per input,
            and each input is cut to its own (a short hypothesis is not
            padded to its premise's length). Not with `widths`,
            `tokens_per_batch` or `cut_targets`. Defaults to `False`.

    Example:

    >>> ids = np.array([[3, 4, 0, 0], [5, 0, 0, 0], [6, 7, 8, 9]])
    >>> batches = BucketedBatches(
    ...     {"tokens": ids}, np.array([0, 1, 2]), batch_size=2,
    ...     width_step=2, shuffle=False)
    >>> [(rows.tolist(), width) for rows, width in batches.batches(epoch=0)]
    [([0, 1], 2), ([2], 4)]
    """

    def __init__(
        self,
        inputs,
        targets=None,
        batch_size=32,
        width_step=8,
        shuffle=True,
        seed=0,
        drop_remainder=False,
        widths=None,
        tokens_per_batch=None,
        cut_targets=False,
        per_input_widths=False,
    ):
        check_positive_int("batch_size", batch_size)
        check_positive_int("width_step", width_step)
        check_positive_int(
            "tokens_per_batch", tokens_per_batch, allow_none=True
        )
        self.single_input = not isinstance(inputs, dict)
        self.inputs = {"inputs": inputs} if self.single_input else inputs
        self.inputs = {k: np.asarray(v) for k, v in self.inputs.items()}
        self._check_inputs()
        self.num_examples = len(next(iter(self.inputs.values())))
        if targets is not None:
            targets = np.asarray(targets)
            if len(targets) != self.num_examples:
                raise ValueError(
                    "`targets` must have one row per example. Received: "
                    f"targets with {len(targets)} rows for "
                    f"{self.num_examples} examples"
                )
        self.targets = targets
        self.batch_size = batch_size
        self.width_step = width_step
        self.shuffle = shuffle
        self.seed = seed
        self.drop_remainder = drop_remainder
        self.tokens_per_batch = tokens_per_batch
        self.cut_targets = cut_targets
        if cut_targets and (targets is None or targets.ndim != 2):
            raise ValueError(
                "`cut_targets=True` needs targets of token ids "
                "(num_examples, length). Received: targets with shape "
                f"{None if targets is None else targets.shape}"
            )

        self.length = next(iter(self.inputs.values())).shape[1]
        self.per_input_widths = per_input_widths
        if per_input_widths:
            if widths is not None or tokens_per_batch or cut_targets:
                raise ValueError(
                    "`per_input_widths=True` takes the widths from "
                    "`width_step` alone. Received: "
                    f"widths={widths!r}, tokens_per_batch="
                    f"{tokens_per_batch!r}, cut_targets={cut_targets!r}"
                )
            self.example_widths = self._per_input_widths(width_step)
            self.widths = sorted(set(self.example_widths))
            position = {width: i for i, width in enumerate(self.widths)}
            self._bucket_of = np.array(
                [position[width] for width in self.example_widths]
            )
            return
        longest = np.max(
            [padded_lengths(ids) for ids in self.inputs.values()], axis=0
        )
        if widths is None:
            # Width of each example's bucket: its length rounded up to a
            # multiple of `width_step` (at least one step), at most `length`.
            steps = np.maximum(1, -(-longest // width_step))
            self.example_widths = np.minimum(steps * width_step, self.length)
        else:
            self.example_widths = self._narrowest(widths, longest)
        self.widths = sorted(set(self.example_widths.tolist()))

    def _per_input_widths(self, width_step):
        """Each example's bucket: a tuple of one width per input, each its
        length rounded up to a multiple of `width_step`."""
        columns = []
        for ids in self.inputs.values():
            steps = np.maximum(1, -(-padded_lengths(ids) // width_step))
            columns.append(np.minimum(steps * width_step, self.length))
        return [tuple(int(w) for w in row) for row in zip(*columns)]

    @staticmethod
    def _narrowest(widths, longest):
        """The narrowest of `widths` that holds each example."""
        for width in widths:
            check_positive_int("widths", width)
        widths = np.array(sorted(set(widths)))
        index = np.searchsorted(widths, longest)
        if len(longest) and index.max() == len(widths):
            raise ValueError(
                "Every example must fit the widest bucket. Received: an "
                f"example of {int(longest.max())} tokens and "
                f"widths={widths.tolist()}"
            )
        return widths[index]

    def size_of(self, width):
        """Examples per batch of the bucket of width `width`."""
        if self.tokens_per_batch is None:
            return self.batch_size
        return max(1, self.tokens_per_batch // width)

    def _check_inputs(self):
        shapes = {}
        for name, ids in self.inputs.items():
            if ids.ndim != 2 or not np.issubdtype(ids.dtype, np.integer):
                raise ValueError(
                    f"Each input must be a 2D integer array of token ids. "
                    f"Received: {name} with shape {ids.shape} and dtype "
                    f"{ids.dtype}"
                )
            shapes[name] = ids.shape
        if len(set(shapes.values())) > 1:
            raise ValueError(
                "All inputs must have the same shape (examples, length). "
                f"Received: {shapes}"
            )

    def batches(self, epoch=0):
        """`[(row_indices, width), ...]`: the batches of one epoch, in order."""
        rng = np.random.default_rng([self.seed, epoch])
        batches = []
        for width in self.widths:
            rows = np.flatnonzero(self._in_bucket(width))
            if self.shuffle:
                rows = rng.permutation(rows)
            size = self.size_of(width)
            for start in range(0, len(rows), size):
                chunk = rows[start : start + size]
                if self.drop_remainder and len(chunk) < size:
                    continue
                batches.append((chunk, width))
        if self.shuffle:
            batches = [batches[i] for i in rng.permutation(len(batches))]
        return batches

    def _check_not_empty(self, epoch):
        """The batches of `epoch`; a `ValueError` if there are none."""
        batches = self.batches(epoch)
        if not batches:
            dropped = ""
            if self.drop_remainder and self.num_examples:
                dropped = (
                    " (drop_remainder=True drops every bucket's incomplete "
                    "batch)"
                )
            raise ValueError(
                f"An epoch of these batches holds no batch{dropped}: "
                "expected at least one example per epoch. Received: "
                f"{self.num_examples} examples, batch_size="
                f"{self.batch_size}, drop_remainder={self.drop_remainder}"
            )
        return batches

    def _in_bucket(self, width):
        if self.per_input_widths:
            return self._bucket_of == self.widths.index(width)
        return self.example_widths == width

    def __len__(self):
        """Batches per epoch (the same for every epoch)."""
        return len(self.batches(epoch=0))

    def batch(self, rows, width):
        """The arrays of one batch: `x` or `(x, y)`; `width` is one width,
        or one per input (`per_input_widths`)."""
        if not self.per_input_widths:
            width = (width,) * len(self.inputs)
        x = {
            name: ids[rows, :input_width]
            for (name, ids), input_width in zip(self.inputs.items(), width)
        }
        if self.single_input:
            x = x["inputs"]
        if self.targets is None:
            return x
        if self.cut_targets:
            return x, self.targets[rows, : width[0]]
        return x, self.targets[rows]

    def as_dataset(self, epochs=1, initial_epoch=0, new_order_per_pass=False):
        """A `tf.data.Dataset` of the batches of `epochs` epochs.

        Epoch `initial_epoch` comes first. `epochs=None` gives an endless
        stream for `model.fit(..., steps_per_epoch=len(batches))`: start it
        at `BackupAndRestore.initial_epoch()` and a resumed run sees the
        batches an uninterrupted run sees. An endless stream whose epoch
        holds no batch (no example, or `drop_remainder` drops them all)
        raises a `ValueError` instead of looking for a batch forever; a
        finite one is then empty. The order is fixed by the
        position in the stream, so prefetching cannot change it.

        With `new_order_per_pass`, each new pass over the dataset (each
        `iter`, for example each pass of `dataset.repeat()`) continues with
        the next epochs, as a reshuffling `tf.data` pipeline does: pass `k`
        holds epochs `initial_epoch + k * epochs, ...`. The order is then a
        function of the seed and the number of passes made.
        """
        check_non_negative_int("initial_epoch", initial_epoch)
        check_positive_int("epochs", epochs, allow_none=True)
        if epochs is None:
            # An epoch without a batch would make the endless stream spin
            # forever looking for the next batch.
            self._check_not_empty(initial_epoch)
        tf = import_optional("tensorflow", "tensorflow", "as_dataset")

        def spec(array, width_axis):
            shape = [None] * array.ndim
            if not width_axis:
                shape[1:] = array.shape[1:]
            return tf.TensorSpec(shape, tf.as_dtype(array.dtype))

        x_spec = {k: spec(v, True) for k, v in self.inputs.items()}
        if self.single_input:
            x_spec = x_spec["inputs"]
        signature = x_spec
        if self.targets is not None:
            signature = (x_spec, spec(self.targets, self.cut_targets))

        passes = [0]

        def generate():
            first = initial_epoch
            if new_order_per_pass and epochs is not None:
                first += passes[0] * epochs
                passes[0] += 1
            epoch = first
            while epochs is None or epoch < first + epochs:
                if epochs is None:
                    batches = self._check_not_empty(epoch)
                else:
                    batches = self.batches(epoch)
                for rows, width in batches:
                    yield self.batch(rows, width)
                epoch += 1

        dataset = tf.data.Dataset.from_generator(
            generate, output_signature=signature
        )
        if epochs is not None:
            # A known length lets Keras size its progress bar and end
            # epochs without a warning.
            dataset = dataset.apply(
                tf.data.experimental.assert_cardinality(len(self) * epochs)
            )
        return dataset.prefetch(2)


def predict_in_buckets(model, inputs, batch_size=256, width_step=8):
    """`model.predict(inputs)`, run on length-bucketed batches.

    Padding every example to the longest of the split makes an attention
    model do most of its work on padding; here each batch is cut to its
    bucket's width (`BucketedBatches`, no shuffling) and the outputs are
    put back in the examples' order. A model that masks its padding gives
    the padded prediction up to rounding.

    Args:
        model: a Keras model whose outputs (an array, or a dict or list of
            them) have one row per example and no axis that follows the
            input width.
        inputs: a right-padded int array `(num_examples, length)` or a dict
            of them, as `model.predict` takes.
        batch_size: int, examples per batch.
        width_step: int, batch widths are multiples of this.

    Returns:
        The outputs, with the structure of the model's, as NumPy arrays of
        `num_examples` rows.
    """
    import keras

    if isinstance(inputs, dict):
        # Arrays of different lengths (as `model.predict` takes them) are
        # right-padded to the longest: the batches cut them again.
        length = max(np.shape(ids)[-1] for ids in inputs.values())
        inputs = {
            name: _pad_to(np.asarray(ids), length)
            for name, ids in inputs.items()
        }
    batches = BucketedBatches(
        inputs, batch_size=batch_size, width_step=width_step, shuffle=False
    )

    rows_seen, pieces = [], []
    for rows, width in batches.batches(epoch=0):
        outputs = model.predict_on_batch(batches.batch(rows, width))
        outputs = keras.tree.map_structure(np.asarray, outputs)
        for output in keras.tree.flatten(outputs):
            if output.ndim == 0 or output.shape[0] != len(rows):
                raise ValueError(
                    "Every output must have one row per example. Received: "
                    f"an output of shape {output.shape} for a batch of "
                    f"{len(rows)} examples"
                )
        rows_seen.append(rows)
        pieces.append(outputs)
    if not pieces:
        raise ValueError(
            f"`inputs` must hold at least one example. Received: "
            f"{batches.num_examples} examples"
        )
    order = np.argsort(np.concatenate(rows_seen), kind="stable")

    def join(*parts):
        shapes = {part.shape[1:] for part in parts}
        if len(shapes) > 1:
            raise ValueError(
                "Each output must have the same shape per example in every "
                "batch (an axis that follows the input width cannot be put "
                f"back together). Received: per-example shapes {sorted(shapes)}"
            )
        return np.concatenate(parts, axis=0)[order]

    return keras.tree.map_structure(join, *pieces)


def _pad_to(ids, length):
    if ids.ndim != 2:
        return ids  # `BucketedBatches` names the bad shape.
    return np.pad(ids, [(0, 0), (0, length - ids.shape[1])])
