"""The registered compositions of a placement and a redundancy rule (003 §6.1 baselines).

One line per registered name; the parts live in their own modules and
:mod:`geosim.schedulers.compose` explains how a composite decides.
"""

from __future__ import annotations
