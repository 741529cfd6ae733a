"""MkDocs hook that assembles the documentation site from the repository.

`make docs` runs `mkdocs build --strict` with this file as a hook
(`mkdocs.yml`). It adds, without writing anything into the working tree:

- the README as the home page, and the other markdown files a user reads
  (`PAGES`, the applications' READMEs);
- each tutorial (`tutorials/*.py`, keras.io format) as a markdown page: the
  prose blocks as text, the code as Python blocks, and after a code block
  that saves a figure, that figure where `docs/figures/` has it;
- one API reference page per public module (`API_MODULES`), listing the
  names of the module's `__all__` for mkdocstrings;
- the package version in every page's footer, read from
  `keras_attention/version.py`;
- the navigation, so that a new tutorial, application or public name shows
  up without editing `mkdocs.yml`: the home page, then the usage and
  results pages of `docs/` (`FRONT_PAGES`), tutorials, applications, the
  API reference, the other pages of `docs/` as guides, and last the
  changelog and the measurement history (`BACK_PAGES`).

Relative links in the markdown files are rewritten to the pages and images
of the site. A link to a repository file that is not part of the site
becomes the file's path in code; a link to a file that does not exist is a
warning, which fails the strict build.
"""

import ast
import logging
import pathlib
import posixpath
import re
import textwrap

from mkdocs.structure.files import File

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
log = logging.getLogger("mkdocs.hooks.site_pages")

# Repository markdown file -> page of the site.
PAGES = {
    "README.md": "index.md",
    "RELIABILITY.md": "reliability.md",
    "benchmarks/README.md": "benchmarks.md",
    "CONTRIBUTING.md": "contributing.md",
    "CHANGELOG.md": "changelog.md",
}
# Public modules of keras_attention, in the order of the navigation.
API_MODULES = (
    "layers",
    "ops",
    "models",
    "losses",
    "schedules",
    "optimizers",
    "metrics",
    "callbacks",
    "checkpoints",
    "presets",
    "decoding",
    "data",
    "export",
    "training",
    "saving",
    "visualization",
    "testing",
    "compat.keras_hub.layers",
)
# Pages of docs/ placed right after the home page, and after the
# changelog; the other pages of docs/ are guides.
FRONT_PAGES = ("usage.md", "results.md")
BACK_PAGES = ("history.md",)
ASSET_SUFFIXES = {".png", ".svg", ".jpg", ".jpeg", ".gif"}
# Fenced blocks and code spans first, so that links inside code stay as
# they are; then inline links and images.
LINK = re.compile(
    r"(?P<fence>^[ \t]*(?P<ticks>```+).*?^[ \t]*(?P=ticks)[ \t]*$)"
    r"|(?P<code>`[^`\n]+`)"
    r"|(?P<label>!?\[[^\]]*\])\((?P<target>[^)\s]+)\)",
    re.DOTALL | re.MULTILINE,
)
FIGURE_NAME = re.compile(r"[\"']([\w.-]+\.png)[\"']")


def repository_pages():
    """Repository markdown path -> site path, for every page of the site."""
    pages = {p: uri for p, uri in PAGES.items() if (ROOT / p).exists()}
    for readme in sorted(ROOT.glob("applications/*/README.md")):
        name = readme.parent.name
        pages[readme.relative_to(ROOT).as_posix()] = f"applications/{name}.md"
    for tutorial in tutorial_files():
        pages[f"tutorials/{tutorial.name}"] = f"tutorials/{tutorial.stem}.md"
    for path in sorted(DOCS.glob("*.md")):
        pages[path.relative_to(ROOT).as_posix()] = path.name
    return pages


def tutorial_files():
    return sorted(ROOT.glob("tutorials/*.py"))


def _is_external(target):
    return "://" in target or target.startswith(("mailto:", "#", "/"))


def rewrite_links(markdown, origin, page_uri, pages, assets):
    """Rewrites the relative links of `origin` (a repository path)."""
    page_dir = posixpath.dirname(page_uri)

    def replace(match):
        if match.group("label") is None:
            return match.group(0)
        label, target = match.group("label", "target")
        if _is_external(target):
            return match.group(0)
        path, _, anchor = target.partition("#")
        anchor = f"#{anchor}" if anchor else ""
        repo_path = posixpath.normpath(
            posixpath.join(posixpath.dirname(origin), path)
        )
        if repo_path in pages:
            site_path = pages[repo_path]
        elif repo_path.startswith("docs/") and (ROOT / repo_path).is_file():
            site_path = repo_path[len("docs/") :]
        elif (ROOT / repo_path).suffix.lower() in ASSET_SUFFIXES and (
            ROOT / repo_path
        ).is_file():
            site_path = assets.setdefault(repo_path, f"assets/{repo_path}")
        elif (ROOT / repo_path).exists():
            # Source files and folders are not pages: name them instead.
            text = label.strip("[]")
            if text.strip("`") in (repo_path, posixpath.basename(repo_path)):
                return f"`{repo_path}`"
            return f"{text} (`{repo_path}`)"
        else:
            log.warning(
                "%s links to %s, which does not exist in the repository",
                origin,
                target,
            )
            return match.group(0)
        relative = posixpath.relpath(site_path, page_dir or ".")
        return f"{label}({relative}{anchor})"

    return LINK.sub(replace, markdown)


