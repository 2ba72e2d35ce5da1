"""The rendered book opened in a real browser (headless Chromium), page by page, with no network.

Marked ``browser``. Like the tests in ``test_book.py`` they read the HTML in ``RLTUTOR_BOOK_HTML``
(``scripts/test.sh`` builds the book and sets it). The pages are served from a local HTTP server;
every request for any other host is refused and reported, so a page that still needs a CDN fails.
They skip, saying what to install, where Chromium (Debian: ``apt-get install chromium``) or the
``playwright`` package (the ``test`` extra; it drives the system's Chromium and downloads no browser)
is missing. ``RLTUTOR_CHROMIUM`` names another Chromium binary.

For every HTML page of the book (chapters, reference pages, index and search):

1. it loads with no console error, no uncaught exception, no failed or refused request;
2. all math is typeset: each ``.math`` element holds MathJax output, no MathJax error node, and no
   raw TeX delimiter (``\\(``, ``\\[``, ``$$``, ``\\begin{``) is left in the text outside code;
3. every image (each figure) has loaded;
4. every widget area (a saved ipywidgets view) is non-empty in its static state;
5. no equation, table or code block runs past the text column at a 1280 px window unless it is
   inside a scroll container that fits the column, and the page has no horizontal scroll bar;
6. no figure is shrunk to fit the column below ``MIN_FIGURE_SCALE`` of its size: the book's
   figures are drawn at 100 dpi with 10-11 pt text (14-15 px), so a 16-inch row of four panels
   shown in the 690 px column has 6 px labels; ``rltutor.views.plots.panel_grid`` adds rows instead;
7. no text in a figure is under ``MIN_TEXT_PX`` as shown: ``tests/test_notebooks.py`` records, while
   each chapter runs, every figure's smallest text in pixels at 100% (font size x dpi / 72), keyed by
   the PNG's SHA-1, in ``NN.figures.json`` beside the executed notebooks (``RLTUTOR_EXECUTED_DIR``,
   default ``executed/`` beside the HTML folder); here each image's bytes find their record, and the
   size is multiplied by the scale the image is shown at (rendered width / natural width);
8. a full-page screenshot is saved to ``RLTUTOR_SCREENSHOTS`` (default: ``screenshots/`` beside the
   HTML folder, i.e. ``_build/screenshots``); CI keeps them as an artifact.

And on chapter 4, moving each slider of the static explorer redraws its figure.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import http.server
import json
import os
import posixpath
import shutil
import threading
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

pytestmark = pytest.mark.browser

WIDTH, HEIGHT = 1280, 900
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
INSTALL = (
    "install Debian's chromium (sudo apt-get install chromium; scripts/test.sh does it where it can) "
    "or set RLTUTOR_CHROMIUM to a Chromium binary"
)
EXPLORER_PAGE = "notebooks/04_variance_horizon.html"
MIN_FIGURE_SCALE = 0.6  # shown width / drawn width: 10 pt tick labels stay >= 8 px high
MIN_TEXT_PX = 9.0  # the smallest text in a figure, as shown (tests/test_notebooks.py: the same floor)


def _html_dir() -> Path:
    value = os.environ.get("RLTUTOR_BOOK_HTML")
    if not value or not (Path(value) / "index.html").is_file():
        pytest.fail(
            f"RLTUTOR_BOOK_HTML={value!r} is not a built book. Build it and point the variable at the HTML: "
            "bash scripts/book.sh && RLTUTOR_BOOK_HTML=$PWD/_build/html .venv/bin/pytest -m browser tests "
            "(scripts/test.sh does both)"
        )
    return Path(value)


def _pages() -> list[str]:
    """Every HTML page of the build (relative paths) but Sphinx's folders and the root's redirect."""
    value = os.environ.get("RLTUTOR_BOOK_HTML")
    if not value or not Path(value).is_dir():
        return ["book/intro.html"]  # the fixtures then fail with the message in _html_dir
    root = Path(value)
    pages = [p.relative_to(root) for p in root.rglob("*.html")]
    skip = {"_static", "_sources", "_images", "_downloads"}
    # index.html only sends the reader on to the first page (a meta refresh)
    return sorted(p.as_posix() for p in pages if p.parts[0] not in skip and p.as_posix() != "index.html")


def _executed_dir() -> Path:
    value = os.environ.get("RLTUTOR_EXECUTED_DIR")
    return Path(value) if value else _html_dir().parent / "executed"


@functools.cache
def _figure_records() -> dict[str, dict]:
    """The notebook test's figure records (``NN.figures.json``), by the SHA-1 of each PNG."""
    out = {}
    for path in sorted(_executed_dir().glob("*.figures.json")):
        for record in json.loads(path.read_text()):
            if record.get("sha1"):
                out[record["sha1"]] = {**record, "notebook": path.name.removesuffix(".figures.json")}
    return out


