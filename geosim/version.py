"""The version of geosim (read by the package and by what records a run)."""

__version__ = "0.1.0"
