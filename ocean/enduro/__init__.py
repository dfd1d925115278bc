"""puffer_enduro: an Atari Enduro-like racer: pass cars through day, snow, night and fog.

A day is day_length steps; missing cars_per_day cars ends the race (terminal); max_days truncates.
Log: score = cars passed (net) per episode, perf = days completed / max_days. The scripted baseline
(full throttle, steer for the clearest lane, brake behind a close car) is built into the C env: run
it with `autopilot=True`.
"""
