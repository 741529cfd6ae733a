"""Presets in keras-hub's layout: a folder a model is shared as.

```
preset_dir/
  config.json            # the model's Keras serialization (class + config)
  model.weights.h5       # its weights (`model.save_weights`)
  metadata.json          # keras, keras-hub, keras_attention versions, ...
  tokenizer.json         # the tokenizer's serialization, when there is one
  assets/tokenizer/...   # the tokenizer's files (vocabulary, .spm model)
```

The file names and the JSON structure are keras-hub's
(`keras_hub/src/utils/preset_utils.py`): `config.json` holds
`{"module", "class_name", "config", "registered_name"}` without the build
and compile configs, and the tokenizer's assets sit under `assets/` in a
folder named after its config file. A keras-hub user finds what they
expect, and a keras-hub tokenizer (such as
`keras_hub.tokenizers.SentencePieceTokenizer`) travels with its own
`save_assets` / `load_assets`.

Every model of the package reads and writes presets: `Transformer`,
`TransformerLanguageModel`, `ReSANClassifier` and `ReSANRelatedness` have
`model.save_to_preset(preset_dir)` and `Class.from_preset(preset_dir)`;
for a model built by a function (`decomposable_attention_model`,
`bag_of_words_model`) the module-level `save_to_preset(model, preset_dir)`
and `load_preset(preset_dir)` do the same. The tokenizer rides on the
model's `tokenizer` attribute, which is not tracked and not part of the
weights.

A folder written by keras-hub's own `save_to_preset` holds a keras-hub
class: it is refused with an error that names the folder and the class
found there (load it with keras-hub). Presets on Kaggle, Hugging Face or
other hubs are not fetched: this module reads local folders only.
"""

import datetime
import importlib.metadata
import json
import os

import keras

from keras_attention.utils.files import atomic_path
from keras_attention.utils.untracked import UntrackedAttribute
from keras_attention.version import __version__

CONFIG_FILE = "config.json"
MODEL_WEIGHTS_FILE = "model.weights.h5"
METADATA_FILE = "metadata.json"
TOKENIZER_CONFIG_FILE = "tokenizer.json"
TASK_CONFIG_FILE = "task.json"
ASSET_DIR = "assets"
# The package whose registered classes this module loads.
PACKAGE = "keras_attention"
# Keys of a serialized object that a preset leaves out, as keras-hub does.
_SKIPPED_KEYS = ("build_config", "compile_config")
_HUB_PREFIXES = ("kaggle://", "hf://", "gs://", "modelscope://")

__all__ = [
    "PresetMixin",
    "is_preset_dir",
    "load_preset",
    "load_tokenizer",
    "save_to_preset",
    "set_tokenizer",
]


def save_to_preset(model, preset_dir, tokenizer=None):
    """Saves `model` (and its tokenizer) as a preset folder.

    Writes `config.json`, `model.weights.h5` and `metadata.json`, and,
    when there is a tokenizer, `tokenizer.json` and its assets under
    `assets/tokenizer/`. Files already in the folder with other names are
    left alone; each file is written atomically.

    Args:
        model: a `keras.Model` whose class is registered with Keras
            (every model of this package) or a functional model of
            registered layers (`decomposable_attention_model`).
        preset_dir: str. The folder; created if missing.
        tokenizer: optional. A tokenizer with `get_config`, `save_assets`
            and `load_assets` (a keras-hub tokenizer, or
            `keras_attention.data.WordTokenizer`). Defaults to
            `model.tokenizer`, if any.

    Example:

    ```python
    model = keras_attention.models.decomposable_attention_model(100)
    model.tokenizer = keras_attention.data.WordTokenizer(vocabulary)
    presets.save_to_preset(model, "nli_preset")
    model = presets.load_preset("nli_preset")  # model.tokenizer too
    ```
    """
    if not isinstance(model, keras.Model):
        raise ValueError(
            "Argument `model` must be a `keras.Model`. Received: "
            f"model of type {type(model).__name__}"
        )
    preset_dir = os.fspath(preset_dir)
    os.makedirs(preset_dir, exist_ok=True)
    _write_json(preset_dir, CONFIG_FILE, _serialize(model))
    with atomic_path(os.path.join(preset_dir, MODEL_WEIGHTS_FILE)) as tmp:
        model.save_weights(tmp)
    if tokenizer is None:
        tokenizer = getattr(model, "tokenizer", None)
    if tokenizer is not None:
        config_file = getattr(tokenizer, "config_file", TOKENIZER_CONFIG_FILE)
        _write_json(preset_dir, config_file, _serialize(tokenizer))
        asset_dir = _asset_dir(preset_dir, config_file)
        os.makedirs(asset_dir, exist_ok=True)
        tokenizer.save_assets(asset_dir)
    _write_json(preset_dir, METADATA_FILE, _metadata(model))


