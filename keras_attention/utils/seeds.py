"""Sub-seeds: one user seed, a distinct stream for every random consumer.

A composite layer or model builder takes one `seed` and hands parts of it
to several random consumers (dropout layers, samplers, the heads' dropout).
Offsets such as `seed + 1` collide (`seed + 2 * i` of layer `i` meets
`seed + 1` of another part), and two consumers built from the same integer
draw the same stream: on jax a dropout mask and a sampler's uniforms built
from one seed are slices of the same random bits. `sub_seed` derives the
seed of each consumer from the user's seed and the consumer's name, so that
names, not arithmetic, keep the streams apart.
"""

import hashlib

_SEED_RANGE = 2**31 - 1


def sub_seed(seed, *names):
    """The seed of the random consumer `names` under the user's `seed`.

    The result is a deterministic function of `seed` and the names (a hash,
    the same on every machine and Python run), in `[0, 2**31 - 1)`, so two
    consumers with different names get unrelated seeds. `None` stays `None`
    (unseeded consumers stay unseeded).

    Args:
        seed: the user's integer seed, or `None`.
        *names: the consumer's path, for example `("block_0", "dropout")`;
            strings or integers.

    Returns:
        An `int`, or `None` when `seed` is `None`.

    Example:

    >>> from keras_attention.utils.seeds import sub_seed
    >>> sub_seed(1337, "dropout") == sub_seed(1337, "dropout")
    True
    >>> sub_seed(1337, "dropout") == sub_seed(1337, "sampler")
    False
    >>> sub_seed(None, "dropout") is None
    True
    """
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(
            f"The argument `seed` must be an integer or None. Received: "
            f"seed={seed!r}"
        )
    if not names:
        raise ValueError(
            "`sub_seed` needs at least one name for the consumer. "
            f"Received: names={names!r}"
        )
    path = "/".join([str(seed)] + [str(name) for name in names])
    digest = hashlib.sha256(path.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "little") % _SEED_RANGE
