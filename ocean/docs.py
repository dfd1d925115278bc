"""The generated sections of docs/ocean.md: the catalogue of every listed env and the option reference,
written from the parsed spec.toml files (scripts/ocean_docs.py puts them into the page).

They live beside the specs so that anything that reads specs (the docs script, a test with a scratch
env folder) renders the same text; none of it names an env. The reader and writer of a marked section
of a markdown page (`section`, `update_section`) are here too: the one place that knows the markers,
used by scripts/ocean_docs.py and by the lab's programs for the pages they write.
"""
import os
from collections.abc import Mapping, Sequence

from .spec import Expr, Spec

SECTIONS = {'ocean-catalogue': 'The suite', 'ocean-options': 'Every option'}  # marker -> heading


def _size(exprs: Sequence[Expr]) -> str:
    return ', '.join(e.text for e in exprs)


def _actions(spec: Spec) -> str:
    text = f'Discrete({spec.action_n.text})' if spec.action_n is not None else \
        f'MultiDiscrete [{_size(spec.action_nvec)}]' if spec.action_nvec else ''
    if spec.action_box is not None:
        box = f'Box [{spec.action_box.text}] in [{spec.action_low:g}, {spec.action_high:g}]'
        if spec.action_mixed:
            text = f'mixed: {text} + {box}'
        else:
            text = f'{box}; {text} where that size is 0' if text else box
    return text + (', masked' if spec.action_mask else '')


def catalogue(specs: Mapping[str, Spec], scripted: Mapping[str, list[str]]) -> str:
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


def options(specs: Mapping[str, Spec]) -> str:
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
                rng = '-' if o.kind == 'bool' else '[{}, {}]'.format(*(b.describe() for b in o.bounds()))
                out.append(f'| `{o.name}` | {o.default!r} | {rng} | {o.help} |')
        else:
            out.append('No options.')
        for expr, message in s.checks:
            out.append(f'\nCheck: `{expr.text}` ({message}).')
        fields = [f'{name}{"" if size.text == "1" else f" [{size.text}]"} in [{low:g}, {high:g}]'
                  + (f' ({text})' if text else '') for name, size, low, high, text in s.obs_segments if name]
        obs = ' '.join(part for part in (s.obs_help, f'Fields: {"; ".join(fields)}.' if fields else '') if part)
        out.append(f'\nObservation: {s.obs_dtype} [{_size(s.obs_shape)}]: {obs}')
        out.append(f'Actions: {_actions(s)}: {s.action_help}')
        if s.progress_fields:  # what [swarm] ranks games by, and archives (docs/training.md)
            out.append('Progress counters ([swarm] stat): '
                       + '; '.join(f'`{name}` ({text})' for name, text in s.progress_fields) + '.')
        if s.cell_help:
            out.append(f'Go-Explore cell: {s.cell_help}.')
        out.append('')
    return '\n'.join(out).rstrip('\n')


def render(specs: Mapping[str, Spec], scripted: Mapping[str, list[str]]) -> dict[str, str]:
    """{section marker: text} for specs ({name: Spec}) and scripted ({name: [scripted policy names]})."""
    return {'ocean-catalogue': catalogue(specs, scripted), 'ocean-options': options(specs)}


def _markers(name: str) -> tuple[str, str]:
    return f'<!-- {name}:start -->', f'<!-- {name}:end -->'


def section(name: str, doc: str) -> str | None:
    """The text of `doc` between <!-- {name}:start --> and <!-- {name}:end -->, or None without them."""
    start, end = _markers(name)
    if start not in doc or end not in doc:
        return None
    return doc.split(start, 1)[1].split(end, 1)[0].strip('\n')


def update_section(name: str, heading: str, text: str, path: str) -> str:
    """Replace the text between <!-- {name}:start --> and <!-- {name}:end --> of the markdown page at `path`,
    or append the section under `## heading` (to a new page where there is none). Returns `path`."""
    start, end = _markers(name)
    doc = open(path).read() if os.path.exists(path) else ''
    if start in doc and end in doc:
        head, rest = doc.split(start, 1)
        doc = head + start + '\n' + text + '\n' + end + rest.split(end, 1)[1]
    else:
        doc = (doc.rstrip('\n') + '\n\n' if doc.strip() else '') + f'## {heading}\n\n{start}\n{text}\n{end}\n'
    os.makedirs(os.path.dirname(path) or '.', exist_ok=True)
    with open(path, 'w') as f:
        f.write(doc)
    return path
