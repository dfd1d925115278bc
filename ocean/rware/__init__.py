"""puffer_rware: the multi-robot warehouse (RWARE, Papoudakis et al. 2021).

The defaults are the paper's tiny 10x11 warehouse with 4 robots and 4 open requests. Log (one entry
per warehouse episode): score = deliveries per robot, perf = score / (max_steps / 25), at most 1.
The scripted baseline (each robot follows a shortest path to its job, waiting for or giving way to the others) is
built into the C env: run it with `autopilot=True`.
"""
