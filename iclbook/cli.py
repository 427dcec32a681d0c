"""``icl-book``: list, run and build the book's notebooks.

Examples
--------
::

    icl-book list
    icl-book list proof_ladder   # its parameters: descriptions, domains, quick and paper values
    icl-book run proof_ladder -p K 16 --out /tmp/figs
    icl-book run --preset paper -j 1
    icl-book build            # run (cached) every notebook, then build the HTML
    icl-book clean
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NoReturn

from . import archive, plan, record, sweep
from .execution import Interrupted, Interrupts
from .notebooks import QUICK, Notebook, NotebookError, discover_all, notebook_name
from .runs import make_requests
from .scheduling import describe_seconds, run_notebooks, timed_seconds
from .store import (
    STORE,
    cache_key,
    check_output_folder,
    import_scans,
    os_reason,
    read_manifest,
    store_dir,
    verify_folder,
)

EXIT_USAGE = 2


class UsageError(NotebookError):
    """A bad command line: one line on stderr, exit code 2."""


class PathError(UsageError):
    """A filesystem problem: ``<what> <path>: <reason>``, printed as one line ``icl-book: ...``, exit code 2."""

    def __init__(self, path: object, reason: str, what: str = "") -> None:
        super().__init__(f"{what + ' ' if what else ''}{path}: {reason}")


def resolve_path(raw: str, what: str) -> Path:
    """``raw`` (``~`` expanded) as an absolute path; a :class:`PathError` naming ``what`` if it cannot be resolved."""
    if not raw.strip():
        raise PathError(repr(raw), "is empty; give a folder", what)
    try:
        return Path(raw).expanduser().resolve()
    except RuntimeError as exc:  # "Could not determine home directory", or a symbolic link loop (Python < 3.13)
        if "loop" in str(exc).lower():
            raise PathError(os.path.abspath(raw), "cannot be resolved: a symbolic link loop", what) from None
        raise PathError(raw, f"cannot be resolved: {exc}", what) from None
    except OSError as exc:
        raise PathError(exc.filename or raw, os_reason(exc), what) from None


def check_writable(folder: Path, what: str) -> Path:
    """Create ``folder`` if needed and check that a file can be written in it; a :class:`PathError` otherwise."""
    if folder.exists() and not folder.is_dir():
        raise PathError(folder, "exists and is not a folder", what)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except NotADirectoryError as exc:
        blocker = next((p for p in folder.parents if p.exists() and not p.is_dir()), None)
        if blocker is None:
            raise PathError(exc.filename or folder, os_reason(exc), what) from None
        raise PathError(folder, f"{blocker} is a file, not a folder", what) from None
    except OSError as exc:
        raise PathError(exc.filename or folder, os_reason(exc), what) from None
    return folder


def find_root(start: Path | None = None) -> Path:
    """The project root: the nearest folder upwards holding ``_toc.yml`` and ``notebooks/``."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "_toc.yml").exists() and (folder / "notebooks").is_dir():
            return folder
    raise UsageError("no project root (a folder with _toc.yml and notebooks/) above " + str(here))


def check_root(raw: str) -> Path:
    """``--root DIR``: an existing folder holding ``notebooks/``."""
    if not raw.strip():
        raise UsageError(f"--root {raw!r} is not an existing folder")
    root = resolve_path(raw, "--root")
    if not root.is_dir():
        raise UsageError(f"--root {raw!r} is not an existing folder")
    if not (root / "notebooks").is_dir():
        raise UsageError(f"--root {raw!r} has no notebooks/ folder")
    return root


def check_store(root: Path) -> Path:
    """The store folder, created if needed and writable; a :class:`PathError` naming it otherwise."""
    return check_writable(store_dir(root), "store")


def select(notebooks: list[Notebook], names: list[str], bad: dict[str, NotebookError] | None = None) -> list[Notebook]:
    """The notebooks named (each once, in the order given; ``notebooks/x.py`` is ``x``), or all when ``names`` is empty."""
    if not names:
        return notebooks
    names = [notebook_name(n) for n in names]
    by_name = {nb.name: nb for nb in notebooks}
    for n in names:
        if bad and n in bad:
            raise bad[n]
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise UsageError(f"unknown notebook(s) {unknown}; available: {', '.join(by_name)}")
    return [by_name[n] for n in dict.fromkeys(names)]


def _report_unusable(bad: dict[str, NotebookError]) -> None:
    for exc in bad.values():
        print(f"icl-book: error: {exc} (skipped; the other notebooks are unaffected)", file=sys.stderr)


