"""The package's layers (docs/contributing.md, "Where things live"): every import between pufferlib's
modules, at the top of a file or inside a function, goes down the picture or across one layer, never up."""
import ast
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Bottom to top; a module may import its own layer and the layers below it.
LAYERS = [
    ('base', {'pufferenv', 'rundir', 'invocation', 'cluster', 'profile', 'dashboard', '_advantage', 'reward_scale'}),
    ('emulation', {'emulation'}),
    ('envs', {'ocean', 'environments'}),
    ('names, config', {'registry', 'config'}),
    ('vector', {'vector'}),
    ('PPO', {'advantage', 'models', 'numpy_policy', 'arena', 'rollout', 'trainer'}),
    ('the run job', {'train', 'evaluate', 'export', 'web'}),
    ('research loops', {'backend', 'sweep', 'league'}),
    ('CLI', {'cli', 'sb3', 'benchmark', 'smoke'}),
]
RANK = {name: rank for rank, (_, names) in enumerate(LAYERS) for name in names}
# An env may declare its own policy class on top of models.py, built lazily (nethack, tripletriad), and offer
# it to numpy_policy.py (mujoco).
ALLOWED_UP = {('environments', 'models'), ('ocean', 'models'), ('environments', 'numpy_policy')}


def modules():
    """(file, its part of pufferlib: 'vector', 'ocean', ...) for every Python file of the package."""
    for folder, part in (('pufferlib', None), ('ocean', 'ocean')):
        for dirpath, _, files in os.walk(os.path.join(ROOT, folder)):
            for name in files:
                if name.endswith('.py'):
                    path = os.path.join(dirpath, name)
                    rel = os.path.relpath(path, os.path.join(ROOT, folder)).split(os.sep)
                    yield path, part or (rel[0][:-3] if len(rel) == 1 else rel[0])


def imported_parts(path):
    """The parts of pufferlib a file imports: `from pufferlib.vector.base import X` -> vector,
    `from pufferlib import rundir` -> rundir, `import pufferlib.sweep` -> sweep."""
    parts = set()
    for node in ast.walk(ast.parse(open(path).read())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = node.module.split('.')
            if names[0] != 'pufferlib':
                continue
            parts.update([names[1]] if len(names) > 1 else [alias.name for alias in node.names])
        elif isinstance(node, ast.Import):
            parts.update(a.name.split('.')[1] for a in node.names
                         if a.name.startswith('pufferlib.'))
    return parts


def test_every_part_of_the_package_has_a_layer():
    unplaced = sorted({part for _, part in modules() if part not in RANK and part != '__init__'})
    assert unplaced == [], f'add {unplaced} to a layer here and to the picture in docs/contributing.md'


def test_imports_go_down_the_layers():
    upward = []
    for path, part in modules():
        if part == '__init__':
            continue
        for target in imported_parts(path):
            if target in RANK and RANK[target] > RANK[part] and (part, target) not in ALLOWED_UP:
                upward.append(f'{os.path.relpath(path, ROOT)} ({LAYERS[RANK[part]][0]}) imports pufferlib.{target} '
                              f'({LAYERS[RANK[target]][0]})')
    assert upward == []
