"""The registered compositions of a placement and a redundancy rule (003 §6.1 baselines).

One line per registered name; the parts live in their own modules and
:mod:`geosim.schedulers.compose` explains how a composite decides.
"""

from __future__ import annotations

from geosim.schedulers.compose import Locality, NoRedundancy, composite
from geosim.schedulers.dolly import Dolly
from geosim.schedulers.flutter import Flutter
from geosim.schedulers.iridium import Iridium
from geosim.schedulers.late import LATE
from geosim.schedulers.mantri import Mantri
from geosim.schedulers.spark import DelayScheduling, SparkSpeculation

composite("flutter", Flutter, NoRedundancy,
          "Flutter (INFOCOM 2016): per stage, tasks placed to lexicographically minimise "
          "finish estimates; no speculation")
composite("iridium", Iridium, NoRedundancy,
          "Iridium (SIGCOMM 2015): map tasks at their data, reduce tasks spread to minimise "
          "the slowest shuffle upload or download; no speculation")
composite("dolly", Locality, Dolly,
          "Dolly (NSDI 2013): small jobs cloned within a 5% slot budget, locality placement")
composite("flutter+dolly", Flutter, Dolly,
          "Flutter's placement with Dolly's budgeted cloning of small jobs")
composite("spark", DelayScheduling, NoRedundancy,
          "Spark's default: fair sharing among jobs, delay scheduling (3 s locality wait)",
          order="fair")
composite("spark+speculation", DelayScheduling, SparkSpeculation,
          "Spark with speculation: fair sharing, delay scheduling, a copy of tasks slower "
          "than 1.5x their stage's median once 75% of it finished", order="fair")
composite("mantri", Locality, Mantri,
          "Mantri (OSDI 2010): restart or duplicate outliers when t_rem beats t_new")
composite("late", Locality, LATE,
          "LATE (OSDI 2008): back up the slow tasks with the longest time left, 10% cap")
composite("flutter+mantri", Flutter, Mantri,
          "Flutter's placement with Mantri's restarts and duplicates (003 §6.1's baseline)")
composite("flutter+late", Flutter, LATE, "Flutter's placement with LATE's speculation")
