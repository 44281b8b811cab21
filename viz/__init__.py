"""Figures, animations and a live dashboard of geosim runs.

``viz`` imports :mod:`geosim`; :mod:`geosim` never imports ``viz``.
"""
