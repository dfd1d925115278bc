"""puffer_asteroids: the arcade game in a wrap-around field, one ship, discrete buttons.

The ship turns, thrusts and fires; a shot splits a large rock into two medium ones and a medium one into
two small ones, and destroys a small one (+1 per rock hit); a rock that touches the ship costs a life.
Clearing the field brings the next, larger wave. Log: score = rocks hit, perf = the share of max_steps
the ships lasted. The scripted baseline (turn to the nearest rock's lead point and fire; never thrust)
is built into the C env: run it with `autopilot=True`.
"""
