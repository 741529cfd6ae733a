"""Command-line flags generated from a training program's dataclass config.

Each application declares its settings once, as a dataclass; this module
turns every field into a flag (`output_dir` -> `--output-dir`) with the
field's type and default, so that `--help`, parsing and the saved
`config.json` all come from the same place:

```python
@dataclasses.dataclass
class Config:
    data_dir: str = None
    epochs: int = 30
    hidden_dim: int = cli.flag(200, "Width of the model.")
    bucket_width: int = 8
    seed: int = 1337
    smoke: bool = False

config = cli.parse_config(Config, sys.argv[1:], description="Trains ...")
```

The flags the training programs share (`SHARED_FLAGS`: `--data-dir`,
`--output-dir`, `--seed`, `--epochs`, `--strategy`, `--mixed-precision`,
`--jit-compile`, `--bucket-width`, `--smoke`, `--verbose`) take their help,
choices and checks from here, so they mean the same in every program. A
field of type `bool` is a switch (`--smoke`); a field whose default is
`None` takes a value of its annotated type. Values are checked while
parsing, then by the program's own `check` for flags that depend on each
other. Ranges and paths come from the field's `flag(...)` or, by the
field's name, from `RULES` (`--epochs 0`, `--dropout 1.5`, `--learning-rate
0`, `--vectors /no/such/file` and `--data-dir /no/such/folder` are refused
in every program that has them).

A refused value ends the program with one line that names the flag, the
value and what was expected, then the usage line, and exit status 2, before
any data is read or model built. `user_errors` does the same for the data
errors the loaders raise (`keras_attention.data.DataError`: an empty or
malformed file, a split without a usable pair) and ends a run stopped with
Ctrl-C with one line and exit status 130. Every program has `--debug`,
which shows the Python traceback instead.
"""

import argparse
import contextlib
import dataclasses
import fnmatch
import inspect
import os
import sys

from keras_attention.data.errors import DataError
from keras_attention.data.glove import VECTORS
from keras_attention.data.snli import TRAINING_SETS
from keras_attention.training.precision import JIT_COMPILE
from keras_attention.training.precision import MIXED_PRECISION_CHOICES
from keras_attention.training.strategies import STRATEGIES

# Epochs of a `--smoke` run when `--epochs` is not given.
SMOKE_EPOCHS = 1

# Help, choices and checks of the flags every training program shares.
SHARED_FLAGS = {
    "data_dir": dict(
        help="Folder of the staged data sets (default: "
        "$KERAS_ATTENTION_DATA, else a download into the Keras cache)."
    ),
    "output_dir": dict(
        help="Run folder: model, config.json, metrics.json, checkpoints "
        "and the backup an interrupted run resumes from."
    ),
    "seed": dict(
        help="Seed of the initial weights, dropout, sampling and batch order."
    ),
    "epochs": dict(help="Training epochs."),
    "strategy": dict(
        choices=STRATEGIES,
        help="Distribution over devices (see "
        "keras_attention.training.strategies).",
    ),
    "mixed_precision": dict(
        choices=MIXED_PRECISION_CHOICES,
        help="Compute dtype: float16 (with loss scaling), bfloat16, none "
        "(float32) or auto (bfloat16 when training on a CPU with native "
        "bfloat16 on a backend where it was measured faster and as good: "
        "tensorflow; else float32).",
    ),
    "jit_compile": dict(
        choices=tuple(JIT_COMPILE),
        help="XLA / jax.jit / torch.compile for the train step.",
    ),
    "bucket_width": dict(
        minimum=0,
        help="Batches hold examples of similar length, padded to a "
        "multiple of this; 0 pads every batch to the longest sentence.",
    ),
    "smoke": dict(
        help="A run of seconds on a few dozen examples, to check the pipeline."
    ),
    "verbose": dict(
        choices=(0, 1, 2),
        help="Keras progress output: 0 silent, 1 a bar, 2 a line per epoch.",
    ),
}

