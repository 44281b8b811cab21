"""PingAn: insuring task copies across clusters (003 §4.1, Algorithm 1).

The scheduler (:class:`~geosim.schedulers.pingan.policy.PingAn`, registered as
``pingan``) is in :mod:`~geosim.schedulers.pingan.policy`; its compiled kernels are split
by what they do: :mod:`~geosim.schedulers.pingan.admission` (which jobs and tasks a step
considers), :mod:`~geosim.schedulers.pingan.candidates` (candidate clusters and the
expected rate of a copy on each, with the row cache kept between model refreshes),
:mod:`~geosim.schedulers.pingan.reservations` (gate reservations and the serving of a
task), :mod:`~geosim.schedulers.pingan.rounds` (the rounds of insurance) and
:mod:`~geosim.schedulers.pingan.kernels` (small helpers they share).
"""

from geosim.schedulers.pingan.policy import ALLOCATIONS, PRINCIPLES, PingAn

__all__ = ["ALLOCATIONS", "PRINCIPLES", "PingAn"]
