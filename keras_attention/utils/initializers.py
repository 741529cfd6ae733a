"""Fresh initializers for sublayers."""


def clone_initializer(initializer):
    """A fresh copy of `initializer`, so same-shaped kernels differ.

    One unseeded initializer object shared by two same-shaped sublayers
    gives both the same values; each sublayer gets its own copy instead.
    Strings and `None` are returned as they are (Keras makes a fresh object
    from a string for every weight).
    """
    if initializer is None or isinstance(initializer, str):
        return initializer
    return initializer.__class__.from_config(initializer.get_config())