# Ranges and paths by field name (a pattern matches the whole name), for
# every program with such a field; a field's own `flag(...)` overrides.
# `above` and `below` are exclusive bounds, `minimum` and `maximum`
# inclusive; `path` is "file" or "dir" (must exist), `names_or_file` the
# names a value may take instead of the path of an existing file.
RULES = {
    "epochs": dict(minimum=1),
    "smoke_epochs": dict(minimum=1),
    "smoke_steps": dict(minimum=1),
    "batch_size": dict(minimum=1),
    "tokens_per_batch": dict(minimum=1),
    "max_length": dict(minimum=1),
    "hidden_dim": dict(minimum=1),
    "vocabulary_size": dict(minimum=1),
    "beam_size": dict(minimum=1),
    "eval_limit": dict(minimum=1),
    "limit": dict(minimum=1),
    "warmup_steps": dict(minimum=1),
    "version": dict(minimum=1),
    "every": dict(minimum=1),
    "max_extra_length": dict(minimum=0),
    "examples": dict(minimum=0),
    "seed": dict(minimum=0),
    "average_last": dict(minimum=0),
    "alpha": dict(minimum=0.0),
    "sparsity_penalty": dict(minimum=0.0),
    "*_steps": dict(minimum=0),
    "*minutes": dict(minimum=0.0),
    "*dropout": dict(minimum=0.0, below=1.0),
    "label_smoothing": dict(minimum=0.0, below=1.0),
    "ema_momentum": dict(minimum=0.0, below=1.0),
    "*learning_rate*": dict(above=0.0),
    "*weight_decay": dict(minimum=0.0),
    "data_dir": dict(path="dir"),
    "initial_weights": dict(path="file"),
    "vectors": dict(names_or_file=tuple(sorted(VECTORS))),
    "train_data": dict(names_or_file=tuple(sorted(TRAINING_SETS))),
}
_SPEC_KEYS = (
    "help",
    "choices",
    "minimum",
    "maximum",
    "above",
    "below",
    "path",
    "names_or_file",
    "aliases",
    "default_text",
)
_RANGE_KEYS = ("minimum", "maximum", "above", "below")
DEBUG_HELP = (
    "Show the Python traceback of a data error or of Ctrl-C (default: one "
    "line, and exit status 2 or 130)."
)
# The exit status of a run stopped with Ctrl-C (128 + SIGINT), as shells
# report it.
INTERRUPTED_STATUS = 130


_TYPES = {"str": str, "int": int, "float": float, "bool": bool}


def typed(kind, name):
    """`kind` with the checks `RULES` gives the flag `name`, for programs
    that declare flags with argparse: `type=cli.typed(int, "version")`."""
    return checked_type(kind, name_rules(name), name)


def flag(
    default,
    help=None,
    choices=None,
    minimum=None,
    aliases=(),
    default_text=None,
    maximum=None,
    above=None,
    below=None,
    path=None,
    names_or_file=None,
):
    """A dataclass field with what its flag needs beyond type and default.

    Args:
        default: the field's default value.
        help: str. What the flag sets (the default is appended).
        choices: the allowed values, or a function returning them (called
            when the parser is built, so it may name a registry defined
            after the dataclass).
        minimum: number. Smaller values are refused while parsing.
        aliases: other spellings of the flag (for example an old name).
        default_text: str. Shown instead of the default in `--help`.
        maximum: number. Larger values are refused.
        above: number. Values up to it are refused (`learning_rate > 0`).
        below: number. Values from it on are refused (`dropout < 1`).
        path: `"file"` or `"dir"`: the value must be an existing file or
            folder.
        names_or_file: names (or a function returning them) the value may
            be instead of the path of an existing file.

    Returns:
        A `dataclasses.field`.
    """
    metadata = {
        "help": help,
        "choices": choices,
        "minimum": minimum,
        "maximum": maximum,
        "above": above,
        "below": below,
        "path": path,
        "names_or_file": names_or_file,
        "aliases": tuple(aliases),
        "default_text": default_text,
    }
    return dataclasses.field(default=default, metadata=metadata)


def flag_name(name):
    """`"output_dir"` -> `"--output-dir"`."""
    return "--" + name.replace("_", "-")


