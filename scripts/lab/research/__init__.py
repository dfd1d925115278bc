"""Research programs of the lab: one question each, run as `python -m lab.research.NAME` (README.md)."""
