"""Tests of the *rendered* book (every test is marked ``book``).

They read the HTML that ``jupyter-book build`` wrote, from the directory in the environment variable
``RLTUTOR_BOOK_HTML`` (``scripts/test.sh`` builds the book and sets it). Without it they fail with a
message saying how to build; they never pass silently.

What is checked, page by page:

1. every page listed in ``_toc.yml`` (root, files, and each notebook matched by a glob) was rendered;
2. every notebook in ``notebooks/`` has a page;
3. no page shows an error: no traceback output block, no ``Traceback (most recent call last)`` and
   no ``SomethingError:`` line in any cell output (stdout, stderr or rich text);
4. every notebook page was executed (has cell outputs) and carries a figure: a local ``<img>`` in a
   cell output, an inline ``<svg>``, or a Plotly figure;
5. every notebook page has the "launch on Colab" link for its own notebook at the ref in ``_config.yml``
   (``repository.branch``, written by ``scripts/sync_home.py``) of the repository named there
   (``repository.url``, the one place the address is written), the ref its install cell installs;
6. the intro expands GRPO as Group Relative Policy Optimization with its paper (arXiv 2402.03300),
   and any page that quotes the wrong expansion "Generalized Reward Policy Optimization" says it
   is wrong;
7. the book works offline: every image, stylesheet and script is a local file that exists in the
   build (no remote ``src`` or ``href``: MathJax, require.js and the Jupyter-widgets embed manager are
   served from ``_static/vendor``, fetched at pinned versions by ``scripts/web_assets.py``), and
   Plotly (if used) is embedded rather than loaded from a CDN. ``tests/test_browser.py`` opens every
   page in Chromium with the network refused.
8. every internal reference resolves: a relative link points at a page (or file) that exists in the
   build and, where it names an anchor, at an element with that id; no Sphinx cross-reference is
   left unresolved (an ``xref`` of the ``std`` domain outside a link, or a ``problematic`` node);
9. every entry of ``book/references.bib`` has a ``url`` or an arXiv ``eprint``, and every entry of
   the rendered references page carries a link, so a reader can find each cited work;
10. the API reference reads as a reference: each documented function's ``Args:`` and ``Returns:`` are
    field lists (not one paragraph), no value is a whole dictionary on one line or the build machine's
    path, no method shows torch's inherited "Should be overridden by all subclasses", and plain-text
    subscripts in the prose (``V(s_t)``) are typeset; every page has one search field.

One test here is *not* marked ``book``: the private list of practitioners' questions the authors work
from is not part of the book, so no notebook, book page or package file may name it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

book = pytest.mark.book

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
PRIVATE_LIST = "READER_" + "QUESTIONS"  # split so that this file does not match its own grep
ERROR_PATTERNS = re.compile(r"Traceback \(most recent call last\)|^\s*[A-Z][A-Za-z]*Error: ", re.M)


@pytest.fixture(scope="session")
def html_dir() -> Path:
    value = os.environ.get("RLTUTOR_BOOK_HTML")
    if not value:
        pytest.fail(
            "RLTUTOR_BOOK_HTML is not set. Build the book first and point the variable at the "
            "HTML, e.g.: bash scripts/book.sh && RLTUTOR_BOOK_HTML=$PWD/_build/html "
            ".venv/bin/pytest -m book tests  (scripts/test.sh does both)"
        )
    path = Path(value)
    if not (path / "index.html").is_file():
        pytest.fail(f"RLTUTOR_BOOK_HTML={value} has no index.html; build the book with bash scripts/book.sh")
    return path


def _toc_docnames() -> list[str]:
    """Docnames listed in _toc.yml, with globs expanded against the source tree."""
    import yaml  # here, not at the top: collecting the non-book tests must not need the book extra

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    names = [toc["root"]]

    def walk(entries):
        for e in entries or []:
            if "file" in e:
                names.append(str(Path(e["file"]).with_suffix("")))
            if "glob" in e:
                for p in sorted(ROOT.glob(e["glob"])):
                    if p.suffix in (".ipynb", ".md") and ".ipynb_checkpoints" not in p.parts:
                        names.append(str(p.relative_to(ROOT).with_suffix("")))
            walk(e.get("sections"))

    for part in toc.get("parts", []):
        walk(part.get("chapters"))
    walk(toc.get("chapters"))
    return names


def _soup(path: Path):
    from bs4 import BeautifulSoup

    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


@pytest.fixture(scope="session")
def pages(html_dir) -> dict[str, object]:
    """Parsed HTML of every page in the toc that was rendered (docname -> soup)."""
    out = {}
    for name in _toc_docnames():
        p = html_dir / f"{name}.html"
        if p.is_file():
            out[name] = _soup(p)
    return out


def _notebook_pages(pages):
    return {n: s for n, s in pages.items() if n.startswith("notebooks/")}


@book
def test_every_toc_page_rendered(html_dir):
    missing = [n for n in _toc_docnames() if not (html_dir / f"{n}.html").is_file()]
    assert not missing, f"pages listed in _toc.yml but not rendered: {missing}"


@book
def test_every_notebook_has_a_page(html_dir):
    assert NOTEBOOKS, "notebooks/ holds no .ipynb"
    missing = [nb.name for nb in NOTEBOOKS if not (html_dir / "notebooks" / f"{nb.stem}.html").is_file()]
    assert not missing, f"notebooks without a rendered page (check the glob in _toc.yml): {missing}"


@book
def test_no_error_output(pages):
    bad = {}
    for name, soup in pages.items():
        if soup.select(".output.traceback, .output.error"):
            bad[name] = "traceback output block"
            continue
        for out in soup.select(".cell_output"):
            text = out.get_text("\n")
            m = ERROR_PATTERNS.search(text)
            if m:
                bad[name] = text[max(0, m.start() - 200) : m.end() + 200]
                break
    assert not bad, f"error output in rendered pages: {bad}"


@book
def test_notebook_pages_are_executed_and_have_figures(html_dir, pages):
    nb_pages = _notebook_pages(pages)
    assert nb_pages, "no notebook pages in the toc"
    for name, soup in nb_pages.items():
        outputs = soup.select(".cell_output")
        assert outputs, f"{name}: no cell outputs; was the notebook executed at build time?"
        figures = [img for o in outputs for img in o.find_all("img")]
        svgs = [s for o in outputs for s in o.find_all("svg")]
        plotly = soup.select("div.plotly-graph-div")
        assert figures or svgs or plotly, f"{name}: no figure (img, svg or plotly) in any cell output"


def _colab_prefix() -> str:
    """Colab's address of a notebook on the main branch of the repository in _config.yml."""
    import yaml

    repo = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]
    path = repo["url"].rstrip("/").removeprefix("https://github.com/")
    return f"https://colab.research.google.com/github/{path}/blob/{repo.get('branch', 'main')}/"


