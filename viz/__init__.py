"""Figures, animations and a live dashboard of geosim runs.

``viz`` reads what ``geosim run`` and ``geosim compare`` saved and never simulates again:
:mod:`viz.figures` draws one figure per function, :mod:`viz.animation` renders the
topology map over time, and :mod:`viz.commands` adds ``geosim plot`` and ``geosim
animate``. :mod:`viz.dashboard` adds ``geosim dashboard``, a live Solara page of a Mesa
model of a running simulation. ``viz`` imports ``geosim``; ``geosim`` never imports ``viz``.
"""
