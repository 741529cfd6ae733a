"""Thread settings for tests of small models."""

import contextlib

import keras

from keras_attention.utils.optional import import_optional


@contextlib.contextmanager
def single_torch_thread():
    """Runs the block with one torch intra-op thread, restored afterwards.

    Tiny models gain nothing from torch's per-op thread pool, and on a busy
    2-core machine every op waits on descheduled threads (about 0.5 s per
    training step of a width-64 Transformer with 2 threads against 0.04 s
    with 1 under a load average of 4). Does nothing on other backends.
    """
    if keras.backend.backend() != "torch":
        yield
        return
    torch = import_optional("torch", "torch", "single_torch_thread")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