def name_rules(name):
    """The `RULES` of a field or flag name, the exact name's last."""
    rules = {}
    for pattern, rule in RULES.items():
        if pattern != name and fnmatch.fnmatchcase(name, pattern):
            rules.update(rule)
    rules.update(RULES.get(name, {}))
    return rules


def field_spec(field):
    """The flag's help, choices, checks and aliases for one field: the
    shared ones (`SHARED_FLAGS`) and those of its name (`RULES`), updated
    by the field's own `flag(...)`."""
    spec = dict(SHARED_FLAGS.get(field.name, {}))
    spec.update(name_rules(field.name))
    for key in _SPEC_KEYS:
        value = field.metadata.get(key)
        if value not in (None, ()):
            spec[key] = value
    for key in ("choices", "names_or_file"):
        if callable(spec.get(key)):
            spec[key] = tuple(spec[key]())
    return spec


def _field_type(field):
    kind = field.type
    if isinstance(kind, str):
        kind = _TYPES.get(kind, str)
    return kind if kind in (str, int, float, bool) else str


def _range_text(spec):
    """`"at least 1"`, `"in [0, 1)"`, `"greater than 0"`..."""
    low = spec.get("minimum", spec.get("above"))
    high = spec.get("maximum", spec.get("below"))
    if low is not None and high is not None:
        left = "[" if "minimum" in spec else "("
        right = "]" if "maximum" in spec else ")"
        return f"in {left}{low}, {high}{right}"
    if "minimum" in spec:
        return f"at least {spec['minimum']}"
    if "above" in spec:
        return f"greater than {spec['above']}"
    if "maximum" in spec:
        return f"at most {spec['maximum']}"
    return f"less than {spec['below']}"


def _in_range(value, spec):
    return not (
        ("minimum" in spec and value < spec["minimum"])
        or ("maximum" in spec and value > spec["maximum"])
        or ("above" in spec and value <= spec["above"])
        or ("below" in spec and value >= spec["below"])
    )


def _path_problem(text, spec):
    """What is wrong with a path value, or `None`."""
    names = spec.get("names_or_file")
    if names is not None:
        if text in names or os.path.isfile(text):
            return None
        found = "is a folder" if os.path.isdir(text) else "does not exist"
        return (
            f"must be one of {list(names)} or the path of an existing "
            f"file; {text!r} {found}"
        )
    kind = spec.get("path")
    if kind == "file" and not os.path.isfile(text):
        found = "is a folder" if os.path.isdir(text) else "does not exist"
        return f"must be an existing file; {text!r} {found}"
    if kind == "dir" and not os.path.isdir(text):
        found = "is a file" if os.path.isfile(text) else "does not exist"
        return f"must be an existing folder; {text!r} {found}"
    return None


def checked_type(kind, spec, name):
    """`kind`, refusing values out of the spec's range or paths that do not
    exist, with a message that names the flag and the value (argparse
    prefixes `argument --flag:`).

    Args:
        kind: `int`, `float` or `str`.
        spec: dict with any of `minimum`, `maximum`, `above`, `below`,
            `path` and `names_or_file` (see `flag`).
        name: the field's name.
    """
    spec = {
        key: spec[key]
        for key in (*_RANGE_KEYS, "path", "names_or_file")
        if spec.get(key) is not None
    }
    if not spec:
        return kind
    if kind is str:
        spec = {k: v for k, v in spec.items() if k not in _RANGE_KEYS}
    else:
        spec = {k: v for k, v in spec.items() if k in _RANGE_KEYS}

    def convert(text):
        value = kind(text)
        if kind is str:
            problem = _path_problem(value, spec)
        elif not _in_range(value, spec):
            problem = f"must be {_range_text(spec)}"
        else:
            problem = None
        if problem:
            raise argparse.ArgumentTypeError(
                f"{problem}. Received: {flag_name(name)} {text}"
            )
        return value

    # argparse names the type in "invalid int value: 'x'".
    convert.__name__ = kind.__name__
    return convert


