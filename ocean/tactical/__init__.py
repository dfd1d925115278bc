"""puffer_tactical: a turn-based squad battle on a grid against a built-in opponent.

Two squads of soldiers (melee) and archers (range 4, blocked by walls) start on opposite rows of a
point-symmetric map of ground, walls and water. The agent commands our units one a step: a move of one cell,
then an attack on an enemy in range (`env.action_masks` marks the legal pairs); when all have acted the
built-in opponent plays its turn in the same step. +1 for a win, -1 for a loss, and damage_reward for damage
dealt minus taken. Log: score = enemy units removed, perf = win rate. The scripted rules the opponent plays
(hit the weakest in range, else step toward the nearest enemy) also command our squad with `autopilot=True`.
"""
