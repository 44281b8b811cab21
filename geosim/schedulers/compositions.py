"""The registered compositions of a placement and a redundancy rule (003 §6.1 baselines).

One line per registered name; the parts live in their own modules and
:mod:`geosim.schedulers.compose` explains how a composite decides.
"""

from __future__ import annotations

from geosim.schedulers.compose import NoRedundancy, composite
from geosim.schedulers.flutter import Flutter
from geosim.schedulers.iridium import Iridium

composite("flutter", Flutter, NoRedundancy,
          "Flutter (INFOCOM 2016): per stage, tasks placed to lexicographically minimise "
          "finish estimates; no speculation")
composite("iridium", Iridium, NoRedundancy,
          "Iridium (SIGCOMM 2015): map tasks at their data, reduce tasks spread to minimise "
          "the slowest shuffle upload or download; no speculation")
