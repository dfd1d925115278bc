"""puffer_pacman: the arcade's first maze, its 244 pellets and four ghosts with their classic rules.

Log: score = arcade points, perf = 1 when the maze was cleared (the learning target: perf >= 0.5).
The scripted baseline (head for the nearest pellet, step away from a hunting ghost within 3 tiles) is
built into the C env: run it with `autopilot=True`.
"""