def run_folder(name, *files):
    """An argparse `type` for a flag naming a run folder (a training
    program's `--output-dir`) that must hold `files`: a missing folder or
    file is refused with a message that names the flag, the value and the
    files expected.

    Example: `parser.add_argument("--run-dir", type=cli.run_folder(
    "run_dir", "model.keras", "vocabulary.txt"))`.
    """

    def convert(text):
        expected = f"a run folder holding {', '.join(files)} (a train.py "
        expected += "--output-dir)"
        if not os.path.isdir(text):
            found = "is a file" if os.path.exists(text) else "does not exist"
        else:
            missing = [
                file
                for file in files
                if not os.path.exists(os.path.join(text, file))
            ]
            if not missing:
                return text
            found = f"has no {', '.join(missing)}"
        raise argparse.ArgumentTypeError(
            f"must be {expected}; {text!r} {found}. Received: "
            f"{flag_name(name)} {text}"
        )

    convert.__name__ = "run folder"
    return convert


def _bounded(kind, minimum, name):
    """`kind`, refusing values below `minimum` (see `checked_type`)."""
    return checked_type(kind, {"minimum": minimum}, name)


def add_config_flags(parser, config_cls):
    """Adds one flag per field of the dataclass `config_cls` to `parser`.

    A flag not given on the command line leaves no attribute in the parsed
    namespace (`given_values` then lists only what was given), so a
    program can lay presets between the defaults and the command line.
    """
    if not dataclasses.is_dataclass(config_cls):
        raise TypeError(
            "Argument `config_cls` must be a dataclass. Received: "
            f"config_cls={config_cls!r}"
        )
    defaults = config_cls()
    for field in own_fields_first(config_cls):
        spec = field_spec(field)
        default = getattr(defaults, field.name)
        kind = _field_type(field)
        shown = spec.get("default_text", default)
        text = spec.get("help") or field.name.replace("_", " ").capitalize()
        text = text.rstrip(".") + "."
        if shown is not None and shown is not False:
            text += f" Default: {shown}."
        kwargs = {"dest": field.name, "default": argparse.SUPPRESS}
        if kind is bool:
            if default:
                kwargs["action"] = argparse.BooleanOptionalAction
            else:
                kwargs["action"] = "store_true"
        else:
            kwargs["type"] = checked_type(kind, spec, field.name)
            if spec.get("choices") is not None:
                kwargs["choices"] = spec["choices"]
        names = [flag_name(field.name), *spec.get("aliases", ())]
        parser.add_argument(*names, help=text, **kwargs)
    return parser


def own_fields_first(config_cls):
    """The dataclass's fields for `--help`: those its own class declares
    first, then each base class's, nearest first (an application's flags
    before the ones it shares with other applications); in declaration
    order within a class."""
    mro = config_cls.__mro__

    def declared_by(field):
        for depth, cls in enumerate(mro):
            if field.name in inspect.get_annotations(cls):
                return depth
        return len(mro)

    return sorted(dataclasses.fields(config_cls), key=declared_by)


class ArgumentParser(argparse.ArgumentParser):
    """An `argparse.ArgumentParser` whose errors are one line, then the
    usage line: `train.py: error: argument --epochs: must be at least 1.
    Received: --epochs 0`, then `usage: train.py [flags] (train.py --help
    lists them)`, and exit status 2. Every parser has `--debug`.
    """

    def parse_known_args(self, args=None, namespace=None):
        # `--debug` last in `--help`, after the program's own flags.
        if "debug" not in {action.dest for action in self._actions}:
            add_debug_flag(self)
        return super().parse_known_args(args, namespace)

    def error(self, message):
        message = " ".join(str(message).split())
        self.exit(
            2,
            f"{self.prog}: error: {message}\n"
            f"usage: {self.prog} [flags] ({self.prog} --help lists them)\n",
        )


def add_debug_flag(parser):
    """Adds `--debug` (`DEBUG_HELP`) to an argparse parser."""
    parser.add_argument(
        "--debug",
        action="store_true",
        default=argparse.SUPPRESS,
        help=DEBUG_HELP,
    )
    return parser


