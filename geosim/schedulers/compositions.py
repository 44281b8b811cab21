"""The registered compositions of a placement and a redundancy rule (003 §6.1 baselines).

One line per registered name; the parts live in their own modules and
:mod:`geosim.schedulers.compose` explains how a composite decides.
"""

from __future__ import annotations

from geosim.schedulers.compose import Locality, NoRedundancy, composite
from geosim.schedulers.dolly import Dolly
from geosim.schedulers.spark import DelayScheduling, SparkSpeculation

composite("dolly", Locality, Dolly,
          "Dolly (NSDI 2013): small jobs cloned within a 5% slot budget, locality placement")
composite("spark", DelayScheduling, NoRedundancy,
          "Spark's default: fair sharing among jobs, delay scheduling (3 s locality wait)",
          order="fair")
composite("spark+speculation", DelayScheduling, SparkSpeculation,
          "Spark with speculation: fair sharing, delay scheduling, a copy of tasks slower "
          "than 1.5x their stage's median once 75% of it finished", order="fair")
