"""The lab: the programs that measure and research pufferlib, never part of the library itself.

Benchmarks against peers (bench_*.py, one sitting of them: benchdoc.py, their shared helpers:
benchmark.py), the reproducible baselines (baselines.py) and acceptance runs (acceptance_train.py),
the GPU check (gpu_check.py with gpu_check.sh and gpu_wheels.sh), research programs (research/),
the synthetic envs and sweep tasks they measure with (synthetic_envs.py, synthetic_sweep.py), and the
measurement logs they write (results/). Each program runs as `python -m lab.NAME`; the tables meant
for readers go into docs/benchmarks.md and docs/baselines.md.

The lab imports the product (pufferlib, pufferlib.ocean); the product never imports the lab
(tests/test_layers.py checks it). It is importable because scripts/setup_venv.sh puts scripts/ on the
venv's path with a .pth file; it is not in the wheel.
"""
import os

HERE = os.path.dirname(os.path.abspath(__file__))
# The folder that holds this package: what a peer's interpreter (bench_anchor.py, bench_nmmo.py) needs on
# its path to run a lab module without our venv.
SCRIPTS = os.path.dirname(HERE)
ROOT = os.path.dirname(SCRIPTS)  # the repository, whose docs/ hold the pages the programs write
RESULTS = os.path.join(HERE, 'results')  # the measurement logs, beside the programs that write them