def load_preset(preset_dir, load_weights=True, expected_class=None, **kwargs):
    """Loads a model (and its tokenizer) from a preset folder.

    Args:
        preset_dir: str. A folder written by `save_to_preset`.
        load_weights: bool. Load `model.weights.h5`; `False` gives the
            architecture with fresh weights. Defaults to `True`.
        expected_class: optional class the model must be (a subclass of).
            Defaults to any model of this package.
        **kwargs: constructor arguments that replace the saved ones (for
            example `dtype` or `dropout`); not for functional models.

    Returns:
        The model, with the preset's tokenizer as `model.tokenizer`
        (`None` when the preset has none).

    Raises:
        ValueError: if `preset_dir` is not a folder with a `config.json`,
            or holds a class that is not this package's (such as a
            keras-hub backbone), or not `expected_class`.
    """
    preset_dir = _check_preset_dir(preset_dir)
    config = _read_json(preset_dir, CONFIG_FILE)
    found = _model_class(preset_dir, config)
    if expected_class is not None and not issubclass(found, expected_class):
        raise ValueError(
            f"The preset directory {preset_dir!r} holds a "
            f"{_describe(config)}, not a {expected_class.__name__}. Load it "
            f"with {found.__name__}.from_preset or "
            "keras_attention.presets.load_preset."
        )
    if kwargs:
        if found is keras.Model:
            raise ValueError(
                "A functional model's preset takes no constructor "
                f"arguments. Received: {sorted(kwargs)} for the preset "
                f"directory {preset_dir!r}"
            )
        config = {**config, "config": {**config["config"], **kwargs}}
    model = keras.saving.deserialize_keras_object(config)
    if load_weights:
        model.load_weights(os.path.join(preset_dir, MODEL_WEIGHTS_FILE))
    set_tokenizer(model, load_tokenizer(preset_dir))
    return model


def load_tokenizer(preset_dir):
    """The tokenizer of a preset folder with its assets, or `None`."""
    preset_dir = _check_preset_dir(preset_dir)
    if not os.path.exists(os.path.join(preset_dir, TOKENIZER_CONFIG_FILE)):
        return None
    config = _read_json(preset_dir, TOKENIZER_CONFIG_FILE)
    try:
        tokenizer = keras.saving.deserialize_keras_object(config)
    except (TypeError, ValueError) as error:
        raise ValueError(
            f"The tokenizer of the preset directory {preset_dir!r} "
            f"({TOKENIZER_CONFIG_FILE}: {_describe(config)}) could not be "
            f"rebuilt: {error}"
        ) from error
    config_file = getattr(tokenizer, "config_file", TOKENIZER_CONFIG_FILE)
    asset_dir = _asset_dir(preset_dir, config_file)
    if os.path.isdir(asset_dir):
        tokenizer.load_assets(asset_dir)
    return tokenizer


def is_preset_dir(preset):
    """Whether `preset` names a local folder with a `config.json`."""
    return isinstance(preset, (str, os.PathLike)) and os.path.isfile(
        os.path.join(os.fspath(preset), CONFIG_FILE)
    )


def set_tokenizer(model, tokenizer):
    """Attaches `tokenizer` to `model.tokenizer` without tracking it.

    A keras-hub tokenizer is a Keras layer: assigned as a plain attribute
    it would become one of the model's layers. Models of this package
    declare the attribute untracked; on another model (a functional one)
    the value goes into the instance's dictionary, past Keras's tracking.
    """
    if hasattr(type(model), "tokenizer"):
        model.tokenizer = tokenizer
    else:
        vars(model)["tokenizer"] = tokenizer


class PresetMixin:
    """`save_to_preset` and `from_preset` for a registered model class.

    The model carries its tokenizer in `tokenizer` (default `None`): a
    keras-hub-style tokenizer (`tokenize`, `detokenize`) that `generate`
    reads and writes strings with, set with `model.tokenizer = tokenizer`.
    It is untracked: not one of the model's layers or weights, so `.keras`
    files and weight layouts are the same with and without it; presets
    save it with its assets.
    """

    tokenizer = UntrackedAttribute()

    def __setattr__(self, name, value):
        # Keras's and torch's `__setattr__` track layers before storing
        # them: an untracked attribute goes straight to its descriptor.
        if isinstance(getattr(type(self), name, None), UntrackedAttribute):
            object.__setattr__(self, name, value)
        else:
            super().__setattr__(name, value)

    def save_to_preset(self, preset_dir):
        """Saves the model, and `self.tokenizer` if set, as a preset
        folder in keras-hub's layout (`keras_attention.presets`).

        Args:
            preset_dir: str. The folder; created if missing.
        """
        save_to_preset(self, preset_dir)

    @classmethod
    def from_preset(cls, preset, load_weights=True, **kwargs):
        """Loads a model saved with `save_to_preset`.

        Args:
            preset: str. The preset folder.
            load_weights: bool. Load the saved weights. Defaults to
                `True`.
            **kwargs: constructor arguments replacing the saved ones.

        Returns:
            An instance of this class (or of a subclass), with the
            preset's tokenizer as `tokenizer`.
        """
        return load_preset(
            preset, load_weights=load_weights, expected_class=cls, **kwargs
        )


