#!/usr/bin/env python
"""Import, reset and step once one environment of every third-party family; report which are present.

    python scripts/smoke_envs.py                          # table of every family in pufferlib.environments
    python scripts/smoke_envs.py --expect-extras common   # also fail if a family from those extras is missing
    python scripts/smoke_envs.py --env atari_breakout     # choose the env tried for a family

Runs inside the envs image in CI (scripts/test_containers.sh): the families whose packages the image
bundles must step; families that are not installed are reported as absent (their ImportError names the
pip extra). An env that is installed but needs a file pufferlib never ships (a ROM) is reported as
such, not as a failure (pufferlib/smoke.py tells them apart). Exit status 1 when an env fails, or
when --expect-extras names an extra whose family is absent.
"""
import argparse
import os
import re
import sys
import tomllib

from pufferlib import environments
from pufferlib.smoke import smoke


def expanded_extras(pyproject, extras):
    """`extras` plus every extra they pull in through pufferlib[...] self-references."""
    with open(pyproject, 'rb') as f:
        optional = tomllib.load(f)['project'].get('optional-dependencies', {})
    seen, todo = set(), list(extras)
    while todo:
        extra = todo.pop()
        if extra in seen:
            continue
        seen.add(extra)
        for requirement in optional.get(extra, []):
            inner = re.match(r'pufferlib\[([^\]]*)\]', requirement.strip())
            if inner:
                todo.extend(e.strip() for e in inner.group(1).split(','))
    return seen


def representative(names, chosen):
    for name in chosen:
        if name in names:
            return name
    # The bare family name (e.g. `atari`) usually needs an argument; prefer a concrete env.
    concrete = [name for name in names if '_' in name] or names
    return concrete[0]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--env', action='append', default=[], help='env to try for its family (repeatable)')
    parser.add_argument('--expect-extras', default='', help='comma-separated pyproject extras the image bundles')
    parser.add_argument('--pyproject', default=os.path.join(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))), 'pyproject.toml'))
    args = parser.parse_args(argv)
    expected = set()
    if args.expect_extras:
        expected = expanded_extras(args.pyproject, [e for e in args.expect_extras.split(',') if e])

    families = list(environments.FAMILIES)
    if not families:
        print('smoke_envs: pufferlib.environments defines no third-party families yet; nothing to step')
        return 0
    failures, rows = [], []
    for family in families:
        names = environments.module(family).env_names()
        name = representative(names, args.env)
        status, extra, detail = smoke(name)
        if status == 'absent' and extra in expected:
            status = 'FAILED'
            detail = f'the image should bundle pufferlib[{extra}] ({args.expect_extras}), but: {detail}'
        rows.append((family, name, status, detail))
        print(f'{family:<16} {name:<28} {status:<10} {detail}', flush=True)
        if status == 'FAILED':
            failures.append(family)
    present = [family for family, _, status, _ in rows if status in ('stepped', 'needs file')]
    absent = [family for family, _, status, _ in rows if status == 'absent']
    print(f'\nsmoke_envs: {len(present)} of {len(rows)} families present ({", ".join(present) or "none"}); '
          f'absent: {", ".join(absent) or "none"}; failed: {", ".join(failures) or "none"}')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