def cmd_list(args: argparse.Namespace, root: Path) -> int:
    """One line per notebook (expected run time per preset, from the store or the hint, and its parameters), or
    with ``NAME`` the parameters of one notebook: description, domain, quick and preset values."""
    notebooks, bad = discover_all(root)
    timed = timed_seconds(root)
    if args.names:
        for nb in select(notebooks, args.names, bad):
            print(describe_notebook(nb, root, timed))
        return 0
    presets = [QUICK, *sorted({p for nb in notebooks for p in nb.presets})]
    width = max((len(nb.name) for nb in notebooks), default=8)
    print(f"{'notebook':<{width}}" + "".join(f"  {p + ' run':>15}" for p in presets) + "  parameters")
    for nb in notebooks:
        times = [describe_seconds(timed.get((nb.name, p))) if p in nb.preset_names else "-" for p in presets]
        params = ", ".join(nb.parameters)
        if len(params) > 60:
            params = params[:57] + "..."
        print(f"{nb.name:<{width}}" + "".join(f"  {t:>15}" for t in times) + f"  {params}")
    print(f"icl-book: {len(notebooks)} notebooks; `icl-book list NAME` shows one notebook's parameters")
    _report_unusable(bad)
    return EXIT_USAGE if bad else 0


TIME_ROW = "run time"


def describe_notebook(nb: Notebook, root: Path, timed: dict[tuple[str, str], tuple[float, str]]) -> str:
    """The parameters of ``nb``: a table of name, quick value, each preset's value, domain, then its description;
    its first row is the expected run time of each preset (``timed``, :func:`~iclbook.scheduling.timed_seconds`)."""
    from .notebooks import python_literal

    presets = sorted(nb.presets)
    rows = [(TIME_ROW, [describe_seconds(timed.get((nb.name, p))) for p in nb.preset_names], "", "")]
    for key, value in nb.parameters.items():
        domain = [f"range {nb.ranges[key].describe()}"] if key in nb.ranges else []
        domain += [f"length {nb.lengths[key].describe()}"] if key in nb.lengths else []
        values = [python_literal(value)] + [python_literal(nb.presets[p].get(key, value)) for p in presets]
        rows.append((key, values, "; ".join(domain) or "-", nb.descriptions.get(key, "")))
    head = ["parameter", QUICK, *presets, "domain"]
    cols = [[r[0] for r in rows], *([r[1][i] for r in rows] for i in range(1 + len(presets))), [r[2] for r in rows]]
    widths = [max([len(h), *(len(c) for c in col)]) for h, col in zip(head, cols)]
    lines = [f"{nb.name} ({nb.path.relative_to(root) if nb.path.is_relative_to(root) else nb.path})"]
    lines.append("  " + "  ".join(f"{h:<{w}}" for h, w in zip(head, widths)) + "  description")
    for key, values, domain, text in rows:
        cells = [key, *values, domain]
        lines.append(("  " + "  ".join(f"{c:<{w}}" for c, w in zip(cells, widths)) + f"  {text}").rstrip())
    return "\n".join(lines)


def _overrides(pairs: list[list[str]] | None) -> dict[str, str]:
    return {k: v for k, v in (pairs or [])}


def cmd_run(args: argparse.Namespace, root: Path) -> int:
    good, bad = discover_all(root)
    notebooks = select(good, args.names, bad)
    if args.out is not None and not args.out.strip():
        raise UsageError("--out is empty; give a folder")
    out_root = resolve_path(args.out, "--out") if args.out is not None else root / "book" / "generated"
    requests = make_requests(notebooks, out_root, args.preset, _overrides(args.param))  # checked before any write
    if args.out is not None:
        check_writable(out_root, "--out")
        for req in requests:  # book/generated/ is icl-book's own
            check_output_folder(req.out_dir, root, args.force, "--out")
    check_store(root)
    start = time.monotonic()
    interrupts: Interrupts = args.interrupts
    summary = run_notebooks(
        requests,
        root,
        jobs=args.jobs,
        force=args.force,
        interrupts=interrupts,
        scheduler=getattr(args, "scheduler", None),
        threads=getattr(args, "threads", None),
    )
    elapsed = time.monotonic() - start
    if interrupts.stopping:
        name = signal.Signals(interrupts.signum).name
        stopped = sum(r.status == "interrupted" for r in summary.results)
        print(
            f"icl-book: interrupted by {name}; {stopped} notebook(s) stopped or skipped, none of them stored",
            file=sys.stderr,
        )
        return 128 + interrupts.signum
    ex, cached = len(summary.executed), sum(r.status == "cached" for r in summary.results)
    print(
        f"icl-book: {ex} executed, {cached} cached, {len(summary.failures)} failed in {elapsed:.1f}s; outputs in {out_root}"
    )
    if summary.failures:
        print("icl-book: FAILED notebooks:", file=sys.stderr)
        for r in summary.failures:
            print(f"  {r.name}: {r.error}", file=sys.stderr)
        return 1
    if bad and not args.names:
        _report_unusable(bad)
        return EXIT_USAGE
    return 0