@book
def test_colab_launch_link_on_notebook_pages(pages):
    import json

    import yaml

    colab = _colab_prefix()
    repo = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]
    for name, soup in _notebook_pages(pages).items():
        want = f"{colab}{name}.ipynb"
        hrefs = [a["href"] for a in soup.find_all("a", href=True)]
        assert want in hrefs, f"{name}: no Colab launch link {want}"
        cells = json.loads((ROOT / f"{name}.ipynb").read_text(encoding="utf-8"))["cells"]
        install = "".join(next(c for c in cells if c["cell_type"] == "code")["source"])
        assert f'git+{repo["url"]}@{repo["branch"]}"' in install, (
            f"{name}: the Colab button opens {repo['branch']} but the install cell installs another ref; "
            "run python scripts/sync_home.py"
        )


def _ext():
    """book/_ext/rltutor_offline.py (needs Sphinx, from the book extra)."""
    import importlib.util

    pytest.importorskip("sphinx")
    spec = importlib.util.spec_from_file_location("rltutor_offline", ROOT / "book" / "_ext" / "rltutor_offline.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_api_values_are_short_and_paths_hidden():
    """What the API reference shows as a constant's value (book/_ext: value_summary)."""
    ext = _ext()
    assert ext.value_summary(("quick", "full")) == "('quick', 'full')"
    assert ext.value_summary(ROOT / "rltutor" / "data") is None  # the build machine's folder
    many = {f"estimator_{i}": {"lr": 1e-3, "epochs": i} for i in range(10)}
    shown = ext.value_summary(many)
    assert shown.startswith("{'estimator_0': ..., 'estimator_1': ...") and shown.endswith(", ...}")
    assert len(shown) <= 2 * ext.MAX_VALUE
    assert ext.value_summary(list(range(100))) == "[0, 1, 2, 3, 4, 5, ...]"
    assert ext.value_summary(object()) is None or len(ext.value_summary(object())) <= ext.MAX_VALUE


def test_api_plain_text_subscripts_are_typeset():
    ext = _ext()

    def render(text):
        got = ext._subscripts(text)
        return (
            None
            if got is None
            else "".join(f"_[{n.astext()}]" if n.tagname == "subscript" else n.astext() for n in got)
        )

    assert render("V(s_t) for every step") == "V(s_[t]) for every step"
    assert render("pi_old(a_t | s_t) and delta_{t+1}") == "π_[old](a_[t] | s_[t]) and δ_[t+1]"
    assert render("group_ids, n_embd, max_new_tokens, rltutor.x_y, ratio_t") is None  # identifiers stay


@book
def test_api_reference_reads_as_a_reference(html_dir):
    soup = _soup(html_dir / "book" / "api.html")
    text = soup.get_text(" ")
    assert "Should be overridden by all subclasses" not in text, "a method without a docstring of its own"
    assert "PosixPath(" not in text and str(ROOT) not in text and "/tmp/" not in text, "a build machine's path"
    defs = soup.find_all("dt", class_="sig")
    assert len(defs) > 50, f"only {len(defs)} documented objects: did autodoc import the package?"
    long_values = [
        dt.get_text(" ", strip=True)[:120]
        for dt in defs
        if any(len(v.get_text()) > 200 for v in dt.select("em.property"))
    ]
    assert not long_values, f"values shown whole in a signature: {long_values}"
    run_together = [
        dt.get_text(strip=True)
        for dt in soup.select("dd dl.simple:not(.field-list) > dt")
        if dt.get_text(strip=True) in ("Args:", "Returns:")
    ]
    assert not run_together, f"{len(run_together)} Args/Returns sections rendered as run-on paragraphs (napoleon?)"
    fields = [f.get_text(strip=True) for f in soup.select("dl.field-list > dt")]
    assert "Parameters:" in fields or "Parameters" in fields, "no function has a Parameters field list"
    prose = []
    for dd in soup.find_all("dd"):
        for node in dd.find_all(string=True):
            if node.find_parent(["pre", "code", "sub", "a"]) is None:
                prose.append(str(node))
    raw = sorted(set(re.findall(r"(?<![\w.])[A-Za-z]_t\b", " ".join(prose))))
    assert not raw, f"plain-text subscripts left in the API reference's prose: {raw}"


@book
def test_one_search_field_per_page(pages):
    many = {name: n for name, soup in pages.items() if (n := len(soup.select(".search-button-field"))) != 1}
    assert not many, f"pages with other than one search field (the sidebar's): {many}"


@book
def test_intro_states_grpo_expansion(pages):
    text = " ".join(pages["book/intro"].get_text(" ").split())
    assert "Group Relative Policy Optimization" in text
    assert "2402.03300" in text
    assert "Shao" in text


@book
def test_wrong_grpo_expansion_only_quoted_as_wrong(pages):
    for name, soup in pages.items():
        text = " ".join(soup.get_text(" ").split())
        for m in re.finditer("Generali[sz]ed Reward Policy Optimi[sz]ation", text):
            window = text[max(0, m.start() - 300) : m.end() + 300].lower()
            assert any(w in window for w in ("wrong", "incorrect", "refuted")), (  # refuted: a verdict of ch. 15
                f"{name} expands GRPO as 'Generalized Reward Policy Optimization' without saying it is "
                "wrong; GRPO is Group Relative Policy Optimization (Shao et al. 2024)"
            )


def _local_file(page_dir: Path, url: str) -> Path:
    return (page_dir / unquote(urlsplit(url).path)).resolve()


@book
def test_the_book_needs_no_cdn(html_dir, pages):
    problems = []
    for name, soup in pages.items():
        page_dir = (html_dir / name).parent
        for tag, attr in (("img", "src"), ("script", "src"), ("link", "href")):
            for node in soup.find_all(tag, attrs={attr: True}):
                url = node[attr]
                if tag == "link" and not {"stylesheet", "preload", "modulepreload"} & set(node.get("rel") or []):
                    continue  # a link to another page, not something the page loads
                if url.startswith(("http://", "https://", "//")):
                    problems.append(f"{name}: remote {tag} {url}")
                elif not url.startswith("data:") and not _local_file(page_dir, url).is_file():
                    problems.append(f"{name}: {tag} file missing {url}")
    assert not problems, "\n".join(problems)


@book
def test_web_assets_are_the_pinned_ones(html_dir):
    """MathJax, require.js and the widget manager in the build are those scripts/web_assets.py pins."""
    import importlib.util
    import json

    spec = importlib.util.spec_from_file_location("web_assets", ROOT / "scripts" / "web_assets.py")
    web_assets = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(web_assets)
    built = html_dir / "_static" / "vendor" / "VERSIONS.json"
    assert built.is_file(), f"{built} is missing: the book was built without its web assets"
    pinned = {name: version for name, (version, _, _) in web_assets.PINS.items()}
    assert json.loads(built.read_text()) == pinned, "the build holds other versions than scripts/web_assets.py pins"


@book
def test_no_inline_script_twice(pages):
    """An inline script repeated on a page re-declares its names: a second ``const THEBE_JS_URL`` threw a
    SyntaxError on every page before book/_ext/rltutor_offline.py de-duplicated them."""
    problems = []
    for name, soup in pages.items():
        bodies = [s.get_text() for s in soup.find_all("script", src=False) if not s.get("type")]
        repeated = {b[:80] for b in bodies if b.strip() and bodies.count(b) > 1}
        problems += [f"{name}: {b!r}" for b in sorted(repeated)]
    assert not problems, "inline scripts included twice:\n" + "\n".join(problems)


@book
def test_no_pandas_series_footer(pages):
    """A Series printed or displayed ends in "Name: x, dtype: float64"; the chapters show DataFrames."""
    footer = re.compile(r"^(Name: .*, )?dtype: \w+$", re.M)
    bad = {}
    for name, soup in _notebook_pages(pages).items():
        for out in soup.select(".cell_output"):
            m = footer.search(out.get_text("\n"))
            if m:
                bad[name] = m.group(0)
    assert not bad, f"a pandas Series footer in a cell output (show a DataFrame, e.g. .to_frame()): {bad}"


@book
def test_math_source_is_in_the_page(pages):
    # MathJax typesets in the browser; the TeX must be in the HTML (readable if the CDN is unreachable)
    intro = pages["book/intro"]
    maths = intro.select(".math")
    assert maths, "no math in the intro"
    assert any("\\pi_\\theta" in m.get_text() for m in maths)


@book
def test_citations_resolve(pages):
    intro = pages["book/intro"]
    text = intro.get_text(" ")
    assert "??" not in text
    cites = [a for a in intro.find_all("a", href=True) if "references.html#" in a["href"]]
    assert len(cites) >= 5, "the intro's citations do not link into the references page"


@book
@pytest.mark.parametrize("nb_path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
@book
def test_notebook_conventions(nb_path):
    """Committed without outputs; the first code cell installs rltutor on Colab only (DESIGN.md)."""
    import json

    nb = json.loads(nb_path.read_text(encoding="utf-8"))
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    with_outputs = [i for i, c in enumerate(code) if c.get("outputs") or c.get("execution_count")]
    assert not with_outputs, f"{nb_path.name}: code cells {with_outputs} have outputs; clear them before committing"
    first = "".join(code[0]["source"]) if code else ""
    assert "google.colab" in first and "pip" in first, (
        f"{nb_path.name}: the first code cell must install rltutor when run on Colab (and do nothing elsewhere)"
    )
    # The chapter title comes first: a code cell above it renders above the title in the book.
    top = "".join(nb["cells"][0]["source"])
    assert nb["cells"][0]["cell_type"] == "markdown" and top.startswith("# "), (
        f"{nb_path.name}: the first cell must be the chapter's '# Title' markdown cell, above the install cell"
    )


@book
def test_every_notebook_installs_rltutor_the_same_way():
    import json

    firsts = {
        p.name: "".join(
            next(c for c in json.loads(p.read_text(encoding="utf-8"))["cells"] if c["cell_type"] == "code")["source"]
        )
        for p in NOTEBOOKS
    }
    variants = {}
    for name, src in firsts.items():
        variants.setdefault(src, []).append(name)
    assert len(variants) == 1, f"the notebooks' install cells differ: {list(variants.values())}"


def _anchors(path: Path, cache: dict) -> set[str]:
    if path not in cache:
        soup = _soup(path)
        ids = {t["id"] for t in soup.find_all(id=True)}
        cache[path] = ids | {t["name"] for t in soup.find_all("a", attrs={"name": True})}
    return cache[path]


@book
def test_internal_references_resolve(html_dir, pages):
    anchors: dict = {}
    problems = []
    for name, soup in pages.items():
        page = html_dir / f"{name}.html"
        for a in soup.find_all("a", href=True):
            href = a["href"]
            parts = urlsplit(href)
            if parts.scheme or href.startswith("//"):
                continue  # external (http, https, mailto, javascript): not checked, nothing is fetched
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file():
                problems.append(f"{name}: link to a missing page {href!r} ({a.get_text(' ', strip=True)[:60]!r})")
            elif (
                parts.fragment and target.suffix == ".html" and unquote(parts.fragment) not in _anchors(target, anchors)
            ):
                problems.append(f"{name}: link to a missing anchor {href!r} ({a.get_text(' ', strip=True)[:60]!r})")
        # Sphinx renders an unresolved std-domain reference ({ref}, {doc}, {term}) as an xref outside a
        # link; docutils marks unresolved references and citations as "problematic". (Python-domain
        # roles of rltutor are rendered as plain code on purpose, see nitpick_ignore_regex.)
        for node in soup.select(".xref.std"):
            if node.find_parent("a") is None:
                problems.append(f"{name}: unresolved reference {node.get_text(' ', strip=True)!r}")
        for node in soup.select(".problematic"):
            problems.append(f"{name}: problematic node {node.get_text(' ', strip=True)[:80]!r}")
    assert not problems, "\n".join(problems)


def _bib_entries() -> dict[str, dict[str, str]]:
    """Entries of book/references.bib as {key: {field: value}} (a small parser: enough for this file)."""
    text = (ROOT / "book" / "references.bib").read_text(encoding="utf-8")
    entries = {}
    for m in re.finditer(r"@\w+\s*\{\s*([^,\s]+)\s*,(.*?)\n\}", text, re.S):
        fields = dict((k.lower(), v.strip()) for k, v in re.findall(r"^\s*(\w+)\s*=\s*(.+?),?\s*$", m.group(2), re.M))
        entries[m.group(1)] = fields
    return entries


@book
def test_every_citation_can_be_found(pages):
    entries = _bib_entries()
    assert entries, "no entries parsed from book/references.bib"
    missing = [
        k
        for k, f in entries.items()
        if "url" not in f and not ("eprint" in f and "arxiv" in f.get("archiveprefix", "arxiv").lower())
    ]
    assert not missing, (
        f"bib entries without a url or an arXiv eprint: {missing}; add the address where "
        "a reader finds the work (or its arXiv id)"
    )
    refs = pages["book/references"]
    items = refs.select('[role="doc-biblioentry"], .citation')
    assert items, "the references page lists no entries"
    unlinked = [
        " ".join(i.get_text(" ").split())[:80]
        for i in items
        if not any(a["href"].startswith(("http://", "https://")) for a in i.find_all("a", href=True))
        and "arxiv" not in i.get_text(" ").lower()
    ]
    assert not unlinked, f"rendered references without a link or an arXiv id: {unlinked}"


def test_private_question_list_is_not_cited():
    """The authors' private list of practitioners' questions is not in the book; nothing may point at it."""
    hits = []
    for folder, patterns in (("notebooks", ("*.ipynb",)), ("book", ("*.md", "*.bib")), ("rltutor", ("*.py",))):
        for pattern in patterns:
            for path in sorted((ROOT / folder).rglob(pattern)):
                if ".ipynb_checkpoints" in path.parts:
                    continue
                for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                    if PRIVATE_LIST in line:
                        hits.append(f"{path.relative_to(ROOT)}:{i}")
    assert not hits, (
        f"{PRIVATE_LIST} is a private list, not part of the book; answer the question in "
        f"place instead of pointing at it: {hits}"
    )
