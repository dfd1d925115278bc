"""puffer_maze: a procedurally generated maze per episode, an 11x11 view, reward only at the goal.

Bumping a wall does nothing. Reward 1 at the goal, which ends the episode; truncated after max_steps.
width and height are odd and include the outer wall.
"""
