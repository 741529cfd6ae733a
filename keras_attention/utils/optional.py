"""Imports of optional dependencies, with errors that name the extra.

The core install is keras and numpy. A feature that needs more (TensorFlow
for SavedModels, sacrebleu for BLEU, ...) imports it through
`import_optional`, so a user without it reads which extra of our
distribution to install instead of a bare `ModuleNotFoundError`.
"""

import importlib
import sys

DISTRIBUTION = "keras-attention-layers"


def install_hint(extra):
    """The pip command that installs one extra of this distribution."""
    return f"pip install '{DISTRIBUTION}[{extra}]'"


def import_optional(module_name, extra, feature):
    """Imports `module_name`, or raises an `ImportError` naming `extra`.

    Args:
        module_name: str. The module to import, e.g. `"tensorflow"`.
        extra: str. The extra of `keras-attention-layers` that installs it,
            as listed in `pyproject.toml`.
        feature: str. What needs the module, for the message, e.g.
            `"SavedModel export"`.

    Returns:
        The imported module.
    """
    # A module already imported comes from `sys.modules`: inside a
    # `tf.function`, AutoGraph would otherwise step into importlib and warn
    # that it cannot convert `_gcd_import`.
    module = sys.modules.get(module_name)
    if module is not None:
        return module
    try:
        return importlib.import_module(module_name)
    except ImportError as error:
        raise ImportError(
            f"{feature} needs `{module_name}`, which is not installed. "
            f"Install it with: {install_hint(extra)}"
        ) from error