BLOB_BASE64_JS = """async (url) => {
  const bytes = new Uint8Array(await (await fetch(url)).arrayBuffer());
  let s = "";
  for (let i = 0; i < bytes.length; i += 8192) s += String.fromCharCode(...bytes.subarray(i, i + 8192));
  return btoa(s);
}"""
"""The bytes behind a blob: URL of the page, base64-encoded (for :func:`_image_sha1`)."""


def _image_sha1(page: str, src: str) -> str | None:
    """The SHA-1 of the bytes an image of ``page`` shows (a data: URL or a file of the build)."""
    if src.startswith("data:"):
        return hashlib.sha1(base64.b64decode(src.split(",", 1)[1])).hexdigest()
    path = _html_dir() / posixpath.normpath(posixpath.join(posixpath.dirname(page), unquote(urlsplit(src).path)))
    return hashlib.sha1(path.read_bytes()).hexdigest() if path.is_file() else None


def _small_figure_text(page: str, figures: list) -> list[str]:
    """Figures of ``page`` whose smallest text is under MIN_TEXT_PX at the scale they are shown at."""
    records = _figure_records()
    problems = []
    for src, scale in figures:
        sha = _image_sha1(page, src)
        record = records.get(sha)
        if record is None:
            problems.append(f"no figure record for {src[:80]} (the notebook test records every figure it renders)")
        elif record.get("min_px") is not None and record["min_px"] * scale < MIN_TEXT_PX:
            problems.append(
                f"figure text {record['smallest']!r} is {record['min_px'] * scale:.1f} px as shown "
                f"({record['min_pt']:g} pt at {record['dpi']:g} dpi, shown at {scale:.0%}; cell {record['cell']} "
                f"of {record['notebook']}): {src[:80]}"
            )
    return problems


def _chromium() -> str | None:
    named = os.environ.get("RLTUTOR_CHROMIUM")
    if named:
        return named if Path(named).is_file() else None
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # no request log on stderr
        pass

    def do_GET(self):
        # Chromium asks the site's root for /favicon.ico on its own; on the book's host that root is not
        # the book's (a project site lives in a sub-folder), so its 404 says nothing about the book.
        if self.path == "/favicon.ico":
            self.send_response(204)
            self.end_headers()
            return
        super().do_GET()


@pytest.fixture(scope="module")
def server():
    handler = functools.partial(_Quiet, directory=str(_html_dir()))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    executable = _chromium()
    if executable is None:
        named = os.environ.get("RLTUTOR_CHROMIUM")
        where = f"RLTUTOR_CHROMIUM={named} is not a file" if named else f"none of {', '.join(CHROMIUM_NAMES)}"
        pytest.skip(f"no Chromium ({where}): {INSTALL}")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("the playwright package is missing: .venv/bin/pip install -e '.[test]'")
    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(profile),
            executable_path=executable,
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": WIDTH, "height": HEIGHT},
            service_workers="block",
        )
        yield context
        context.close()


@pytest.fixture(scope="module")
def shots() -> Path:
    value = os.environ.get("RLTUTOR_SCREENSHOTS")
    folder = Path(value) if value else _html_dir().parent / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


