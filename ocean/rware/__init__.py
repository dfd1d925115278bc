"""puffer_rware: the multi-robot warehouse (RWARE, Papoudakis et al. 2021).

The defaults are the paper's tiny 10x11 warehouse with 4 robots and 4 open requests. Log (one entry
per warehouse episode): score = deliveries per robot, perf = score / (max_steps / 50). The scripted
baseline (each robot steps greedily toward its job) is built into the C env: run it with `autopilot=1`.
"""