def cmd_build(args: argparse.Namespace, root: Path) -> int:  # noqa: C901 (the build's steps in order (run, pages, jupyter-book and its log, interrupts), each exit path with its own status)
    from .ledger import ReportError
    from .report import write_pages

    status = 0
    if not args.no_run:
        status = cmd_run(args, root)
        if args.interrupts.stopping:
            return status
    try:
        rows = write_pages(root, root / "book" / "generated")
    except ReportError as exc:
        print(f"icl-book: error: {exc}", file=sys.stderr)
        return 1
    missing = [r for r in rows if r.status == "missing"]
    for r in missing:
        print(
            f"icl-book: report entry {r.claim.notebook}:{r.claim.metric} ({r.claim.source}) has no computed value",
            file=sys.stderr,
        )
    out = resolve_path(args.path_output, "--path-output") if args.path_output else root
    cmd = [
        sys.executable,
        "-c",
        "import sys; from iclbook.loaders import import_without_iri_checker as imp; "
        "sys.exit(imp('jupyter_book.cli.main').main())",
        "build",
        str(root),
        "--path-output",
        str(out),
    ]
    if not args.lenient:
        cmd += ["-W", "-n", "--keep-going"]
    if args.all:
        cmd.append("--all")
    # jupyter-book prints hundreds of lines (configuration dumps, colour codes): they go to a log file,
    # whose tail is shown if the build fails; --verbose streams them as before.
    log = out / "_build" / "book-build.log"
    env = dict(os.environ, MPLBACKEND="Agg")
    if args.verbose:
        print("icl-book: building HTML: jupyter-book", " ".join(cmd[3:]))
        sink = None
    else:
        try:
            log.parent.mkdir(parents=True, exist_ok=True)
            sink = open(log, "w", encoding="utf-8")  # noqa: SIM115 (closed below, after the child ends)
        except OSError as exc:
            print(f"icl-book: {log}: {os_reason(exc)}", file=sys.stderr)
            return 2
        print(f"icl-book: building HTML (jupyter-book's output: {log})", flush=True)
    try:
        try:
            kw = {} if sink is None else {"stdout": sink, "stderr": subprocess.STDOUT}
            proc = args.interrupts.popen(cmd, cwd=root, env=dict(env, NO_COLOR="1") if sink else env, **kw)
        except InterruptedError:
            return 128 + args.interrupts.signum
        try:
            returncode = proc.wait()
        finally:
            args.interrupts.release(proc)
    finally:
        if sink is not None:
            sink.close()
    if args.interrupts.stopping:
        print(
            f"icl-book: interrupted by {signal.Signals(args.interrupts.signum).name}; HTML build stopped",
            file=sys.stderr,
        )
        return 128 + args.interrupts.signum
    index = out / "_build" / "html" / "index.html"
    if returncode != 0:
        if sink is not None:
            tail = log.read_text(encoding="utf-8", errors="replace").splitlines()[-40:]
            print("\n".join(tail), file=sys.stderr)
        where = f"; its full output is in {log}" if sink is not None else ""
        print(f"icl-book: jupyter-book build failed (exit {returncode}){where}", file=sys.stderr)
        return returncode
    if missing:
        return 1
    print(f"icl-book: the book is at {index}")
    return status


def cmd_status(args: argparse.Namespace, root: Path) -> int:
    """What `run` with the same arguments would do, without executing anything."""
    good, bad = discover_all(root)
    notebooks = select(good, args.names, bad)
    out_root = resolve_path(args.out, "--out") if args.out else root / "book" / "generated"
    requests = make_requests(notebooks, out_root, args.preset, _overrides(args.param))
    stale = 0
    scans = import_scans(root)
    for req in requests:
        key = cache_key(req, root, scans)
        entry = store_dir(root) / "entries" / key
        problem = verify_folder(entry, key) if entry.exists() else "no stored run"
        if problem:
            stale += 1
            print(f"{req.notebook.name:28s} would execute ({problem})")
        else:
            stamp = read_manifest(entry)
            out = verify_folder(req.out_dir, key, stamp["files"]) if req.out_dir.exists() else "missing"
            origin = stamp.get("origin")
            imported = f" (imported from archive {origin['archive_sha256'][:16]})" if isinstance(origin, dict) else ""
            print(
                f"{req.notebook.name:28s} stored{imported}"
                + (f"; output folder would be copied ({out})" if out else "")
            )
    print(f"icl-book: {stale} of {len(requests)} notebook(s) would execute")
    _report_unusable(bad if not args.names else {})
    return 0


