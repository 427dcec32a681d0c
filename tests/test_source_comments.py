"""Comments and docstrings state facts and reasons, not history: no issue number, ISO date or commit
hash in the code of ``iclcore``, ``iclbook``, the tests and the notebooks (those belong in the
CHANGELOG, the notes and the benchmarks' outputs), and no test is named after an issue.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("iclcore", "iclbook", "tests", "notebooks")

HISTORY = re.compile(
    r"(?i)\bissues?\s*#?\s*\d+"  # the word issue and a number
    r"|\(issue\b"  # a parenthesis that opens on an issue
    r"|(?<![\w&/])#\d+\b"  # a hash sign and a number: a tracker reference
    r"|\b(?:19|20)\d\d-(?:0[1-9]|1[0-2])(?:-(?:0[1-9]|[12]\d|3[01]))?\b"  # an ISO date or year-month
    r"|\bcommit\s+[0-9a-f]{7,40}\b"  # the word commit and a hash
)

#: Text that matches :data:`HISTORY` but is not history, each with its reason.
ALLOWED: dict[str, str] = {
    "Draft 2020-12": "the name of a JSON Schema version, not a date",
}


def comments_and_docstrings(source: str) -> Iterator[tuple[int, str]]:
    """``(line, text)`` of every comment and every module, class and function docstring of ``source``."""
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                if isinstance(first.value.value, str):
                    for offset, line in enumerate(first.value.value.splitlines()):
                        yield first.lineno + offset, line


def history_in(source: str) -> list[tuple[int, str]]:
    """``(line, match)`` for each issue number, ISO date or commit hash in the comments and docstrings."""
    found = []
    for line, text in comments_and_docstrings(source):
        for allowed in ALLOWED:
            text = text.replace(allowed, "")
        found += [(line, m.group(0)) for m in HISTORY.finditer(text)]
    return found


def test_the_scan_finds_history_in_comments_and_docstrings_only():
    source = (
        '"""Module. Fixed in issue 26 on 2026-11-27."""\n'
        "x = '2026-01-01'  # see #24\n"
        "def f():\n"
        '    """Schema: Draft 2020-12; failed on commit 851d829 (issue 3)."""\n'
        "    return 'issue 7'\n"
    )
    assert sorted(history_in(source)) == [
        (1, "2026-11-27"),
        (1, "issue 26"),
        (2, "#24"),
        (4, "(issue"),
        (4, "commit 851d829"),
    ]


@pytest.mark.parametrize("folder", FOLDERS)
def test_no_issue_number_date_or_commit_in_comments_and_docstrings(folder):
    found = [
        f"{path.relative_to(ROOT)}:{line}: {match!r}"
        for path in sorted((ROOT / folder).rglob("*.py"))
        for line, match in history_in(path.read_text())
    ]
    assert not found, "state the fact or the reason instead (history goes to the CHANGELOG):\n" + "\n".join(found)


def test_no_test_is_named_after_an_issue():
    pattern = re.compile(r"issues?_?\d|commit_?[0-9a-f]{7}", re.I)  # test_issue24, test_commit851d829
    named = []
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        if pattern.search(path.stem):
            named.append(str(path.relative_to(ROOT)))
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.ClassDef) and pattern.search(node.name):
                named.append(f"{path.relative_to(ROOT)}::{node.name}")
    assert not named, named
