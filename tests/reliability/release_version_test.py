"""The version is written once and the release files agree with it.

`keras_attention/version.py` holds it; the wheel takes it through
`pyproject.toml` (read here with setuptools' own reader, the one a build
runs, so no wheel is built); `CHANGELOG.md`'s first heading names it; the
documentation site shows it in its footer.
"""

import importlib.util
import pathlib
import re
import tomllib

import pytest
from packaging.version import Version

import keras_attention

ROOT = pathlib.Path(__file__).resolve().parents[2]


def version_file():
    namespace = {}
    exec((ROOT / "keras_attention" / "version.py").read_text(), namespace)
    return namespace["__version__"]


def test_the_package_exports_the_version_file():
    assert keras_attention.__version__ == version_file()
    Version(version_file())  # a valid PEP 440 version


def test_pyproject_takes_the_version_from_the_version_file():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"], "a second version"
    assert "version" in project["project"]["dynamic"]
    from setuptools.config.pyprojecttoml import read_configuration

    built = read_configuration(ROOT / "pyproject.toml", expand=True)
    assert built["project"]["version"] == version_file()


def changelog_heading():
    text = (ROOT / "CHANGELOG.md").read_text()
    return re.search(r"^## (.+)$", text, flags=re.MULTILINE).group(1)


def test_the_changelog_heading_names_the_version():
    heading = changelog_heading()
    version = Version(version_file())
    unreleased = re.fullmatch(r"Unreleased \((\S+)\)", heading)
    if unreleased:
        # Between releases: a development release of the next version.
        assert version.is_devrelease, (heading, str(version))
        assert version.base_version == unreleased.group(1), (
            heading,
            str(version),
        )
    else:
        released = re.match(r"(\S+)", heading).group(1)
        assert str(version) == released, (heading, str(version))


def test_the_documentation_footer_shows_the_version():
    pytest.importorskip("mkdocs")
    spec = importlib.util.spec_from_file_location(
        "site_pages", ROOT / "docs" / "site_pages.py"
    )
    site_pages = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(site_pages)
    assert site_pages.package_version() == version_file()
    config = site_pages.on_config({"nav": None})
    assert config["copyright"] == f"keras_attention {version_file()}"