TRASH_PREFIX = ".icl-trash-"


def cmd_clean(args: argparse.Namespace, root: Path) -> int:
    """Remove the outputs: each folder is first renamed aside (one step, so an interrupt never leaves it half
    removed), then deleted; what an earlier interrupted clean left aside goes too."""
    paths = [root / "book" / "generated", root / "_build"] + ([root / STORE] if args.store else [])
    for leftover in sorted(root.glob(TRASH_PREFIX + "*")):
        shutil.rmtree(leftover, ignore_errors=True)
    for path in paths:
        if path.exists():
            aside = Path(tempfile.mkdtemp(prefix=TRASH_PREFIX, dir=root))
            with args.interrupts.held():
                os.rename(path, aside / path.name)
                print(f"icl-book: removed {path}")
            try:
                shutil.rmtree(aside)
            except OSError as exc:
                if args.interrupts.is_stopping():  # a signal broke the removal mid-way: it is an interrupt
                    raise Interrupted(args.interrupts.signum) from None
                raise PathError(path, f"{os_reason(exc)} (moved to {aside}, not yet deleted)") from None
    return 0


class OneLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors are one line on stderr (``icl-book: error: ...``), exit code 2."""

    def error(self, message: str) -> NoReturn:
        command = self.prog.removeprefix("icl-book").strip()
        self.exit(EXIT_USAGE, f"icl-book: error: {command + ': ' if command else ''}{message} (see --help)\n")


PARAM_FLAGS = ("-p", "--param")


def take_params(argv: list[str]) -> tuple[list[str], list[list[str]]]:
    """``argv`` without its ``-p NAME VALUE`` triples, and those pairs: a value may start with ``-``
    (``-p eta -inf``), which ``argparse`` would take for an option. After ``--`` nothing is taken."""
    rest: list[str] = []
    pairs: list[list[str]] = []
    i = 0
    while i < len(argv):
        if argv[i] == "--":
            rest += argv[i:]
            break
        if argv[i] in PARAM_FLAGS and i + 2 < len(argv):
            pairs.append([argv[i + 1], argv[i + 2]])
            i += 3
            continue
        rest.append(argv[i])
        i += 1
    return rest, pairs


def parse_args(argv: list[str]) -> argparse.Namespace:
    """The parsed command line; ``-p`` pairs are taken out first (:func:`take_params`)."""
    p = parser()
    rest, pairs = take_params(argv)
    args = p.parse_args(rest)
    if pairs:
        if not hasattr(args, "param"):
            p.error(f"-p/--param is not an option of `{args.command}`")
        args.param = (args.param or []) + pairs
    return args


def cmd_verdicts(args: argparse.Namespace, root: Path) -> int:
    """``icl-book verdicts NAME [--out DIR]``: the ledger rows of NAME graded on a run's metrics, as the book does."""
    from .verdicts import main as verdicts_main

    return verdicts_main([notebook_name(args.name), "--root", str(root), *(["--out", args.out] if args.out else [])])


def run_options(sp: argparse.ArgumentParser) -> None:
    """The options shared by ``run``, ``status`` and ``build``."""
    sp.add_argument("names", nargs="*", metavar="NAME", help="notebooks to run (default: all)")
    sp.add_argument("-p", "--param", nargs=2, action="append", metavar=("NAME", "VALUE"), help="override a parameter")
    sp.add_argument("--preset", default=QUICK, help=f"parameter preset (default: {QUICK}; also: paper)")
    sp.add_argument("--out", metavar="DIR", help="write outputs to DIR/<name>/ instead of book/generated/<name>/")
    sp.add_argument("-j", "--jobs", type=int, default=None, help="parallel notebooks (default: number of cores)")
    sp.add_argument("--force", action="store_true", help="re-execute even when the cache is valid")
    sp.add_argument(
        "--threads",
        type=int,
        default=None,
        metavar="N",
        help="BLAS/torch threads of each notebook (default: cores // jobs; results differ in their last bits "
        "with the thread count)",
    )
    sp.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        default=None,
        help="execute on a Dask cluster: a scheduler address (tcp://host:8786), or local:N (local:NxC) for a "
        "local cluster of N workers (of C threads each) (needs the 'cluster' extra)",
    )


