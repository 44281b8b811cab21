"""The columns of a run's cluster and link time series, defined once.

The model's recorder reporters (:class:`~geosim.model.GeoModel`), the samples of the
compiled pool loop (:mod:`geosim.poolsim`) and the result tables
(:func:`~geosim.results.build_result`) all take their columns, their order and their
types from here, so the two ways a run advances record the same table.

Every series starts with ``time`` (the sample's simulated instant) and an index column
(the cluster or the link); the readings follow, one value per cluster or link.
"""

from __future__ import annotations

import numpy as np

#: Index column of the cluster series.
CLUSTER_INDEX = "cluster"
#: Cluster time series, per sample and cluster, in table order: reachability, slots,
#: slots in an available period, busy slot shares, running copies, queued ready tasks
#: whose data is there, egress and ingress (MB/s, averaged since the last sample).
CLUSTER_SERIES: dict[str, type] = {
    "time": np.float64, CLUSTER_INDEX: np.int64, "reachable": np.bool_, "slots": np.int64,
    "available_slots": np.int64, "busy": np.float64, "copies": np.int64, "queue": np.int64,
    "egress_mbps": np.float64, "ingress_mbps": np.float64,
}
#: Index column of the link series.
LINK_INDEX = "link"
#: WAN link time series, per sample and link, in table order: end clusters ``u < v``,
#: bandwidth (MB/s, at the sample) and traffic ``u→v`` and ``v→u`` (MB/s, averaged since
#: the last sample).
LINK_SERIES: dict[str, type] = {
    "time": np.float64, LINK_INDEX: np.int64, "u": np.int64, "v": np.int64,
    "bandwidth": np.float64, "forward_mbps": np.float64, "backward_mbps": np.float64,
}


def readings(series: dict[str, type]) -> tuple[str, ...]:
    """The reading columns of ``series``: all but ``time`` and the index column."""
    return tuple(series)[2:]
