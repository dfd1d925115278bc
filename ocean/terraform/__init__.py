"""puffer_terraform: bulldozers reshape a height map into a target one, one agent row per dozer.

Hills of soil stand on flat ground; the target is flat ground with square plateaus, and the hills hold
exactly the soil the plateaus need. Each step a dozer scoops or dumps one unit on the cell under it, then
moves one cell (not onto a cell more than max_climb higher or lower). A dozer earns reward_per_unit for
each unit its bucket puts right (and pays as much for one it puts wrong); every dozer gets solve_bonus when
the map matches, which ends the episode. Log: score = height error removed, perf = that share of the
error the map started with. The scripted greedy dozers (carry from the highest surplus to the nearest
deficit) are built into the C env: run them with `autopilot=True`.
"""
