"""``asmevo serve``: a read-only live web dashboard over run and ablation directories.

Layers: :mod:`snapshot` (private copies of an archive, so serving changes no byte),
:mod:`views` and :mod:`listing` (JSON-ready values from one archive), :mod:`app`
(Flask routes and the page), :mod:`command` (the CLI entry).
"""
