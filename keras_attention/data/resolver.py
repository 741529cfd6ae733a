"""Finds data files on disk, verifies them and reads them as text lines.

Data files are addressed by a path relative to a data directory, e.g.
`"sick/SICK_train.txt"` (see `keras_attention.data.checksums.KNOWN_FILES`
for the layout). A file is looked for, in this order:

1. in the `data_dir` argument, when one is given (applications pass their
   `--data-dir` flag here);
2. in the directory named by the environment variable
   `KERAS_ATTENTION_DATA`, when it is set and not empty;
3. otherwise it is downloaded from its canonical URL into the Keras cache
   (`~/.keras/keras_attention/...`) with `keras.utils.get_file`, which checks
   the sha256. Files without a public URL cannot be downloaded.

When a data directory is used, no download is attempted: a missing file is
an error.
"""

import gzip
import hashlib
import os
import posixpath
import zlib

from keras_attention.data.checksums import KNOWN_FILES
from keras_attention.data.errors import DataError
from keras_attention.data.errors import DataFileNotFoundError

ENV_VAR = "KERAS_ATTENTION_DATA"
CACHE_SUBDIR = "keras_attention"

_LOOKUP_ORDER = (
    "Data files are looked for in the `data_dir` argument (applications: "
    f"--data-dir), else in the directory named by ${ENV_VAR}, else they are "
    "downloaded into the Keras cache."
)

# (absolute path, mtime_ns, size) -> sha256 hex digest.
_HASH_CACHE = {}


def get_data_dir(data_dir=None):
    """Returns the local data directory to use, if any.

    Args:
        data_dir: Explicit data directory. Takes precedence over the
            environment.

    Returns:
        The absolute path of `data_dir` if given, else that of
        `$KERAS_ATTENTION_DATA` if it is set and not empty, else `None`
        (meaning: download into the Keras cache).

    Raises:
        FileNotFoundError: If the chosen directory does not exist.
    """
    if data_dir is not None:
        source = "data_dir"
        path = os.fspath(data_dir)
    else:
        path = os.environ.get(ENV_VAR, "")
        if not path:
            return None
        source = ENV_VAR
    path = os.path.abspath(os.path.expanduser(path))
    if not os.path.isdir(path):
        raise DataFileNotFoundError(
            f"The data directory '{path}' does not exist or is not a "
            f"directory. {_LOOKUP_ORDER} Received: {source}={path!r}"
        )
    return path


def _normalize_relative_path(relative_path):
    path = os.fspath(relative_path).replace("\\", "/")
    normalized = posixpath.normpath(path)
    if (
        not path
        or posixpath.isabs(normalized)
        or normalized == ".."
        or normalized.startswith("../")
    ):
        raise ValueError(
            "Expected a path relative to the data directory, e.g. "
            f"'sick/SICK_train.txt'. Received: relative_path={relative_path!r}"
        )
    return normalized


def file_sha256(path):
    """Returns the sha256 hex digest of a file, cached per path and stat.

    The digest is cached in-process under the file's absolute path,
    modification time and size, so repeated calls for an unchanged file do
    not read it again.

    Args:
        path: Path of the file.

    Returns:
        The hex digest as a string.
    """
    path = os.path.abspath(os.fspath(path))
    stat = os.stat(path)
    key = (path, stat.st_mtime_ns, stat.st_size)
    digest = _HASH_CACHE.get(key)
    if digest is None:
        hasher = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                hasher.update(block)
        digest = hasher.hexdigest()
        _HASH_CACHE[key] = digest
    return digest


def verify_file(path, relative_path):
    """Checks a local file against the sha256 listed in `KNOWN_FILES`.

    Args:
        path: Path of the local file.
        relative_path: Its path relative to the data directory. Files not
            in `KNOWN_FILES` are not checked.

    Raises:
        ValueError: If the file's sha256 differs from the known one.
    """
    known = KNOWN_FILES.get(_normalize_relative_path(relative_path))
    if known is None:
        return
    if os.path.getsize(path) == 0:
        raise DataError(
            f"The data file '{path}' is empty: expected the file "
            f"{relative_path!r} with sha256 {known.sha256}."
        )
    actual = file_sha256(path)
    if actual != known.sha256:
        raise DataError(
            f"Checksum mismatch for data file '{path}': expected sha256 "
            f"{known.sha256}, received sha256 {actual}. The file is "
            "corrupt or a different version; replace it (or pass "
            "verify=False to skip the check)."
        )


