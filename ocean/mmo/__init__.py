"""puffer_mmo: a Neural-MMO-like world (ocean/mmo/mmo.h holds the rules, docs/ocean.md the layout).

The scripted forager/fighter is built into the C env, like rware's: `autopilot=True` makes every
agent drink, eat, flee hostile NPCs when hurt, fight NPCs with the style that beats their stance and
pick up drops, reading only its own observation and action mask. `puffer play puffer_mmo
autopilot=True` shows it; its lives are scored by the same episode log as a trained policy's.

The observation is one flat uint8 row; `layout()` gives the slices of its parts, which the policy in
ocean/mmo/policy.py and the tests use.
"""
VIEW = 5             # spec.toml: MM_VIEW
SIDE = 2 * VIEW + 1
CROP = SIDE * SIDE
ENTS = 8             # MM_ENTS
EFEAT = 8            # MM_EFEAT
SELF = 18            # MM_SELF
NVEC = (5, 4, ENTS, 3)
TERRAINS = 7         # 0 off the map, grass, forest, harvested forest, water, stone, lava
THINGS = 6           # 0 nothing, agent, passive, neutral, hostile, item
RANGE = (0, 1, 3, 2)  # by style: none, melee, range, magic


def layout() -> dict[str, slice]:
    """The parts of an observation row: terrain and things crops, entity rows, own state."""
    at = 0
    out = {}
    for name, size in (('terrain', CROP), ('things', CROP), ('entities', ENTS * EFEAT), ('self', SELF)):
        out[name] = slice(at, at + size)
        at += size
    return out
