"""puffer_snake: many snakes, one arena; each snake is an agent.

+1 per food (the snake grows up to max_length), -1 for hitting a wall or a snake, which ends that
snake's episode and respawns it; a life is truncated after max_steps.
"""
