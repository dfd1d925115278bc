"""Does one env work on this install: make it, reset it, step it once. scripts/smoke_envs.py (the
container check) asks this of one env of every third-party family.

A missing extra is "absent" (the error names the pip extra); a file pufferlib never ships (a ROM)
is "needs file"; anything else fails, an import that breaks for another reason included: a broken
image once passed as nine absent families.
"""
import re
import time

import pufferlib

# Files a user must bring (pufferlib never downloads them); a make() that asks for one is "needs file".
NEEDS_FILE = re.compile(r'\brom\b|rom_path|ROM', re.IGNORECASE)
# The extra in an install hint: `pufferlib[atari]`, or `-e ".[atari]"` as the bindings' own errors say
# (pufferlib.environments._support.require).
EXTRA = re.compile(r'(?:pufferlib|\.)\[(\w+)\]')


def smoke(name: str) -> tuple[str, str, str]:
    """(status, extra, detail) for one env: status is stepped / absent / needs file / FAILED; extra is the
    missing pip extra of an absent env."""
    start = time.perf_counter()
    try:
        env = pufferlib.make(name)
    except ImportError as exc:
        extra = EXTRA.search(str(exc))
        if not extra:  # not a missing extra (those name theirs) but a broken import: a failure
            return 'FAILED', '', f'import: {type(exc).__name__}: {exc}'
        return 'absent', extra.group(1), str(exc).split('. Install')[0]
    except pufferlib.PufferError as exc:
        if NEEDS_FILE.search(str(exc)):
            return 'needs file', '', str(exc)
        return 'FAILED', '', f'{type(exc).__name__}: {exc}'
    except Exception as exc:  # noqa: BLE001 - report every failure, keep going through the families
        return 'FAILED', '', f'make: {type(exc).__name__}: {exc}'
    try:
        env.reset(seed=0)
        env.step(env.action_space.sample())
        shape = env.observations.shape
    except Exception as exc:  # noqa: BLE001
        return 'FAILED', '', f'reset/step: {type(exc).__name__}: {exc}'
    finally:
        env.close()
    return 'stepped', '', f'obs {shape}, {time.perf_counter() - start:.1f} s'
