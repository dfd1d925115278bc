#!/usr/bin/env python
"""The Ocean catalogue and option reference in docs/ocean.md, generated from the env folders' spec.toml.

    python scripts/ocean_docs.py           rewrite the two generated sections of docs/ocean.md
    python scripts/ocean_docs.py --check   exit 1 if they are out of date (tests/test_ocean_spec.py runs this)

Envs are found by scanning ocean/ (ocean/spec.py `discover`), so a new env folder shows up here
without touching this file. Only the text between the <!-- ocean-catalogue --> and
<!-- ocean-options --> markers is written; the rest of docs/ocean.md is prose.
"""
import argparse
import os
import sys

from pufferlib.benchmark import update_section

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, 'docs', 'ocean.md')
SECTIONS = {'ocean-catalogue': 'The suite', 'ocean-options': 'Every option'}


def _size(exprs):
    return ', '.join(e.text for e in exprs)


def _actions(spec):
    text = f'Discrete({spec.action_n.text})' if spec.action_n is not None else \
        f'MultiDiscrete [{_size(spec.action_nvec)}]'
    return text + (', masked' if spec.action_mask else '')


def catalogue(specs, scripted):
    """The table of every listed env: name, summary, agents, spaces, scripted agents."""
    rows = ['| env | what it checks / what it is | agents per env | obs | actions | scripted |',
            '|---|---|---|---|---|---|']
    for s in specs.values():
        if s.group == 'template':
            continue
        obs = f'{s.obs_dtype} [{_size(s.obs_shape)}]'
        rows.append(f'| `{s.env_name}` | {s.summary} | {s.agents.text} | {obs} | {_actions(s)} | '
                    f'{", ".join(scripted.get(s.name, [])) or "-"} |')
    return '\n'.join(rows)


def options(specs):
    """Per env: every option with default, range and meaning, the cross-option checks, the row layout."""
    out = []
    for s in specs.values():
        if s.group == 'template':
            continue
        out.append(f'### {s.env_name}\n')
        if s.options:
            out.append('| option | default | range | meaning |')
            out.append('|---|---|---|---|')
            for o in s.options.values():
                rng = '-' if o.kind == 'bool' else f'[{o.min.describe()}, {o.max.describe()}]'
                out.append(f'| `{o.name}` | {o.default!r} | {rng} | {o.help} |')
        else:
            out.append('No options.')
        for expr, message in s.checks:
            out.append(f'\nCheck: `{expr.text}` ({message}).')
        fields = [f'{name}{"" if size.text == "1" else f" [{size.text}]"} in [{low:g}, {high:g}]'
                  + (f' ({text})' if text else '') for name, size, low, high, text in s.obs_segments if name]
        obs = ' '.join(part for part in (s.obs_help, f'Fields: {"; ".join(fields)}.' if fields else '') if part)
        out.append(f'\nObservation: {s.obs_dtype} [{_size(s.obs_shape)}]: {obs}')
        out.append(f'Actions: {_actions(s)}: {s.action_help}\n')
    return '\n'.join(out).rstrip('\n')


def render(specs, scripted):
    return {'ocean-catalogue': catalogue(specs, scripted), 'ocean-options': options(specs)}


def current(name, doc):
    start, end = f'<!-- {name}:start -->', f'<!-- {name}:end -->'
    if start not in doc or end not in doc:
        return None
    return doc.split(start, 1)[1].split(end, 1)[0].strip('\n')


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--check', action='store_true', help='only check that docs/ocean.md is up to date')
    args = parser.parse_args(argv)
    from pufferlib import ocean
    scripted = {name: list(ocean.scripted_policies(name)) for name in ocean.ENVS}
    sections = render(ocean.SPECS, scripted)
    doc = open(DOC).read()
    stale = [name for name, text in sections.items() if current(name, doc) != text]
    if args.check:
        if stale:
            print(f'docs/ocean.md is out of date ({", ".join(stale)}): run python scripts/ocean_docs.py')
            return 1
        return 0
    for name, text in sections.items():
        update_section(name, SECTIONS[name], text, path=DOC)
    print(f'wrote {os.path.relpath(DOC, ROOT)}' if stale else 'docs/ocean.md was up to date')
    return 0


if __name__ == '__main__':
    sys.exit(main())
