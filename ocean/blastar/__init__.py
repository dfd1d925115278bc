"""puffer_blastar: an Atari-style shooter: shoot down waves of enemy ships while dodging their bombs.

Clearing max_waves waves wins (terminal), losing every ship loses (terminal). Log: score = enemies
shot down, perf = waves cleared / max_waves. The scripted baseline (fire at an enemy overhead, else
fly under the nearest one; it never dodges) is built into the C env: run it with `autopilot=True`.
"""
