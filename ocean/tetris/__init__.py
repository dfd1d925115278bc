"""puffer_tetris: Tetris with a 7-bag, a preview of upcoming pieces, hold and gravity.

Reward +1 per cleared line, +piece_reward per piece placed, -hole_penalty per hole a placement makes
(refunded when the hole is opened again), -1 for topping out. Log: score = lines cleared in the
episode, perf = fraction of max_ticks survived. The scripted baseline (a greedy one-piece placer) is
built into the C env: run it with `autopilot=True` (`puffer play puffer_tetris autopilot=True`).
"""