def add_command(sub: argparse._SubParsersAction) -> None:
    """The commands of this module: list, status, run, build, clean, verdicts."""
    ls = sub.add_parser("list", help="notebooks in book order, one line each; with NAME, one notebook's parameters")
    ls.add_argument("names", nargs="*", metavar="NAME", help="show these notebooks' parameters (notebooks/x.py is x)")
    ls.set_defaults(func=cmd_list)

    st = sub.add_parser("status", help="which notebooks `run` would execute (nothing is executed)")
    run_options(st)
    st.set_defaults(func=cmd_status)

    r = sub.add_parser("run", help="execute notebooks (cached) into book/generated/")
    run_options(r)
    r.set_defaults(func=cmd_run)

    b = sub.add_parser("build", help="run (cached), then build the HTML book in strict mode")
    run_options(b)
    b.add_argument("--no-run", action="store_true", help="do not execute notebooks; build from book/generated as it is")
    b.add_argument("--path-output", metavar="DIR", help="write _build/ under DIR (default: the project root)")
    b.add_argument("--lenient", action="store_true", help="do not turn warnings into errors")
    b.add_argument("--all", action="store_true", help="rebuild every page (jupyter-book --all)")
    b.add_argument(
        "--verbose",
        action="store_true",
        help="show jupyter-book's output instead of writing it to _build/book-build.log",
    )
    b.set_defaults(func=cmd_build)

    c = sub.add_parser("clean", help=f"remove book/generated/ and _build/ (and the store {STORE}/ with --store)")
    c.add_argument("--store", action="store_true", help=f"also remove the store of executed runs, {STORE}/")
    c.set_defaults(func=cmd_clean)

    v = sub.add_parser("verdicts", help="grade a notebook's ledger rows on a run's metrics.json (nothing is executed)")
    v.add_argument("name", metavar="NAME", help="the notebook")
    v.add_argument("--out", metavar="DIR", help="the output root given to `run --out` (default: book/generated)")
    v.set_defaults(func=cmd_verdicts)


#: Every module with subcommands registers them the same way, through its ``add_command(sub)``.
COMMAND_MODULES = (sys.modules[__name__], sweep, archive, plan, record)


def parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="icl-book", description="Run and build the ICL companion's notebooks.")
    p.add_argument("--root", help="project root (default: found from the working directory)")
    sub = p.add_subparsers(dest="command", required=True)
    for module in COMMAND_MODULES:
        module.add_command(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point. SIGINT/SIGTERM end any command within a second: the handler ends running notebooks
    (kernels included) and raises :class:`~iclbook.execution.Interrupted` in the main thread, whatever it
    waits for; every write is renamed into place, so nothing is left half-written; exit 130/143."""
    args = parse_args(sys.argv[1:] if argv is None else list(argv))
    args.interrupts = Interrupts()
    with args.interrupts.installed():
        return _dispatch(args)


def _dispatch(args: argparse.Namespace) -> int:
    """Run the command of ``args``; every error is one line on stderr and an exit code."""
    try:
        if getattr(args, "out", None) is not None and args.command == "build":
            raise UsageError("--out is for `run`; `build` reads book/generated/")
        if getattr(args, "jobs", None) is not None and args.jobs < 1:
            raise UsageError(f"-j/--jobs must be at least 1, got {args.jobs}")
        if getattr(args, "threads", None) is not None and args.threads < 1:
            raise UsageError(f"--threads must be at least 1, got {args.threads}")
        if getattr(args, "scheduler", None) is not None:
            from .distributed import check_scheduler  # parses the address only; Dask is not imported
            from .worker_env import available_cores

            check_scheduler(args.scheduler, available_cores())
        root = check_root(args.root) if args.root is not None else find_root()
        return args.func(args, root)
    except Interrupted as exc:
        args.interrupts.finish()
        print(
            f"icl-book: interrupted by {signal.Signals(exc.signum).name}; stopped work is not stored "
            "and nothing was left half-written",
            file=sys.stderr,
        )
        return 128 + exc.signum
    except PathError as exc:
        print(f"icl-book: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except NotebookError as exc:
        print(f"icl-book: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # `icl-book list | head`: the reader has gone; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    except OSError as exc:  # any other filesystem problem (store, output folder, log): one line naming the path
        print(f"icl-book: {exc.filename or 'error'}: {os_reason(exc)}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