def tutorial_markdown(path):
    """A keras.io-format script as markdown: prose as text, code as code."""
    source = path.read_text()
    lines = source.splitlines()
    tree = ast.parse(source)
    prose = [
        node
        for node in tree.body
        if isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    ]
    if not prose or prose[0].lineno != 1:
        raise ValueError(
            f"{path.name} does not start with a keras.io header docstring"
        )
    header = {}
    for line in prose[0].value.value.strip().splitlines():
        key, _, value = line.partition(":")
        header[key.strip().lower()] = value.strip()
    title = header.get("title", path.stem)
    parts = [
        f"# {title}",
        f"*{header.get('description', '')}*",
        f"Source: `tutorials/{path.name}`. Run it top to bottom with "
        f"`python tutorials/{path.name} --output-dir tutorial_outputs`. "
        f"Author: {header.get('author', 'unknown')}; last modified "
        f"{header.get('last modified', header.get('date created', '?'))}.",
    ]
    start = prose[0].end_lineno
    for node in prose[1:] + [None]:
        end = node.lineno - 1 if node else len(lines)
        code = "\n".join(lines[start:end]).strip("\n")
        if code.strip():
            parts.append(f"```python\n{code}\n```")
            for figure in FIGURE_NAME.findall(code):
                if (DOCS / "figures" / figure).exists():
                    # Relative to tutorials/; rewritten like every link.
                    parts.append(f"![{figure}](../docs/figures/{figure})")
        if node:
            parts.append(textwrap.dedent(node.value.value).strip())
            start = node.end_lineno
    return "\n\n".join(parts) + "\n"


def public_names(module):
    """The names of `keras_attention.<module>.__all__`, read without import."""
    package = ROOT / "keras_attention" / module.replace(".", "/")
    path = package / "__init__.py" if package.is_dir() else package
    if not path.suffix:
        path = path.with_suffix(".py")
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            return [ast.literal_eval(e) for e in node.value.elts]
    return None


def api_markdown(module):
    name = f"keras_attention.{module}"
    names = public_names(module)
    if names is None:
        # No `__all__`: mkdocstrings lists the module's public members.
        return (
            f"# `{name}`\n\n::: {name}\n"
            "    options:\n      show_root_heading: false\n"
        )
    blocks = [
        f"# `{name}`",
        f"::: {name}\n    options:\n      members: false\n"
        "      show_root_heading: false",
    ]
    blocks += [f"::: {name}.{member}" for member in names]
    return "\n\n".join(blocks) + "\n"


def _title(markdown, default):
    for line in markdown.splitlines():
        if line.startswith("# "):
            return line[2:].strip().strip("`")
    return default


_state = {}


def package_version():
    """`keras_attention/version.py`'s version, read without importing the
    package (the build needs no backend)."""
    tree = ast.parse((ROOT / "keras_attention" / "version.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            getattr(target, "id", None) == "__version__"
            for target in node.targets
        ):
            return ast.literal_eval(node.value)
    raise ValueError("keras_attention/version.py sets no __version__")


def on_config(config):
    # The version in every page's footer, from the one place it is written.
    config["copyright"] = f"keras_attention {package_version()}"
    pages = repository_pages()
    titles = {}
    for repo_path, uri in pages.items():
        if repo_path.endswith(".md"):
            titles[uri] = _title((ROOT / repo_path).read_text(), uri)
    for tutorial in tutorial_files():
        uri = pages[f"tutorials/{tutorial.name}"]
        titles[uri] = _title(tutorial_markdown(tutorial), tutorial.stem)
    applications = [u for u in pages.values() if u.startswith("applications/")]
    docs_pages = [p.name for p in sorted(DOCS.glob("*.md"))]
    nav = [{"Home": "index.md"}]
    for uri in FRONT_PAGES:
        if uri in docs_pages:
            nav.append({titles[uri]: uri})
    nav.append(
        {
            "Tutorials": [
                {titles[pages[f"tutorials/{t.name}"]]: f"tutorials/{t.stem}.md"}
                for t in tutorial_files()
            ]
        }
    )
    nav.append({"Applications": [{titles[u]: u} for u in applications]})
    nav.append(
        {"API reference": [{f"{m}": f"api/{m}.md"} for m in API_MODULES]}
    )
    guides = [
        {titles[u]: u} for u in docs_pages if u not in FRONT_PAGES + BACK_PAGES
    ]
    for uri in ("reliability.md", "benchmarks.md"):
        if uri in pages.values():
            guides.append({titles[uri]: uri})
    nav.append({"Guides": guides})
    for uri, label in (
        ("contributing.md", "Contributing"),
        ("changelog.md", "Changelog"),
    ):
        if uri in pages.values():
            nav.append({label: uri})
    for uri in BACK_PAGES:
        if uri in docs_pages:
            nav.append({titles[uri]: uri})
    config["nav"] = nav
    _state["pages"] = pages
    return config


def on_files(files, config):
    pages = _state["pages"]
    assets = {}
    for repo_path, uri in pages.items():
        origin = ROOT / repo_path
        if repo_path.startswith("docs/"):
            continue  # already a page; its links are rewritten below
        if repo_path.startswith("tutorials/"):
            markdown = tutorial_markdown(origin)
        else:
            markdown = origin.read_text()
        markdown = rewrite_links(markdown, repo_path, uri, pages, assets)
        files.append(File.generated(config, uri, content=markdown))
    for path in sorted(DOCS.glob("*.md")):
        # Scan the pages of docs/ for the images they use.
        rewrite_links(
            path.read_text(), f"docs/{path.name}", path.name, pages, assets
        )
    for module in API_MODULES:
        files.append(
            File.generated(
                config, f"api/{module}.md", content=api_markdown(module)
            )
        )
    for repo_path, uri in assets.items():
        files.append(
            File.generated(config, uri, abs_src_path=str(ROOT / repo_path))
        )
    _state["assets"] = assets
    return files


def on_page_markdown(markdown, page, config, files):
    uri = page.file.src_uri
    if page.file.generated_by is None and uri.endswith(".md"):
        return rewrite_links(
            markdown, f"docs/{uri}", uri, _state["pages"], _state["assets"]
        )
    return markdown
