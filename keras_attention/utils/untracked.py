"""A holder that hides a value from attribute tracking."""


class Untracked:
    """Holds `value` out of sight of Keras's and TensorFlow's tracking.

    Keras layers and models, and TensorFlow's `tf.Module`, track what is
    assigned to their attributes: a model assigned to an exporter becomes
    part of the exporter's saved graph, and a tensor assigned to a layer
    may be wrapped or refused. Assigning `Untracked(value)` stores the
    value where neither looks; read it back as `holder.value`.

    Example:

    >>> from keras_attention.utils.untracked import Untracked
    >>> holder = Untracked([1, 2])
    >>> holder.value
    [1, 2]
    """

    def __init__(self, value):
        self.value = value
