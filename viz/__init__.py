"""Figures and animations of geosim results.

``viz`` reads what ``geosim run`` and ``geosim compare`` saved and never simulates again:
:mod:`viz.figures` draws one figure per function, :mod:`viz.animation` renders the
topology map over time, and :mod:`viz.commands` adds ``geosim plot`` and ``geosim
animate``. ``viz`` imports ``geosim``; ``geosim`` never imports ``viz``.
"""
