"""The error the data loaders raise for data a user can fix.

A loader that finds a file missing, empty, malformed or without a usable
pair raises `DataError` (a `ValueError`) or `DataFileNotFoundError` (also a
`FileNotFoundError`), with one line that names the file or argument, what
it holds and what was expected. A program can tell these apart from its
own bugs: the applications turn them into a usage message and exit status
2 (`keras_attention.training.cli.user_errors`).
"""


class DataError(ValueError):
    """Data that cannot be used: empty, malformed, or no usable pair."""


class DataFileNotFoundError(DataError, FileNotFoundError):
    """A data file or directory that does not exist."""
