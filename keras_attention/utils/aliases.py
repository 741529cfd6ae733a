"""Arguments accepted under two names: ours and keras-hub's.

A layer stores one canonical name per concept (ours) and accepts the other
spelling too, so code written for `keras_hub.layers` runs unchanged. Giving
both names is an error unless they agree.
"""

import inspect


def one_of(name, value, other_name, other_value, default):
    """The value given as `name` or as `other_name`, else `default`.

    Both default to `None` in the caller's signature, so that an argument
    left out can be told from one given.
    """
    if other_value is None:
        return default if value is None else value
    if value is not None and value != other_value:
        raise ValueError(
            f"`{other_name}` is another name for `{name}`; give one of them "
            f"(or equal values). Received: {name}={value!r}, "
            f"{other_name}={other_value!r}"
        )
    return other_value


def rename_keywords(call, args, kwargs, names):
    """`kwargs` with each key of `names` renamed to its value.

    Args:
        call: the function the arguments are for; its signature tells
            which of our names `args` already fill by position.
        args: the positional arguments of the call.
        kwargs: dict of keyword arguments, as given.
        names: dict `{other name: our name}`.

    Returns:
        A new dict of keyword arguments under our names only.
    """
    positional = list(inspect.signature(call).parameters)[: len(args)]
    renamed = dict(kwargs)
    for other_name, name in names.items():
        if other_name not in renamed:
            continue
        if name in renamed or name in positional:
            raise ValueError(
                f"`{other_name}` is another name for `{name}`; give one of "
                f"them. Received: both `{name}` and `{other_name}`"
            )
        renamed[name] = renamed.pop(other_name)
    return renamed
