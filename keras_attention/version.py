"""The package version: the one place it is written.

`pyproject.toml` reads it (`[tool.setuptools.dynamic]`), so the wheel, the
installed distribution and `keras_attention.__version__` agree, and the
documentation site's footer shows it (`docs/site_pages.py`).

While `CHANGELOG.md` is headed `Unreleased (X.Y.Z)`, the version is the
development release `X.Y.Z.dev0` (PEP 440): it sorts before `X.Y.Z`, so a
wheel built between releases is never mistaken for the release. A release
sets it to `X.Y.Z` and heads the changelog `X.Y.Z (date)`
(`tests/reliability/release_version_test.py` checks both).
"""

__version__ = "0.2.0.dev0"
