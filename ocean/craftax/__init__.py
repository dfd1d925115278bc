"""puffer_craftax: the "classic" Crafter game (Hafner 2021) in C, checked against the crafter package.

A 64x64 world generated from the seed at every reset; 17 actions; health, food, drink and energy; day and
night; cows, zombies, skeletons and their arrows; a crafting table and a furnace; saplings that ripen.
Reward as Crafter's: +1 on a step that first unlocks one of the 22 achievements in the episode, plus a
tenth of the change in health; the episode ends at death or after max_steps (10,000). The observation is
symbolic: the 9x7 cells round the player one-hot over materials and objects, the inventory, the facing,
sleep and daylight. Log: score = achievements unlocked in the episode, perf = that over 22, and one field
per achievement (its unlock rate), from which `crafter_score` computes the Crafter score. The scripted
baseline is built into the C env: run it with `autopilot=True`.
"""

import math
from collections.abc import Mapping

ACHIEVEMENTS = (
    'collect_coal', 'collect_diamond', 'collect_drink', 'collect_iron', 'collect_sapling', 'collect_stone',
    'collect_wood', 'defeat_skeleton', 'defeat_zombie', 'eat_cow', 'eat_plant', 'make_iron_pickaxe',
    'make_iron_sword', 'make_stone_pickaxe', 'make_stone_sword', 'make_wood_pickaxe', 'make_wood_sword',
    'place_furnace', 'place_plant', 'place_stone', 'place_table', 'wake_up',
)


def crafter_score(rates: Mapping[str, float]) -> float:
    """The Crafter paper's score from the 22 unlock rates (fractions 0..1, as the log gives them):
    S = exp(mean(ln(1 + s_i))) - 1 with s_i in percent, itself in percent."""
    missing = [name for name in ACHIEVEMENTS if name not in rates]
    if missing:
        raise ValueError(f'crafter_score needs the unlock rate of all 22 achievements; missing {missing}')
    logs = [math.log(1.0 + 100.0 * float(rates[name])) for name in ACHIEVEMENTS]
    return math.exp(sum(logs) / len(logs)) - 1.0