class Loaded:
    """A page opened in the browser, with what went wrong while it loaded."""

    def __init__(self, context, base: str, page: str):
        self.page = context.new_page()
        self.problems: list[str] = []
        host = urlsplit(base).netloc

        def route(r):
            if urlsplit(r.request.url).netloc == host or r.request.url.startswith(("data:", "blob:", "about:")):
                r.continue_()
            else:
                self.problems.append(f"asked the network for {r.request.url}")
                r.abort()

        self.page.route("**/*", route)
        self.page.on("console", lambda m: m.type == "error" and self.problems.append(f"console error: {m.text}"))
        self.page.on("pageerror", lambda e: self.problems.append(f"uncaught exception: {e}"))
        self.page.on("requestfailed", lambda r: self.problems.append(f"request failed: {r.url} ({r.failure})"))
        self.page.on("response", lambda r: r.status >= 400 and self.problems.append(f"HTTP {r.status} for {r.url}"))
        self.page.goto(base + page, wait_until="load")
        # MathJax typesets after load; wait for it (and for any typesetting it queued) to finish.
        self.page.evaluate(
            "() => window.MathJax && MathJax.startup && MathJax.startup.promise"
            " ? MathJax.startup.promise.then(() => true) : true"
        )

    def close(self):
        self.page.close()


# What a reader sees, checked in the page: raw TeX, MathJax errors, missing images, empty widget
# areas, and equations, tables or code running past the text column outside a scroll container.
CHECK_JS = r"""
() => {
  const out = {rawTex: [], untypeset: [], mathErrors: [], images: [], widgets: [], overflow: [], figures: [],
               pageWidth: 0};
  const main = document.querySelector("article.bd-article") || document.querySelector("main") || document.body;
  // 2. math
  for (const m of main.querySelectorAll(".math")) {
    if (!m.querySelector("mjx-container")) out.untypeset.push(m.textContent.trim().slice(0, 80));
  }
  for (const e of document.querySelectorAll("mjx-merror")) {
    out.mathErrors.push((e.getAttribute("data-mjx-error") || e.textContent).slice(0, 120));
  }
  const walker = document.createTreeWalker(main, NodeFilter.SHOW_TEXT, {
    acceptNode: (n) => n.parentElement.closest("pre, code, script, style, textarea, mjx-assistive-mml, .highlight")
      ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT,
  });
  const tex = /\\\(|\\\)|\\\[|\\\]|\$\$|\\begin\{/;
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (tex.test(n.textContent)) out.rawTex.push(n.textContent.trim().slice(0, 100));
  }
  // 3. images
  for (const img of document.querySelectorAll("img")) {
    if (!img.complete || img.naturalWidth === 0) out.images.push(img.getAttribute("src"));
  }
  // 4. widget areas (a saved view: the manager renders it next to its script tag)
  for (const s of document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]')) {
    const area = s.parentElement;
    const h = area.getBoundingClientRect().height;
    if (h < 20 || !area.querySelector(".jupyter-widgets, .widget-subarea, .lm-Widget")) {
      out.widgets.push(`${area.className || area.tagName}: ${Math.round(h)} px`);
    }
  }
  // 5. overflow past the text column
  const col = main.getBoundingClientRect();
  const colLeft = col.left - 1, colRight = col.right + 1;
  const inside = (r) => r.left >= colLeft && r.right <= colRight;
  const scrolls = (el) => ["auto", "scroll"].includes(getComputedStyle(el).overflowX);
  const items = main.querySelectorAll('mjx-container[display="true"] > mjx-math, table, pre, .cell_output img, svg');
  for (const el of items) {
    const r = el.getBoundingClientRect();
    if (r.width === 0) continue;
    // a box's content can run past its own right edge (scrollWidth); centred equations also run left
    const left = r.left, right = scrolls(el) ? r.right : r.left + Math.max(el.scrollWidth, r.width);
    if (left >= colLeft && right <= colRight) continue;
    let ok = false;
    for (let a = el.parentElement; a && a !== main.parentElement; a = a.parentElement) {
      if (scrolls(a) && inside(a.getBoundingClientRect())) { ok = true; break; }
    }
    if (!ok) {
      const what = el.tagName.toLowerCase() === "mjx-math" ? "equation" : el.tagName.toLowerCase();
      const text = (el.closest("mjx-container") || el).textContent.trim().replace(/\s+/g, " ").slice(0, 60);
      const past = Math.round(Math.max(colLeft - left, right - colRight));
      out.overflow.push(`${what} ${past} px past the column: ${text}`);
    }
  }
  // 6. figures shrunk to fit the column
  for (const img of main.querySelectorAll(".cell_output img")) {
    const w = img.getBoundingClientRect().width;
    if (img.naturalWidth > 0 && w > 0) out.figures.push([img.getAttribute("src"), w / img.naturalWidth]);
  }
  out.pageWidth = document.documentElement.scrollWidth;
  return out;
}
"""