def _check_preset_dir(preset_dir):
    if isinstance(preset_dir, str) and preset_dir.startswith(_HUB_PREFIXES):
        raise ValueError(
            "Only local preset directories are read; download the preset "
            f"first. Received: preset={preset_dir!r}"
        )
    if not isinstance(preset_dir, (str, os.PathLike)):
        raise ValueError(
            "Argument `preset` must be a preset directory. Received: "
            f"preset={preset_dir!r}"
        )
    preset_dir = os.fspath(preset_dir)
    if not os.path.isdir(preset_dir):
        raise ValueError(
            "Argument `preset` must be an existing preset directory. "
            f"Received: preset={preset_dir!r}"
        )
    if not os.path.isfile(os.path.join(preset_dir, CONFIG_FILE)):
        found = sorted(os.listdir(preset_dir))[:10]
        raise ValueError(
            f"The preset directory {preset_dir!r} has no {CONFIG_FILE}; "
            f"it holds {found}. Write one with `save_to_preset`."
        )
    return preset_dir


def _model_class(preset_dir, config):
    """The class `config.json` names, if it is a model of this package or
    a functional model; otherwise a `ValueError` saying what was found."""
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError(
            f"The {CONFIG_FILE} of the preset directory {preset_dir!r} is "
            "not a serialized Keras object (keras-hub's `registered_name` "
            f"and `config`). Found the keys: {sorted(config)[:10]}"
        )
    registered = config.get("registered_name") or config["class_name"]
    if registered in ("Functional", "Model"):
        return keras.Model
    package = registered.partition(">")[0]
    found = keras.saving.get_registered_object(registered)
    if package != PACKAGE or found is None:
        task = ""
        if os.path.exists(os.path.join(preset_dir, TASK_CONFIG_FILE)):
            task_config = _read_json(preset_dir, TASK_CONFIG_FILE)
            task = f" (and, in {TASK_CONFIG_FILE}, a {_describe(task_config)})"
        raise ValueError(
            f"The preset directory {preset_dir!r} holds a "
            f"{_describe(config)}{task}, not a model of {PACKAGE}. A "
            "keras-hub preset loads with keras-hub, for example "
            "`keras_hub.models.Backbone.from_preset(preset)`; "
            f"{PACKAGE} reads presets written by its own `save_to_preset`."
        )
    return found


def _describe(config):
    if not isinstance(config, dict):
        return f"{type(config).__name__}"
    name = config.get("registered_name") or config.get("class_name")
    return f"'{name}'" + (
        f" (module {config['module']})" if config.get("module") else ""
    )


def _serialize(obj):
    config = keras.saving.serialize_keras_object(obj)
    return _without(config, _SKIPPED_KEYS)


def _without(config, keys):
    if not isinstance(config, dict):
        return config
    return {
        key: _without(value, keys)
        for key, value in config.items()
        if key not in keys
    }


def _metadata(model):
    try:
        keras_hub_version = importlib.metadata.version("keras-hub")
    except importlib.metadata.PackageNotFoundError:
        keras_hub_version = None
    return {
        "keras_version": keras.version(),
        "keras_hub_version": keras_hub_version,
        "keras_attention_version": __version__,
        "parameter_count": model.count_params(),
        "date_saved": datetime.datetime.now().strftime("%Y-%m-%d@%H:%M:%S"),
        # keras-hub lists its task classes here; none loads these models.
        "tasks": [],
    }


def _asset_dir(preset_dir, config_file):
    # keras-hub's convention: assets/<config file name without suffix>/.
    return os.path.join(preset_dir, ASSET_DIR, config_file.split(".")[0])


def _write_json(preset_dir, name, value):
    with atomic_path(os.path.join(preset_dir, name)) as tmp:
        with open(tmp, "w", encoding="utf-8") as file:
            file.write(json.dumps(value, indent=4))


def _read_json(preset_dir, name):
    path = os.path.join(preset_dir, name)
    try:
        with open(path, encoding="utf-8") as file:
            return json.load(file)
    except json.JSONDecodeError as error:
        raise ValueError(
            f"The {name} of the preset directory {preset_dir!r} is not "
            f"valid JSON: {error}"
        ) from error
