"""What a comparison needs of one run: its label, seed, summary and jobs table."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd


@dataclass(frozen=True)
class RunOutcome:
    """What the comparison needs of one run.

    Attributes:
        label: The scheduler's label.
        seed: The run's seed.
        summary: The run's summary (JSON values; missing numbers are NaN).
        jobs: The run's jobs table, columns :data:`~geosim.experiment.store.JOB_COLUMNS`.
    """

    label: str
    seed: int
    summary: dict[str, Any]
    jobs: pd.DataFrame
