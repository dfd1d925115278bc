"""puffer_freeway: Atari Freeway: a chicken crosses ten lanes of traffic as often as it can in 2:16.

One row per chicken (two_chickens: two rows, one road). A game lasts game_frames frames (terminal).
Log: score = crossings per game, perf = crossings / those of a chicken that never waits and is never hit.
The scripted baseline (walk up unless a car in the lane ahead is close) is built into the C env: run
it with `autopilot=True`.
"""
