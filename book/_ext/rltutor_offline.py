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
* One search box per page: pydata-sphinx-theme 0.16+ puts a search field into a top bar of its own unless
  ``navbar_persistent`` is set, beside the book theme's field in the sidebar; it is set empty here, so
  the sidebar's field remains (and, on a narrow screen, the article header's search button).
* The API reference (``book/api.md``) shows values that help a reader and nothing else: a module-level
  dictionary or long list is shown as its first keys (``{'gae': ..., 'grpo': ..., ...}``) instead of its
  whole repr on one line; a path (``DATA_DIR``) is not shown (it would print the build machine's
  folder); a dataclass with many fields gets the signature ``(**fields)``, its fields being documented
  one by one below it. Google-style sections (``Args:``, ``Returns:``) are read by napoleon in the
  docstrings of modules, classes and functions, not in the one-line docstring under a dataclass field or
  constant: napoleon would take the words before a colon there for a type (``Config.env_options``).
  The docstrings write maths in plain text (``V(s_t)``, ``pi_old``, ``delta_t``); in their prose, outside
  code, such a subscript is typeset as one (``V(s<sub>t</sub>)``, Greek names as letters: ``π<sub>old</sub>``).
* The notebooks' kernels talk to the build over CurveZMQ-encrypted TCP: unencrypted, each kernel logs
  "Kernel is running over TCP without encryption" (ipykernel 7.4), one warning per notebook per build.
  jupyter_client 8.10 provisions Curve keys for a kernel whose kernelspec declares
  ``supported_encryption: curve`` (ipykernel's does) when the manager's ``transport_encryption`` is
  ``"auto"``; myst-nb passes no settings to the kernel manager it creates (jupyter_cache's
  ``single_nb_execution``), so that trait's default is set for this process. A kernel without Curve
  support still starts, unencrypted (and warns). The IPC transport would also silence it, but its socket
  paths are relative to the process's folder while each kernel runs in its notebook's: it hangs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path, PurePath

from docutils import nodes
from sphinx import addnodes
from sphinx.errors import ExtensionError
from sphinx.ext.autodoc import AttributeDocumenter, DataDocumenter
from sphinx.util.inspect import object_description

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


def _encrypted_kernels() -> None:
    """Every kernel this build starts gets manager-provisioned Curve keys where it supports them (see the
    module docstring)."""
    try:
        import zmq
        from jupyter_client.manager import KernelManager
    except ImportError:  # no notebooks to execute without them
        return
    trait = KernelManager.class_traits().get("transport_encryption")
    if trait is not None and zmq.has("curve"):  # jupyter_client >= 8.10, libzmq built with libsodium
        trait.default_value = "auto"


def _config_inited(app, config) -> None:
    config.html_context.setdefault("default_mode", "auto")  # read by the pydata theme's templates
    config.html_theme_options.setdefault("navbar_persistent", [])  # one search box (the sidebar's)


MAX_VALUE = 80  # characters of a value's repr shown in full
SHOWN_KEYS = 6
MAX_SIGNATURE = 200  # characters of a dataclass's signature shown in full


def value_summary(obj) -> str | None:
    """What the API reference shows as ``obj``'s value: its repr when short, a mapping's or sequence's first
    entries when not, nothing (None) for a path or anything else long."""
    if isinstance(obj, PurePath):
        return None
    full = object_description(obj)
    if len(full) <= MAX_VALUE and "\n" not in full:
        return full
    if isinstance(obj, Mapping):
        items = [f"{object_description(k)}: ..." for k in list(obj)[:SHOWN_KEYS]]
        text = "{" + ", ".join(items) + (", ..." if len(obj) > SHOWN_KEYS else "") + "}"
    elif isinstance(obj, (list, tuple)):
        items = [object_description(v) for v in obj[:SHOWN_KEYS]]
        brackets = "[]" if isinstance(obj, list) else "()"
        text = brackets[0] + ", ".join(items) + (", ..." if len(obj) > SHOWN_KEYS else "") + brackets[1]
    else:
        return None
    return text if len(text) <= 2 * MAX_VALUE else None


class _ShortValue:
    """Mixed into autodoc's data and attribute documenters: :func:`value_summary` instead of the repr."""

    def should_suppress_value_header(self) -> bool:
        return True  # autodoc's own ``:value:`` line (the whole repr) is never written; ours below is

    def add_directive_header(self, sig: str) -> None:
        super().add_directive_header(sig)
        if self.options.no_value or super().should_suppress_value_header():
            return
        try:
            shown = value_summary(self.object)
        except Exception:  # an object whose repr fails shows no value, as autodoc does
            shown = None
        if shown is not None:
            self.add_line("   :value: " + shown, self.get_sourcename())


class ShortDataDocumenter(_ShortValue, DataDocumenter):
    pass


class ShortAttributeDocumenter(_ShortValue, AttributeDocumenter):
    pass


def _short_signature(app, what, name, obj, options, signature, return_annotation):
    """A dataclass with a long signature: ``(**fields)`` (each field is documented below the class)."""
    import dataclasses

    if what == "class" and dataclasses.is_dataclass(obj) and signature and len(signature) > MAX_SIGNATURE:
        return "(**fields)", return_annotation
    return None


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


GREEK = {
    "alpha": "α",
    "beta": "β",
    "gamma": "γ",
    "delta": "δ",
    "eps": "ε",
    "epsilon": "ε",
    "theta": "θ",
    "lam": "λ",
    "lambda": "λ",
    "mu": "μ",
    "pi": "π",
    "rho": "ρ",
    "sigma": "σ",
}
# ``x_t``, ``V(s_t)``, ``A_t'``, ``pi_old``, ``delta_{t+1}``: a one-letter or Greek base, then one letter or
# digit, a short known word or a braced group; never inside a longer identifier (``group_ids``, ``n_embd``).
SUBSCRIPT = re.compile(
    r"(?<![\w.])(?P<base>[A-Za-z]|" + "|".join(sorted(GREEK, key=len, reverse=True)) + r")"
    r"_(?P<sub>\{[^{}\s]{1,12}\}|(?:old|new|ref|theta|max|min|[A-Za-z0-9])'?)(?![\w{])"
)
_LITERAL = (nodes.FixedTextElement, nodes.literal, nodes.math, nodes.reference, addnodes.desc_signature)


def _subscripts(text: str) -> list[nodes.Node] | None:
    """``text`` with each plain-text subscript as a subscript node, or None when it has none."""
    out, last = [], 0
    for m in SUBSCRIPT.finditer(text):
        out.append(nodes.Text(text[last : m.start()] + GREEK.get(m["base"], m["base"])))
        sub = m["sub"].strip("{}")
        out.append(nodes.subscript(sub, GREEK.get(sub, sub)))
        last = m.end()
    if not out:
        return None
    out.append(nodes.Text(text[last:]))
    return out


def _typeset_subscripts(app, doctree) -> None:
    for content in doctree.findall(addnodes.desc_content):
        for text in list(content.findall(nodes.Text)):
            parent = text.parent
            if parent is None or any(isinstance(p, _LITERAL) for p in _ancestors(parent)):
                continue
            new = _subscripts(text.astext())
            if new is not None:
                parent.replace(text, new)


def _ancestors(node):
    while node is not None:
        yield node
        node = node.parent


def _napoleon_except_attributes(app) -> None:
    """Keep napoleon's docstring processing off attributes and module data (see the module docstring)."""
    from sphinx.ext import napoleon

    def process(app, what, name, obj, options, lines):
        if what not in ("attribute", "data", "property"):
            napoleon._process_docstring(app, what, name, obj, options, lines)

    for listener in list(app.events.listeners["autodoc-process-docstring"]):
        if listener.handler is napoleon._process_docstring:
            app.disconnect(listener.id)
            app.connect("autodoc-process-docstring", process, priority=listener.priority)


def setup(app):
    _encrypted_kernels()
    app.setup_extension("sphinx.ext.autodoc")
    app.setup_extension("sphinx.ext.napoleon")
    _napoleon_except_attributes(app)
    app.add_autodocumenter(ShortDataDocumenter, override=True)
    app.add_autodocumenter(ShortAttributeDocumenter, override=True)
    app.connect("autodoc-process-signature", _short_signature)
    app.connect("doctree-read", _typeset_subscripts)
    app.connect("config-inited", _config_inited)
    app.connect("builder-inited", _builder_inited)
    app.connect("html-page-context", _page_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
