"""Load the built book in headless Chromium: DOM checks after scripts ran, and screenshots.

The browser is driven through the Chrome DevTools Protocol over a pipe (``--remote-debugging-pipe``:
JSON messages separated by NUL bytes on file descriptors 3 and 4), so only the standard library is
needed. For every page, :func:`inspect_book` reports

- ``requests``: every URL the page requested (scripts, styles, fonts, images, ...);
- ``raw_tex``: visible text that still holds TeX (``\\(``, ``\\[``, ``$$``, ``\\frac``, ...) after
  MathJax ran, outside code blocks;
- ``math_errors``: MathJax error nodes, and math elements MathJax never typeset;
- ``broken_images``: images that did not load (``naturalWidth == 0``);
- layout at the requested width: ``page_overflow`` (the page scrolls sideways), ``math_beyond``
  (display equations sticking out of the text column) and ``math_scrolls`` (display equations wider
  than the column, contained in their own scrolling box);
- tables: ``tables_clipped`` (a table wider than its box with no scrolling box to hold it, or a cell
  hiding its content behind ``overflow: hidden``) and ``tables_scroll`` (wide tables that scroll inside
  their own box).

Command line (``make screenshots``)::

    python -m iclbook.browser screenshots _build/html _build/screenshots   # 1280 px and 390 px
    python -m iclbook.browser check _build/html                             # print the findings
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

WIDTHS = (1280, 390)
HEIGHT = 900
PAGE_TIMEOUT = 60.0
# Pages that are not book content (Sphinx's index and search pages have no figures or math).
SKIP = {"genindex.html", "search.html", "py-modindex.html"}

_CHECK_JS = r"""
(async () => {
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  const withTimeout = (p, ms) => Promise.race([p, sleep(ms)]);
  // MathJax 3 typesets asynchronously: wait for its startup promise when the page loads it.
  for (let i = 0; i < 100 && document.querySelector('script[src*="mathjax"]') && !(window.MathJax && MathJax.startup && MathJax.startup.promise); i++) await sleep(100);
  const mathjax = !!(window.MathJax && MathJax.startup && MathJax.startup.promise);
  if (mathjax) await withTimeout(MathJax.startup.promise, 30000);
  // Images: load lazy ones too, then wait for each to settle.
  const imgs = Array.from(document.images);
  imgs.forEach((im) => { if (im.loading === 'lazy') im.loading = 'eager'; });
  await withTimeout(Promise.all(imgs.map((im) => im.complete ? null : new Promise((r) => { im.onload = im.onerror = r; }))), 20000);
  const broken = imgs.filter((im) => !(im.complete && im.naturalWidth > 0)).map((im) => im.getAttribute('src'));
  // Raw TeX left in visible text (outside code, scripts and typeset math).
  const skipTags = new Set(['SCRIPT', 'STYLE', 'PRE', 'CODE', 'TEXTAREA', 'MJX-CONTAINER', 'MJX-ASSISTIVE-MML', 'NOSCRIPT']);
  const tex = /\\\(|\\\)|\\\[|\\\]|\$\$|\\begin\{|\\(frac|mathbb|mathrm|mathcal|operatorname|sqrt|sum|Sigma|sigma|lambda|alpha|beta|gamma|top|left|right)(?![A-Za-z])/;
  const rawTex = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT, {
    acceptNode(node) {
      for (let el = node.parentElement; el; el = el.parentElement) {
        if (skipTags.has(el.tagName)) return NodeFilter.FILTER_REJECT;
      }
      return NodeFilter.FILTER_ACCEPT;
    },
  });
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (tex.test(n.textContent)) rawTex.push(n.textContent.trim().slice(0, 160));
  }
  const errors = Array.from(document.querySelectorAll('mjx-merror, [data-mjx-error], .MathJax_Error'))
    .map((e) => (e.getAttribute('data-mjx-error') || e.textContent || '').slice(0, 160));
  const untypeset = Array.from(document.querySelectorAll('.math')).filter((e) => !e.querySelector('mjx-container'));
  if (untypeset.length) errors.push(`${untypeset.length} math element(s) not typeset by MathJax`);
  // Layout: display equations against the text column.
  const column = document.querySelector('article.bd-article') || document.querySelector('main') || document.body;
  const colRight = column.getBoundingClientRect().right;
  const beyond = [], scrolls = [];
  const scrollable = (el) => el && ['auto', 'scroll'].includes(getComputedStyle(el).overflowX);
  document.querySelectorAll('mjx-container[display="true"]').forEach((m) => {
    const label = (m.querySelector('mjx-assistive-mml') ? m.querySelector('mjx-assistive-mml').textContent : '').slice(0, 80);
    const box = m.getBoundingClientRect();
    const inner = m.querySelector('mjx-math');
    const right = Math.max(box.right, inner ? inner.getBoundingClientRect().right : box.right);
    const wide = right > box.right + 1 || m.scrollWidth > m.clientWidth + 1;
    // Contained: the equation's own box (or its div.math) scrolls, so nothing spills out of the column.
    const contained = scrollable(m) || (m.parentElement && m.parentElement.classList.contains('math') && scrollable(m.parentElement));
    if (box.right > colRight + 1 || box.right > window.innerWidth + 1 || (right > colRight + 1 && !contained)) {
      beyond.push({right: Math.round(right), column: Math.round(colRight), math: label});
    }
    if (wide) scrolls.push({width: Math.max(m.scrollWidth, Math.round(right - box.left)), box: m.clientWidth, math: label});
  });
  // Tables: a table wider than its box must be inside a scroll container (or be one); no cell may hide
  // its content behind overflow: hidden.
  const tablesClipped = [], tablesScroll = [];
  document.querySelectorAll('table').forEach((t) => {
    if (!t.getClientRects().length) return;  // not displayed (a collapsed block)
    const head = (t.querySelector('th, td') ? t.querySelector('th, td').textContent : '').trim().slice(0, 60);
    let box = null;
    for (let a = t; a && a !== document.body && a !== document.documentElement; a = a.parentElement) {
      if (getComputedStyle(a).overflowX !== 'visible') { box = a; break; }
    }
    const r = t.getBoundingClientRect();
    const limit = box ? box.getBoundingClientRect().right : Math.min(colRight, window.innerWidth);
    const wide = t.scrollWidth > t.clientWidth + 1 || r.right > limit + 1 || (box && box.scrollWidth > box.clientWidth + 1);
    if (wide) {
      if (scrollable(box)) {
        const boxRight = box.getBoundingClientRect().right;
        if (boxRight > Math.max(colRight, window.innerWidth) + 1) tablesClipped.push({table: head, why: `its scrolling box ends at ${Math.round(boxRight)} px, beyond the column`});
        else tablesScroll.push({table: head, width: Math.max(t.scrollWidth, box.scrollWidth), box: box.clientWidth});
      } else {
        tablesClipped.push({table: head, why: `${Math.round(r.right)} px wide past ${Math.round(limit)} px, with no scrolling box`});
      }
    }
    t.querySelectorAll('td, th').forEach((c) => {
      const o = getComputedStyle(c).overflowX;
      if (['hidden', 'clip'].includes(o) && c.scrollWidth > c.clientWidth + 1) {
        tablesClipped.push({table: head, why: `cell ${JSON.stringify(c.textContent.trim().slice(0, 40))} hides ${c.scrollWidth - c.clientWidth} px (overflow ${o})`});
      }
    });
  });
  return {
    resources: performance.getEntriesByType('resource').map((e) => e.name),
    tables_clipped: tablesClipped.slice(0, 20),
    tables_scroll: tablesScroll.slice(0, 20),
    n_tables: document.querySelectorAll('table').length,
    mathjax: mathjax,
    raw_tex: rawTex.slice(0, 20),
    math_errors: errors.slice(0, 20),
    broken_images: broken,
    n_images: imgs.length,
    n_display_math: document.querySelectorAll('mjx-container[display="true"]').length,
    page_overflow: document.documentElement.scrollWidth > window.innerWidth + 1 ? document.documentElement.scrollWidth : 0,
    math_beyond: beyond,
    math_scrolls: scrolls,
    height: Math.ceil(document.documentElement.scrollHeight),
  };
})()
"""


def find_chromium() -> str | None:
    """Path of a Chromium/Chrome executable (``$CHROMIUM`` first), or None."""
    env = os.environ.get("CHROMIUM")
    if env:
        return env if shutil.which(env) or Path(env).exists() else None
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class CDPError(RuntimeError):
    """A DevTools command failed or timed out."""


class Browser:
    """Headless Chromium driven over ``--remote-debugging-pipe``."""

    def __init__(self, executable: str | None = None):
        exe = executable or find_chromium()
        if exe is None:
            raise FileNotFoundError("no chromium executable found (apt-get install chromium, or set $CHROMIUM)")
        self._profile = tempfile.mkdtemp(prefix="iclbook-chromium-")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def child_fds():  # the browser reads commands on fd 3 and writes replies on fd 4
            hi_r, hi_w = os.dup(to_browser_r), os.dup(from_browser_w)
            os.dup2(hi_r, 3)
            os.dup2(hi_w, 4)

        args = [
            exe,
            "--headless",
            "--remote-debugging-pipe",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--disable-quic",
            "--hide-scrollbars",
            "--allow-file-access-from-files",
            f"--user-data-dir={self._profile}",
            "about:blank",
        ]
        self._proc = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=child_fds,  # runs before the child closes its other descriptors
            pass_fds=(3, 4),
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._next_id = 0
        self._replies: dict[int, dict] = {}
        self._events: queue.Queue = queue.Queue()
        self._cond = threading.Condition()
        self._reader = threading.Thread(target=self._read_loop, daemon=True)
        self._reader.start()

    def _read_loop(self) -> None:
        buf = b""
        while True:
            try:
                chunk = os.read(self._from_browser, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                with self._cond:
                    self._replies[-1] = {"error": {"message": "browser closed the pipe"}}
                    self._cond.notify_all()
                return
            buf += chunk
            while b"\0" in buf:
                raw, buf = buf.split(b"\0", 1)
                msg = json.loads(raw)
                if "id" in msg:
                    with self._cond:
                        self._replies[msg["id"]] = msg
                        self._cond.notify_all()
                else:
                    self._events.put(msg)

    def send(self, method: str, params: dict | None = None, session: str | None = None, timeout: float = 60.0):
        """Send one DevTools command and return its result."""
        self._next_id += 1
        cid = self._next_id
        msg = {"id": cid, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._to_browser, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        with self._cond:
            while cid not in self._replies:
                if -1 in self._replies:
                    raise CDPError(f"{method}: browser closed the pipe")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise CDPError(f"{method}: no reply within {timeout:.0f}s")
                self._cond.wait(left)
            reply = self._replies.pop(cid)
        if "error" in reply:
            raise CDPError(f"{method}: {reply['error'].get('message')}")
        return reply.get("result", {})

    def events(self) -> list[dict]:
        """Drain the events received so far."""
        out = []
        while True:
            try:
                out.append(self._events.get_nowait())
            except queue.Empty:
                return out

    def wait_event(self, method: str, session: str, timeout: float) -> list[dict]:
        """Collect events until ``method`` arrives for ``session``; return everything collected."""
        got, deadline = [], time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise CDPError(f"no {method} within {timeout:.0f}s")
            try:
                ev = self._events.get(timeout=left)
            except queue.Empty:
                continue
            got.append(ev)
            if ev.get("method") == method and ev.get("sessionId") == session:
                return got

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout=10)
        except CDPError:
            pass
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(timeout=10)
        for fd in (self._to_browser, self._from_browser):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


@dataclass
class PageReport:
    """What one page did at one width."""

    page: str
    width: int
    requests: list[str] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    checks: dict = field(default_factory=dict)
    screenshot: str | None = None


def book_pages(html_root: Path) -> list[Path]:
    """Every content page of a built book (Sphinx's index/search pages and assets excluded)."""
    pages = []
    for p in sorted(html_root.rglob("*.html")):
        rel = p.relative_to(html_root)
        if rel.parts[0].startswith("_") or rel.name in SKIP:
            continue
        if 'http-equiv="refresh"' in p.read_text(errors="replace")[:2000].lower():
            continue  # a redirect (index.html -> the root page), not a page
        pages.append(p)
    return pages


def _inside(url: str, root_url: str) -> bool:
    return url.startswith(root_url) or url.startswith(("data:", "blob:", "about:"))


def inspect_page(
    browser: Browser, page: Path, html_root: Path, width: int, screenshot: Path | None = None
) -> PageReport:
    """Load ``page`` at ``width`` px and run the checks (and take a full-page screenshot)."""
    return inspect_page_widths(browser, page, html_root, (width,), (screenshot,))[0]


def inspect_page_widths(  # noqa: C901 (one DevTools session loads, resizes and checks the page in order; every step shares its event and request lists)
    browser: Browser,
    page: Path,
    html_root: Path,
    widths: tuple[int, ...],
    screenshots: tuple[Path | None, ...] | None = None,
) -> list[PageReport]:
    """Load ``page`` once, at ``widths[0]`` px, and run the checks at each width in turn.

    The page is loaded (and MathJax typesets it) once; each further width resizes the viewport, waits
    for the book's resize handler (``icl.js``: equations re-fitted 150 ms after a resize; we wait 250 ms) and checks
    the re-laid-out page. Requests are those of the one load (plus any a resize triggers), so every
    width's report lists them all.
    """
    screenshots = tuple(screenshots) if screenshots is not None else (None,) * len(widths)
    if len(screenshots) != len(widths):
        raise ValueError(f"screenshots: expected one per width ({len(widths)}), got {len(screenshots)}")
    root_url = html_root.resolve().as_uri() + "/"
    target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
    session = browser.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    name = str(page.relative_to(html_root))
    reports: list[PageReport] = []
    requests: list[str] = []
    outside: list[str] = []
    failed: list[str] = []

    def record(url: str) -> None:
        if url not in requests:
            requests.append(url)
            if not _inside(url, root_url):
                outside.append(url)

    def viewport(width: int) -> None:
        browser.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": width < 600},
            session=session,
        )

    try:
        for method in ("Page.enable", "Network.enable", "Runtime.enable"):
            browser.send(method, session=session)
        viewport(widths[0])
        browser.events()
        browser.send("Page.navigate", {"url": page.resolve().as_uri()}, session=session)
        events = browser.wait_event("Page.loadEventFired", session, PAGE_TIMEOUT)
        for i, (width, screenshot) in enumerate(zip(widths, screenshots)):
            if i:
                viewport(width)
                browser.send(
                    "Runtime.evaluate",
                    {"expression": "new Promise((r) => setTimeout(r, 250))", "awaitPromise": True},
                    session=session,
                    timeout=PAGE_TIMEOUT,
                )
            report = PageReport(page=name, width=width)
            res = browser.send(
                "Runtime.evaluate",
                {"expression": _CHECK_JS, "awaitPromise": True, "returnByValue": True},
                session=session,
                timeout=PAGE_TIMEOUT,
            )
            if "exceptionDetails" in res:
                raise CDPError(f"check script failed on {name}: {res['exceptionDetails']}")
            report.checks = res["result"]["value"]
            if i == len(widths) - 1:
                browser.send("Runtime.evaluate", {"expression": "0"}, session=session)
                time.sleep(0.3)  # network events travel apart from Runtime replies: let the last ones arrive
            events += browser.events()
            for ev in events:
                if ev.get("sessionId") != session:
                    continue
                if ev.get("method") == "Network.requestWillBeSent":
                    record(ev["params"]["request"]["url"])
                elif ev.get("method") == "Network.loadingFailed" and not ev["params"].get("canceled"):
                    failed.append(ev["params"].get("errorText", "?"))
            events = []
            for url in report.checks.pop("resources", []):  # the page's own record, as a cross-check
                record(url)
            if screenshot is not None:
                height = min(int(report.checks.get("height", HEIGHT)), 16000)
                shot = browser.send(
                    "Page.captureScreenshot",
                    {
                        "format": "png",
                        "captureBeyondViewport": True,
                        "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1},
                    },
                    session=session,
                    timeout=PAGE_TIMEOUT,
                )
                screenshot.parent.mkdir(parents=True, exist_ok=True)
                screenshot.write_bytes(base64.b64decode(shot["data"]))
                report.screenshot = str(screenshot)
            reports.append(report)
        for report in reports:
            report.requests, report.outside, report.failed = list(requests), list(outside), list(failed)
    finally:
        browser.send("Target.closeTarget", {"targetId": target})
    return reports


