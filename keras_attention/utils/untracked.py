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


class UntrackedAttribute:
    """A class attribute whose values stay out of attribute tracking.

    Declared in a class body (`tokenizer = UntrackedAttribute()`), it
    reads `None` until set; what is set is stored in an `Untracked`
    holder in the instance's dictionary, where neither Keras's tracker,
    torch's module registry nor TensorFlow's sees it. A keras-hub
    tokenizer (a Keras layer) assigned to a model this way does not
    become one of the model's layers or weights. Keras layers and torch
    modules track a value in their `__setattr__` before it reaches the
    descriptor, so such a class routes these names past it (see
    `keras_attention.presets.PresetMixin`).

    Example:

    >>> from keras_attention.utils.untracked import UntrackedAttribute
    >>> class Holder:
    ...     tokenizer = UntrackedAttribute()
    >>> holder = Holder()
    >>> print(holder.tokenizer)
    None
    >>> holder.tokenizer = "words"
    >>> holder.tokenizer
    'words'
    """

    def __set_name__(self, owner, name):
        self.key = f"_untracked_{name}"

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        holder = vars(instance).get(self.key)
        return None if holder is None else holder.value

    def __set__(self, instance, value):
        vars(instance)[self.key] = Untracked(value)
