"""Views: plots, widgets and the static explorer. They read the records that labs return and never train.

* :mod:`rltutor.views.plots` -- the book's plotting style, mean curves with confidence bands;
* :mod:`rltutor.views.curves` -- one run's learning curve (``rltutor train``'s plot), with a toolshell run's
  honest solve and hack rates;
* :mod:`rltutor.views.widgets` -- the live variance-vs-horizon explorer (ipywidgets);
* :mod:`rltutor.views.explorer_html` -- the kernel-free explorer as HTML and JavaScript;
* :mod:`rltutor.views.source` -- the package's own source, shown on the book's pages;
* :mod:`rltutor.views.tables` -- numbers in tables, computed sentences that wrap.
"""