def inspect_book(
    html_root: Path, widths=WIDTHS, screenshots: Path | None = None, executable: str | None = None
) -> list[PageReport]:
    """Inspect every page of the built book at each width (screenshots into ``screenshots/<width>/``).

    Each page is loaded once and checked at every width (:func:`inspect_page_widths`).
    """
    html_root = Path(html_root).resolve()
    widths = tuple(widths)
    reports = []
    with Browser(executable) as browser:
        for page in book_pages(html_root):
            shots = None
            if screenshots is not None:
                name = str(page.relative_to(html_root)).replace("/", "__").removesuffix(".html") + ".png"
                shots = tuple(Path(screenshots) / str(width) / name for width in widths)
            reports.extend(inspect_page_widths(browser, page, html_root, widths, shots))
    return reports


def summarize(reports: list[PageReport]) -> list[str]:
    """One line per problem found (empty when every page is clean)."""
    lines = []
    for r in reports:
        c = r.checks
        where = f"{r.page} @{r.width}px"
        for url in r.outside:
            lines.append(f"{where}: request outside the book: {url}")
        for img in c.get("broken_images", []):
            lines.append(f"{where}: image did not load: {img}")
        for t in c.get("raw_tex", []):
            lines.append(f"{where}: raw TeX left: {t!r}")
        for e in c.get("math_errors", []):
            lines.append(f"{where}: MathJax error: {e}")
        if c.get("page_overflow"):
            lines.append(f"{where}: the page scrolls sideways ({c['page_overflow']} px wide)")
        for tb in c.get("tables_clipped", []):
            lines.append(f"{where}: table cell cut off ({tb['why']}): {tb['table']}")
        for m in c.get("math_beyond", []):
            lines.append(
                f"{where}: display equation beyond the column (right {m['right']} > {m['column']}): {m['math']}"
            )
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m iclbook.browser", description=__doc__.splitlines()[0])
    ap.add_argument("command", choices=["screenshots", "check"])
    ap.add_argument("html", type=Path, help="the built book (_build/html)")
    ap.add_argument("out", type=Path, nargs="?", default=Path("_build/screenshots"), help="screenshot folder")
    ap.add_argument("--width", type=int, action="append", help=f"page width in px (default: {WIDTHS})")
    args = ap.parse_args(argv)
    if not (args.html / "index.html").exists():
        print(f"no built book at {args.html} (run make book first)", file=sys.stderr)
        return 2
    if find_chromium() is None:
        print("chromium not found: apt-get install -y chromium (or set $CHROMIUM)", file=sys.stderr)
        return 2
    widths = tuple(args.width) if args.width else WIDTHS
    reports = inspect_book(args.html, widths, args.out if args.command == "screenshots" else None)
    for r in reports:
        c = r.checks
        print(
            f"{r.page:60s} {r.width:5d}px  math {c.get('n_display_math', 0):3d}  scrolls {len(c.get('math_scrolls', [])):2d}"
            f"  beyond {len(c.get('math_beyond', [])):2d}  images {c.get('n_images', 0):3d}"
            + (f"  -> {r.screenshot}" if r.screenshot else "")
        )
    problems = summarize(reports)
    print("\n".join(problems) if problems else f"{len(reports)} page views, no problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
