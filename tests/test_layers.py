"""The package's layers (docs/contributing.md, "Where things live"): every import between pufferlib's
modules, at the top of a file or inside a function, goes down the picture or across one layer, never up;
and no module imports itself through others (an import cycle), not even inside a function; and the lab
(scripts/lab/, the package `lab`) sits above them all: the product never imports it."""
import ast
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Bottom to top; a module may import its own layer and the layers below it.
LAYERS = [
    ('base', {'errors', 'saved_state', 'pufferenv', 'cpus', 'rundir', 'invocation', 'cluster', 'profile',
              'dashboard', '_advantage', 'reward_scale'}),
    ('emulation', {'emulation'}),
    ('envs', {'ocean', 'environments'}),
    ('names, config', {'registry', 'config'}),
    ('vector', {'vector'}),
    ('PPO', {'advantage', 'distributions', 'loss', 'models', 'checkpoint', 'numpy_policy', 'arena', 'rollout',
             'trainer', 'explore'}),
    ('the run job', {'train', 'metrics', 'evaluate', 'native', 'export', 'web'}),
    ('research loops', {'backend', 'sweep', 'league', 'pbt'}),
    ('CLI', {'cli', 'sb3', 'smoke'}),
]
RANK = {name: rank for rank, (_, names) in enumerate(LAYERS) for name in names}
# An env may declare its own policy class on top of models.py (and its action distributions), built lazily
# (nethack, tripletriad), and offer it to numpy_policy.py (mujoco).
ALLOWED_UP = {('environments', 'models'), ('ocean', 'models'), ('environments', 'distributions'),
              ('ocean', 'distributions'), ('environments', 'numpy_policy')}


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


def module_files():
    """Dotted name -> file of every module of pufferlib and of ocean/ (installed as pufferlib.ocean)."""
    found = {}
    for folder, package in (('pufferlib', 'pufferlib'), ('ocean', 'pufferlib.ocean')):
        base = os.path.join(ROOT, folder)
        for dirpath, _, files in os.walk(base):  # pufferlib/ocean, a link to ocean/ in a checkout, is not walked
            for name in files:
                if name.endswith('.py'):
                    parts = os.path.relpath(os.path.join(dirpath, name), base)[:-3].split(os.sep)
                    found['.'.join([package, *parts[:-1 if parts[-1] == '__init__' else None]])] = \
                        os.path.join(dirpath, name)
    return found


def imported_modules(name, path, known):
    """The modules of `known` that module `name` imports, wherever the import stands: `from pufferlib import
    rundir` -> pufferlib.rundir, `from pufferlib.models import make_policy` -> pufferlib.models, `import
    pufferlib` -> pufferlib (its __init__), `from ..env import OceanEnv` in pufferlib.ocean.pong ->
    pufferlib.ocean.env. Each import counts the module it names, not the packages Python runs on the way."""
    package = name if path.endswith('__init__.py') else name.rpartition('.')[0]
    found = set()
    for node in ast.walk(ast.parse(open(path).read())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = package.rsplit('.', node.level - 1)[0] if node.level else ''
            module = '.'.join(part for part in (module, node.module) if part)
            targets = [f'{module}.{alias.name}' if f'{module}.{alias.name}' in known else module
                       for alias in node.names]
        else:
            continue
        for target in targets:
            while target not in known and '.' in target:  # `import pufferlib.vector.base as b` names a module
                target = target.rpartition('.')[0]
            if target in known:
                found.add(target)
    return found


def find_cycle(graph):
    """One import cycle of `graph` (module -> the modules it imports) as [a, b, ..., a], or None."""
    state = {}  # module -> 'open' while on the current path, 'done' once every path from it was walked
    for start in sorted(graph):
        if start in state:
            continue
        path, stack = [start], [iter(sorted(graph[start]))]
        state[start] = 'open'
        while stack:
            target = next(stack[-1], None)
            if target is None:
                state[path.pop()] = 'done'
                stack.pop()
            elif state.get(target) == 'open':
                return path[path.index(target):] + [target]
            elif target not in state:
                state[target] = 'open'
                path.append(target)
                stack.append(iter(sorted(graph[target])))
    return None


def test_find_cycle_names_the_modules_in_order():
    assert find_cycle({'a': {'b'}, 'b': {'c'}, 'c': {'a'}, 'd': {'a'}}) == ['a', 'b', 'c', 'a']
    assert find_cycle({'a': {'a'}}) == ['a', 'a']
    assert find_cycle({'a': {'b', 'c'}, 'b': {'c'}, 'c': set()}) is None


def test_the_import_graph_has_no_cycle():
    known = module_files()
    assert {'pufferlib', 'pufferlib.models', 'pufferlib.ocean', 'pufferlib.ocean.env', 'pufferlib.vector.base'} \
        <= set(known)
    graph = {name: imported_modules(name, path, known) for name, path in known.items()}
    assert 'pufferlib.rundir' in graph['pufferlib.checkpoint'] and 'pufferlib.ocean.env' in graph['pufferlib.ocean']
    cycle = find_cycle(graph)
    assert cycle is None, (f'import cycle: {" -> ".join(cycle)}: move what both need into a module below them '
                           '(docs/contributing.md, "Where things live")')


def lab_imports(path):
    """The lines of a file that import the lab: `import lab`, `import lab.x`, `from lab(.x) import y`."""
    found = []
    for node in ast.walk(ast.parse(open(path).read())):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
            [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module else []
        if any(name == 'lab' or name.startswith('lab.') for name in names):
            found.append(node.lineno)
    return found


def test_the_product_never_imports_the_lab():
    importing = [f'{os.path.relpath(path, ROOT)}:{line}' for path, _ in modules() for line in lab_imports(path)]
    assert importing == [], 'the lab imports the product, never the other way round'


def test_a_lab_import_is_found_at_the_top_and_inside_a_function(tmp_path):
    probe = tmp_path / 'probe.py'
    probe.write_text('import os\nimport lab.benchmark\n\n\ndef f():\n    from lab import synthetic_envs\n'
                     '    from pufferlib import lab_like\n    import labour\n')
    assert lab_imports(str(probe)) == [2, 6]
