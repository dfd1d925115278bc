"""puffer_boids: flocking on a torus, one agent row per boid, Box actions.

Each boid observes its own velocity and the offsets and relative velocities of its `neighbors` nearest
neighbours, and steers with an acceleration. Its reward is the classic three rules of Reynolds' boids as
penalties over the neighbours in sight (cohesion, alignment, separation); perf is the share of steps it
spends in a flock. The scripted baseline, Reynolds' steering rules on the same neighbours, is built into
the C env: run it with `autopilot=True`.
"""