WIDGETS_RENDERED_JS = """
() => [...document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]')]
  .every((s) => s.parentElement.querySelector(".jupyter-widgets, .widget-subarea, .lm-Widget"))
"""


@pytest.mark.parametrize("page", _pages())
def test_page_in_browser(browser, server, shots, page):
    loaded = Loaded(browser, server, page)
    try:
        p = loaded.page
        try:
            p.wait_for_function(WIDGETS_RENDERED_JS, timeout=20_000)
        except Exception:  # reported below as an empty widget area
            pass
        p.wait_for_load_state("networkidle")
        found = p.evaluate(CHECK_JS)
        # an ipywidgets Image shows its PNG as a blob: URL, which only the page can read: fetch its bytes there
        found["figures"] = [
            ("data:image/png;base64," + p.evaluate(BLOB_BASE64_JS, src) if src.startswith("blob:") else src, scale)
            for src, scale in found["figures"]
        ]
        p.screenshot(path=str(shots / (page.replace("/", "__").removesuffix(".html") + ".png")), full_page=True)
    finally:
        loaded.close()
    problems = list(loaded.problems)
    problems += [f"raw TeX left in the text: {t!r}" for t in found["rawTex"]]
    problems += [f"math not typeset: {t!r}" for t in found["untypeset"]]
    problems += [f"MathJax error: {t!r}" for t in found["mathErrors"]]
    problems += [f"image not loaded: {s}" for s in found["images"]]
    problems += [f"empty widget area: {w}" for w in found["widgets"]]
    problems += [f"overflow: {o}" for o in found["overflow"]]
    problems += [
        f"figure shown at {scale:.0%} of its size, labels too small to read (fewer panels a row): {src}"
        for src, scale in found["figures"]
        if scale < MIN_FIGURE_SCALE
    ]
    if page.startswith("notebooks/"):
        problems += _small_figure_text(page, found["figures"])
    if found["pageWidth"] > WIDTH:
        problems.append(f"the page is {found['pageWidth']} px wide at a {WIDTH} px window (horizontal scroll)")
    assert not problems, f"{page}:\n" + "\n".join(problems)


def test_every_chapter_has_its_figure_records():
    """The records the figure-text check reads exist for every chapter page of the build."""
    pages = [Path(p).stem for p in _pages() if p.startswith("notebooks/")]
    missing = [p for p in pages if not (_executed_dir() / f"{p}.figures.json").is_file()]
    assert not missing, (
        f"no figure records in {_executed_dir()} for {missing}: run the notebooks with "
        "RLTUTOR_EXECUTED_DIR set (tests/test_notebooks.py writes NN.figures.json; scripts/test.sh does it)"
    )


def test_static_explorer_sliders_redraw_the_figure(browser, server):
    if not (_html_dir() / EXPLORER_PAGE).is_file():
        pytest.fail(f"{EXPLORER_PAGE} is not in the build; the static explorer lives in chapter 4")
    loaded = Loaded(browser, server, EXPLORER_PAGE)
    try:
        p = loaded.page
        root = p.locator(".rlx-explorer").first
        assert root.count() == 1, "chapter 4 shows no static explorer (.rlx-explorer)"
        plot = root.locator(".rlx-plot")
        assert plot.locator("svg").count() >= 1, "the explorer drew no SVG figure"
        sliders = root.locator("input[type=range]")
        assert sliders.count() >= 1, "the explorer has no sliders"
        unchanged = []
        for i in range(sliders.count()):
            s = sliders.nth(i)
            before = plot.inner_html()
            lo, hi, value = (int(s.get_attribute(a)) for a in ("min", "max", "value"))
            if lo == hi:
                continue
            target = hi if value != hi else lo
            s.evaluate("(el, v) => { el.value = v; el.dispatchEvent(new Event('input', {bubbles: true})); }", target)
            if plot.inner_html() == before:
                unchanged.append(s.get_attribute("data-key"))
        assert not unchanged, f"moving these sliders left the explorer's figure unchanged: {unchanged}"
    finally:
        loaded.close()
    assert not loaded.problems, "\n".join(loaded.problems)
