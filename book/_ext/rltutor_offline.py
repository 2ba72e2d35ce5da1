"""Sphinx extension: the built book works without a network and its pages log no console error.

* ``static/`` beside this file is added to the HTML static path, so ``_static/`` of the built book
  holds ``rltutor.css`` (committed) and ``vendor/`` (MathJax, require.js and the Jupyter-widgets
  embed manager, fetched at pinned versions by ``scripts/web_assets.py``; ``_config.yml`` points
  ``mathjax_path`` and ``nb_ipywidgets_js`` at them). A build without them stops with the command
  that fetches them, instead of writing pages that would ask a CDN.
* Each page's scripts are de-duplicated: sphinx-thebe and sphinx-togglebutton register their inline
  configuration twice (once as ``''``, once as ``None``, which Sphinx does not see as equal), and a
  second ``const THEBE_JS_URL`` is a SyntaxError on every page. With ``launch_buttons.thebe`` off,
  sphinx-thebe's scripts are dropped altogether.
* On pages with widgets, the manager finds its icon fonts in ``_static/vendor`` (not in the page's
  folder) and its MathJax 2 calls reach MathJax 3 (see ``WIDGETS_JS``).
* The pydata theme's colour mode defaults to ``auto`` (unset, its script logs an error on each page).
"""

from __future__ import annotations

from pathlib import Path

from sphinx.errors import ExtensionError

STATIC = Path(__file__).resolve().parent / "static"
VENDOR_FILES = ("vendor/mathjax/tex-mml-chtml.js", "vendor/require.js", "vendor/jupyter-widgets/embed-amd.js")
WIDGET_ASSETS = "vendor/jupyter-widgets/"
FETCH = "python scripts/web_assets.py"

# Runs before require.js and the widget manager on pages with widgets.
# 1. require.js reads a global `require` object as its configuration. embed-amd.js defines its modules
#    under "@jupyter-widgets/html-manager/dist/" and finds its icon fonts beside that module's address,
#    which without a path would be the page's own folder (404s); point it at _static/vendor.
# 2. The widgets typeset their labels with MathJax 2's API (MathJax.Hub.Queue), an uncaught TypeError
#    under the book's MathJax 3: forward those calls to MathJax 3 once it has started (MathJax is
#    deferred, so it is there at DOMContentLoaded, before the manager renders widgets at "load").
WIDGETS_JS = (
    "var require = {paths: {'@jupyter-widgets/html-manager/dist': new URL("
    f"document.documentElement.dataset.content_root + '_static/{WIDGET_ASSETS.rstrip('/')}', document.baseURI).href"
    "}};"
    "document.addEventListener('DOMContentLoaded', function () {"
    " var mj = window.MathJax;"
    " if (mj && mj.startup && !mj.Hub) {"
    "  mj.Hub = {Queue: function (job) {"
    "   var el = job && job[2];"
    "   if (el) mj.startup.promise.then(function () { return mj.typesetPromise([el]); });"
    "  }};"
    " }"
    "});"
)


def _config_inited(app, config) -> None:
    config.html_context.setdefault("default_mode", "auto")  # read by the pydata theme's templates


def _builder_inited(app) -> None:
    if app.builder.format != "html":
        return
    missing = [f for f in VENDOR_FILES if not (STATIC / f).is_file()]
    if missing:
        raise ExtensionError(
            f"the book's web assets are missing ({', '.join(missing)} under {STATIC}); "
            f"fetch them with: {FETCH}  (scripts/setup.sh runs it)"
        )
    app.config.html_static_path.append(str(STATIC))
    app.add_css_file("rltutor.css")


def _thebe_on(app) -> bool:
    launch = app.config.html_theme_options.get("launch_buttons", {}) or {}
    return bool(launch.get("thebe"))


def _page_scripts(app, pagename, templatename, context, doctree) -> None:
    scripts = context.get("script_files")
    if not isinstance(scripts, list):
        return
    drop_thebe = not _thebe_on(app)
    kept, seen = [], set()
    for js in scripts:
        filename = js.filename or ""
        body = js.attributes.get("body", "")
        if drop_thebe and ("sphinx-thebe.js" in filename or "THEBE_JS_URL" in body):
            continue
        key = (filename, js.priority, tuple(sorted(js.attributes.items())))
        if key in seen:
            continue
        seen.add(key)
        kept.append(js)
    scripts[:] = kept
    if any(WIDGET_ASSETS + "embed-amd.js" in (js.filename or "") for js in kept):
        app.builder.add_js_file(None, body=WIDGETS_JS, priority=400)


def setup(app):
    app.connect("config-inited", _config_inited)
    app.connect("builder-inited", _builder_inited)
    app.connect("html-page-context", _page_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