def _download(relative_path):
    known = KNOWN_FILES.get(relative_path)
    if known is None:
        raise DataError(
            f"'{relative_path}' is not a known data file, so it cannot be "
            f"downloaded. Pass data_dir or set ${ENV_VAR} to a directory "
            f"that contains it. Received: relative_path={relative_path!r}"
        )
    if known.url is None:
        raise DataFileNotFoundError(
            f"The data file '{relative_path}' has no public download URL. "
            f"Set ${ENV_VAR} or pass data_dir (applications: --data-dir) to "
            "a data directory that contains it (see the project's data "
            f"README). Received: relative_path={relative_path!r}"
        )
    import keras

    directory, name = posixpath.split(relative_path)
    try:
        return keras.utils.get_file(
            fname=name,
            origin=known.url,
            file_hash=known.sha256,
            cache_subdir=os.path.join(CACHE_SUBDIR, *directory.split("/")),
        )
    except ValueError:  # a hash mismatch: Keras's message names the file
        raise
    except Exception as error:  # Keras reports a failed fetch as Exception
        raise ConnectionError(
            f"Could not download the data file '{relative_path}' from "
            f"{known.url} ({error}). Without network access, set ${ENV_VAR} "
            "or pass data_dir (applications: --data-dir) to a data "
            "directory that contains it. Received: "
            f"relative_path={relative_path!r}"
        ) from error


def get_file(relative_path, data_dir=None, verify=True):
    """Returns the local path of a data file, downloading it if needed.

    Args:
        relative_path: Path relative to the data directory, with forward
            slashes, e.g. `"sick/SICK_train.txt"`. Paths not listed in
            `KNOWN_FILES` are allowed with a data directory (and are not
            verified) but cannot be downloaded.
        data_dir: Data directory; defaults to `$KERAS_ATTENTION_DATA`, and
            without either the file is downloaded into the Keras cache.
        verify: Whether to check the sha256 of a known file found in a data
            directory (downloads are always checked by Keras). The result is
            cached per path, modification time and size.

    Returns:
        The path of the local file, as a string.

    Raises:
        FileNotFoundError: If the file is missing from the data directory,
            if the data directory does not exist, or if the file has to be
            downloaded but has no public URL.
        ValueError: If the checksum does not match, if `relative_path` is
            not relative, or if an unknown file would have to be downloaded.
    """
    relative_path = _normalize_relative_path(relative_path)
    root = get_data_dir(data_dir)
    if root is None:
        return _download(relative_path)
    path = os.path.join(root, *relative_path.split("/"))
    if not os.path.isfile(path):
        source = "data_dir" if data_dir is not None else f"${ENV_VAR}"
        raise DataFileNotFoundError(
            f"Data file not found: '{path}' (data directory '{root}' from "
            f"{source}). {_LOOKUP_ORDER} Received: "
            f"relative_path={relative_path!r}"
        )
    if verify:
        verify_file(path, relative_path)
    return path


def read_lines(path):
    """Reads a UTF-8 text file (gzip-compressed if it ends in `.gz`).

    Line endings (LF, CRLF or CR) are removed; a final line ending does not
    produce an empty last line.

    Args:
        path: Path of the file.

    Returns:
        The list of lines, as strings without line endings.

    Raises:
        DataFileNotFoundError: If the file does not exist.
        DataError: If it cannot be read (a folder, no permission), if the
            gzip stream is truncated or corrupt, or if the file is not
            valid UTF-8. The message names the file.
    """
    path = os.fspath(path)
    try:
        if path.endswith(".gz"):
            with gzip.open(path, "rb") as f:
                raw = f.read()
        else:
            with open(path, "rb") as f:
                raw = f.read()
    except FileNotFoundError:
        raise DataFileNotFoundError(
            f"The file '{path}' does not exist."
        ) from None
    except (IsADirectoryError, PermissionError) as error:
        raise DataError(
            f"The file '{path}' cannot be read ({error.strerror})."
        ) from None
    except (EOFError, gzip.BadGzipFile, zlib.error) as error:
        raise DataError(
            f"The gzip file '{path}' is truncated or corrupt ({error}). "
            "Delete it and fetch it again."
        ) from error
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise DataError(
            f"The file '{path}' is not valid UTF-8 ({error})."
        ) from error
    # Universal newlines without splitting on other Unicode line breaks.
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def check_split(split, allowed, aliases=None):
    """Validates a `split` argument.

    Args:
        split: The received split name.
        allowed: Tuple of allowed split names.
        aliases: Optional dict mapping extra accepted names to allowed ones.

    Returns:
        The canonical split name.

    Raises:
        ValueError: If `split` is not allowed.
    """
    aliases = aliases or {}
    if isinstance(split, str):
        if split in allowed:
            return split
        if split in aliases:
            return aliases[split]
    raise ValueError(
        f"Unknown split. Expected one of {tuple(allowed)}. "
        f"Received: split={split!r}"
    )
