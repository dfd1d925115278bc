"""A trial subprocess: `python -m pufferlib.sweep RUN_DIR` (started by pufferlib.sweep.trials.run_trial)."""
import sys

from pufferlib.sweep.trials import trial_main

sys.exit(trial_main(sys.argv[1]))
