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
parsing (`minimum`: `--bucket-width -1` is refused), then by the program's
own `check` for flags that depend on each other; both end the program with
argparse's usage message and exit status 2.
"""

import argparse
import dataclasses

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
_SPEC_KEYS = ("help", "choices", "minimum", "aliases", "default_text")
_TYPES = {"str": str, "int": int, "float": float, "bool": bool}


def flag(
    default,
    help=None,
    choices=None,
    minimum=None,
    aliases=(),
    default_text=None,
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

    Returns:
        A `dataclasses.field`.
    """
    metadata = {
        "help": help,
        "choices": choices,
        "minimum": minimum,
        "aliases": tuple(aliases),
        "default_text": default_text,
    }
    return dataclasses.field(default=default, metadata=metadata)


def flag_name(name):
    """`"output_dir"` -> `"--output-dir"`."""
    return "--" + name.replace("_", "-")


def field_spec(field):
    """The flag's help, choices, minimum and aliases for one field: the
    shared ones (`SHARED_FLAGS`), updated by the field's own `flag(...)`."""
    spec = dict(SHARED_FLAGS.get(field.name, {}))
    for key in _SPEC_KEYS:
        value = field.metadata.get(key)
        if value not in (None, ()):
            spec[key] = value
    if callable(spec.get("choices")):
        spec["choices"] = tuple(spec["choices"]())
    return spec


def _field_type(field):
    kind = field.type
    if isinstance(kind, str):
        kind = _TYPES.get(kind, str)
    return kind if kind in (str, int, float, bool) else str


def _bounded(kind, minimum, name):
    """`kind`, refusing values below `minimum` with a message that names
    the flag and the value (argparse prefixes `argument --flag:`)."""
    if minimum is None:
        return kind

    def convert(text):
        value = kind(text)
        if value < minimum:
            raise argparse.ArgumentTypeError(
                f"must be at least {minimum}. Received: {flag_name(name)} "
                f"{text}"
            )
        return value

    # argparse names the type in "invalid int value: 'x'".
    convert.__name__ = kind.__name__
    return convert


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
    for field in dataclasses.fields(config_cls):
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
            kwargs["type"] = _bounded(kind, spec.get("minimum"), field.name)
            if spec.get("choices") is not None:
                kwargs["choices"] = spec["choices"]
        names = [flag_name(field.name), *spec.get("aliases", ())]
        parser.add_argument(*names, help=text, **kwargs)
    return parser


def make_parser(description, *config_classes):
    """An `argparse.ArgumentParser` with the flags of each dataclass."""
    parser = argparse.ArgumentParser(description=description)
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
    parser = make_parser(description, config_cls)
    given = given_values(parser, argv)
    if given.get("smoke") and "epochs" not in given:
        given["epochs"] = SMOKE_EPOCHS
    config = build_config(config_cls, given)
    message = check(config) if check is not None else None
    if message:
        parser.error(message)
    return config
