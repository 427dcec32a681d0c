"""The store's cache of import scans: the same keys as parsing every module, and no stale scan for a changed file."""

from __future__ import annotations

import json
from pathlib import Path

from iclbook.imports import ScanCache, dependency_files
from iclbook.notebooks import discover_all
from iclbook.runs import make_requests
from iclbook.store import cache_key, import_scans, store_dir

ROOT = Path(__file__).resolve().parents[2]


def test_cached_scans_give_the_same_keys_as_parsing(tmp_path):
    good, _ = discover_all(ROOT)
    requests = make_requests(good, tmp_path / "out")
    cache = ScanCache.load(tmp_path / "scans.json")
    first = [cache_key(r, ROOT, cache) for r in requests]
    cache.save()
    again = ScanCache.load(tmp_path / "scans.json")
    assert again.scans and not again.changed
    assert [cache_key(r, ROOT, again) for r in requests] == first == [cache_key(r, ROOT) for r in requests]
    assert not again.changed  # every scan came from the file


def test_a_changed_module_is_parsed_again(tmp_path):
    pkg = tmp_path / "iclcore"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("X = 1\n")
    (pkg / "b.py").write_text("Y = 2\n")
    cache = ScanCache.load(tmp_path / "scans.json")
    names = lambda: [p.name for p in dependency_files("import iclcore.a", pkg, cache).files]  # noqa: E731
    assert names() == ["__init__.py", "a.py"]
    cache.save()
    (pkg / "a.py").write_text("from iclcore import b\nX = 1\n")
    cache = ScanCache.load(tmp_path / "scans.json")
    assert names() == ["__init__.py", "a.py", "b.py"] and cache.changed


def test_an_unreadable_or_foreign_cache_file_is_ignored(tmp_path):
    path = tmp_path / "scans.json"
    for text in ["not json", "[]", json.dumps({"version": 0, "scans": {"x": 1}}), json.dumps({"version": 1})]:
        path.write_text(text)
        cache = ScanCache.load(path)
        assert cache.scans == {}
        assert dependency_files("import os", tmp_path, cache).files == []
    path.write_text(json.dumps({"version": 1, "scans": {"deadbeef": "not a scan"}}))
    assert ScanCache.load(path).scan("import iclcore.a").modules == {"iclcore.a"}


def test_the_store_keeps_the_cache(tmp_path):
    cache = import_scans(tmp_path)
    cache.scan("import iclcore.x")
    cache.save()
    assert (store_dir(tmp_path) / "import-scans.json").is_file()