def make_parser(description, *config_classes):
    """An `ArgumentParser` with the flags of each dataclass, and `--debug`."""
    parser = ArgumentParser(description=description)
    for config_cls in config_classes:
        add_config_flags(parser, config_cls)
    return parser


def given_values(parser, argv=None):
    """`{field name: value}` for the flags given in `argv` (only those)."""
    return vars(parser.parse_args(argv))


def build_config(config_cls, values):
    """`config_cls(**values)`, keeping only the names that are its fields."""
    names = {field.name for field in dataclasses.fields(config_cls)}
    return config_cls(**{k: v for k, v in values.items() if k in names})


def parse_config(config_cls, argv=None, description=None, check=None):
    """Parses `argv` into a `config_cls` instance.

    Flags not given keep the dataclass's defaults, except `--epochs`, which
    is `SMOKE_EPOCHS` under `--smoke` when not given.

    Args:
        config_cls: a dataclass whose fields are the program's settings.
        argv: list of str. Defaults to `sys.argv[1:]`.
        description: str. The first line of `--help`.
        check: optional function of the config returning an error message
            (naming the flags and the received values) or `None`; a message
            ends the program with the usage and exit status 2.

    Returns:
        A `config_cls` instance.

    Example:

    >>> @dataclasses.dataclass
    ... class Config:
    ...     epochs: int = 30
    ...     smoke: bool = False
    >>> parse_config(Config, ["--smoke"])
    Config(epochs=1, smoke=True)
    """
    return _parse(make_parser(description, config_cls), config_cls, argv, check)


def _parse(parser, config_cls, argv, check):
    given = given_values(parser, argv)
    if given.get("smoke") and "epochs" not in given:
        given["epochs"] = SMOKE_EPOCHS
    config = build_config(config_cls, given)
    message = check(config) if check is not None else None
    if message:
        parser.error(message)
    return config


def debug_given(parser, argv=None):
    """Whether `argv` (default `sys.argv[1:]`) holds `--debug`."""
    known, _ = parser.parse_known_args(argv)
    return bool(getattr(known, "debug", False))


@contextlib.contextmanager
def user_errors(parser, argv=None, output_dir=None):
    """Ends the program in the block with one line for what a user can fix.

    A `keras_attention.data.DataError` (a missing, empty or malformed data
    file, a split without a usable pair) becomes `parser.error(...)`: its
    message, the usage line and exit status 2. Ctrl-C (`KeyboardInterrupt`)
    prints one line, saying how to resume when the run has a backup in
    `output_dir`, and exits with status 130. With `--debug` in `argv`
    both propagate with their traceback. Every other exception is a bug
    and propagates as it is.

    Args:
        parser: the program's parser (`make_parser` or `ArgumentParser`).
        argv: the program's arguments. Defaults to `sys.argv[1:]`.
        output_dir: the run folder, whose `backup/` an interrupted run
            resumes from (none for evaluation and export).
    """
    debug = debug_given(parser, argv)
    try:
        yield
    except DataError as error:
        if debug:
            raise
        parser.error(str(error))
    except KeyboardInterrupt:
        if debug:
            raise
        backup = output_dir and os.path.join(output_dir, "backup")
        if backup and os.path.isdir(backup):
            hint = (
                f"; run the same command again to resume from the last "
                f"completed epoch (backup in {backup})"
            )
        else:
            hint = ""
        print(f"{parser.prog}: interrupted{hint}.", file=sys.stderr)
        sys.exit(INTERRUPTED_STATUS)


def main(program, config_cls, argv=None, description=None, check=None):
    """Parses `argv` (`parse_config`) and runs `program(config)` under
    `user_errors`; returns what `program` returns.

    Example: a training program's last lines.

    ```python
    def main(argv=None):
        return cli.main(train, Config, argv, __doc__.split("\\n")[0])

    if __name__ == "__main__":
        main()
    ```
    """
    parser = make_parser(description, config_cls)
    config = _parse(parser, config_cls, argv, check)
    with user_errors(parser, argv, getattr(config, "output_dir", None)):
        return program(config)
