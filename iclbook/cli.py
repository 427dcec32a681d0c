"""``icl-book``: list, run and build the book's notebooks.

Examples
--------
::

    icl-book list
    icl-book run proof_ladder -p K 16 --out /tmp/figs
    icl-book run --preset paper -j 1
    icl-book build            # run (cached) every notebook, then build the HTML
    icl-book clean
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from .notebooks import QUICK, Notebook, NotebookError, discover
from .runner import make_requests, run_notebooks


def find_root(start: Path | None = None) -> Path:
    """The project root: the nearest folder upwards holding ``_toc.yml`` and ``notebooks/``."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "_toc.yml").exists() and (folder / "notebooks").is_dir():
            return folder
    raise SystemExit("icl-book: no project root (a folder with _toc.yml and notebooks/) above " + str(here))


def select(notebooks: list[Notebook], names: list[str]) -> list[Notebook]:
    if not names:
        return notebooks
    by_name = {nb.name: nb for nb in notebooks}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise NotebookError(f"unknown notebook(s) {unknown}; available: {', '.join(by_name)}")
    return [by_name[n] for n in names]


def cmd_list(args: argparse.Namespace, root: Path) -> int:
    for nb in discover(root):
        print(f"{nb.name}  ({nb.path.relative_to(root)})")
        width = max((len(k) for k in nb.parameters), default=0)
        presets = sorted(nb.presets)
        header = f"    {'parameter':<{width}}  {QUICK:>12}" + "".join(f"  {p:>12}" for p in presets)
        print(header)
        for key, value in nb.parameters.items():
            row = f"    {key:<{width}}  {value!r:>12}"
            for p in presets:
                row += f"  {nb.presets[p].get(key, value)!r:>12}"
            print(row)
        print()
    return 0


def _overrides(pairs: list[list[str]] | None) -> dict[str, str]:
    return {k: v for k, v in (pairs or [])}


def cmd_run(args: argparse.Namespace, root: Path) -> int:
    notebooks = select(discover(root), args.names)
    out_root = Path(args.out).resolve() if args.out else root / "book" / "generated"
    requests = make_requests(notebooks, out_root, args.preset, _overrides(args.param))
    start = time.monotonic()
    summary = run_notebooks(requests, root, jobs=args.jobs, force=args.force)
    elapsed = time.monotonic() - start
    ex, cached = len(summary.executed), sum(r.status == "cached" for r in summary.results)
    print(f"icl-book: {ex} executed, {cached} cached, {len(summary.failures)} failed in {elapsed:.1f}s; outputs in {out_root}")
    if summary.failures:
        print("icl-book: FAILED notebooks:", file=sys.stderr)
        for r in summary.failures:
            print(f"  {r.name}: {r.error}  (executed notebook: {r.out_dir / (r.name + '.ipynb') if r.out_dir else '-'})", file=sys.stderr)
        return 1
    return 0


def cmd_build(args: argparse.Namespace, root: Path) -> int:
    from .pages import write_pages

    status = 0
    if not args.no_run:
        status = cmd_run(args, root)
    rows = write_pages(root, root / "book" / "generated")
    missing = [r for r in rows if r.status == "missing"]
    for r in missing:
        print(f"icl-book: report entry {r.claim.notebook}:{r.claim.metric} ({r.claim.source}) has no computed value", file=sys.stderr)
    out = Path(args.path_output).resolve() if args.path_output else root
    cmd = [sys.executable, "-c", "import sys; from jupyter_book.cli.main import main; sys.exit(main())", "build", str(root), "--path-output", str(out)]
    if not args.lenient:
        cmd += ["-W", "-n", "--keep-going"]
    if args.all:
        cmd.append("--all")
    print("icl-book: building HTML: jupyter-book", " ".join(cmd[3:]))
    env = dict(os.environ, MPLBACKEND="Agg")
    proc = subprocess.run(cmd, cwd=root, env=env)
    index = out / "_build" / "html" / "index.html"
    if proc.returncode != 0:
        print(f"icl-book: jupyter-book build failed (exit {proc.returncode})", file=sys.stderr)
        return proc.returncode
    if missing:
        return 1
    print(f"icl-book: the book is at {index}")
    return status


def cmd_clean(args: argparse.Namespace, root: Path) -> int:
    for path in (root / "book" / "generated", root / "_build"):
        if path.exists():
            shutil.rmtree(path)
            print(f"icl-book: removed {path}")
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="icl-book", description="Run and build the ICL companion's notebooks.")
    p.add_argument("--root", help="project root (default: found from the working directory)")
    sub = p.add_subparsers(dest="command", required=True)

    sub.add_parser("list", help="notebooks in book order with their parameters and presets").set_defaults(func=cmd_list)

    def run_options(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("names", nargs="*", metavar="NAME", help="notebooks to run (default: all)")
        sp.add_argument("-p", "--param", nargs=2, action="append", metavar=("NAME", "VALUE"), help="override a parameter")
        sp.add_argument("--preset", default=QUICK, help=f"parameter preset (default: {QUICK}; also: paper)")
        sp.add_argument("--out", metavar="DIR", help="write outputs to DIR/<name>/ instead of book/generated/<name>/")
        sp.add_argument("-j", "--jobs", type=int, default=None, help="parallel notebooks (default: number of cores)")
        sp.add_argument("--force", action="store_true", help="re-execute even when the cache is valid")

    r = sub.add_parser("run", help="execute notebooks (cached) into book/generated/")
    run_options(r)
    r.set_defaults(func=cmd_run)

    b = sub.add_parser("build", help="run (cached), then build the HTML book in strict mode")
    run_options(b)
    b.add_argument("--no-run", action="store_true", help="do not execute notebooks; build from book/generated as it is")
    b.add_argument("--path-output", metavar="DIR", help="write _build/ under DIR (default: the project root)")
    b.add_argument("--lenient", action="store_true", help="do not turn warnings into errors")
    b.add_argument("--all", action="store_true", help="rebuild every page (jupyter-book --all)")
    b.set_defaults(func=cmd_build)

    sub.add_parser("clean", help="remove book/generated/ and _build/").set_defaults(func=cmd_clean)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    root = Path(args.root).resolve() if args.root else find_root()
    if getattr(args, "out", None) and args.command == "build":
        print("icl-book: --out is for `run`; `build` reads book/generated/", file=sys.stderr)
        return 2
    try:
        return args.func(args, root)
    except NotebookError as exc:
        print(f"icl-book: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
