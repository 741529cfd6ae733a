"""Griffe extension: docstring examples as code, call arguments as a list.

The docstrings put their doctest examples after `Example:` without an
indent, as Keras does. Markdown would read `>>>` as nested quotes; this
extension wraps each run of `>>>` lines, their `...` continuations and
their expected output in a fenced `pycon` block before mkdocstrings parses
the docstring. Lines already inside a fenced block are left alone.

`Call arguments:` is not a section the Google style knows, so mkdocstrings
shows it as a note whose lines run together; its entries become a list.
"""

import re

import griffe

FENCE = "```"
ENTRY = re.compile(r"^(\s+)(\*{0,2}\w+): ")


def list_call_arguments(text):
    lines = text.splitlines()
    out = []
    entry_indent = None
    for line in lines:
        stripped = line.strip()
        if stripped == "Call arguments:":
            entry_indent = ""
            out.append(line)
            continue
        if entry_indent is not None:
            indent = line[: len(line) - len(line.lstrip())]
            if not stripped:
                out.append(line)
                continue
            if entry_indent == "":
                entry_indent = indent
            if len(indent) < len(entry_indent) or not indent:
                entry_indent = None
            else:
                match = ENTRY.match(line)
                if match and match.group(1) == entry_indent:
                    name = match.group(2)
                    line = f"{entry_indent}- `{name}`: {line[match.end() :]}"
        out.append(line)
    return "\n".join(out)


def fence_doctests(text):
    lines = text.splitlines()
    out = []
    in_fence = False
    index = 0
    while index < len(lines):
        line = lines[index]
        stripped = line.lstrip()
        if stripped.startswith(FENCE):
            in_fence = not in_fence
        if in_fence or not stripped.startswith(">>>"):
            out.append(line)
            index += 1
            continue
        indent = line[: len(line) - len(stripped)]
        out.append(f"{indent}{FENCE}pycon")
        # An example runs to the next blank line, as doctest reads it.
        while index < len(lines) and lines[index].strip():
            out.append(lines[index])
            index += 1
        out.append(f"{indent}{FENCE}")
    return "\n".join(out)


class DoctestBlocks(griffe.Extension):
    def on_instance(self, *, obj, **kwargs):
        docstring = obj.docstring
        if docstring is None:
            return
        if ">>>" in docstring.value:
            docstring.value = fence_doctests(docstring.value)
        if "Call arguments:" in docstring.value:
            docstring.value = list_call_arguments(docstring.value)
