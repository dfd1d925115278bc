"""The Ocean spec (ocean/<name>/spec.toml, read by ocean/spec.py; expressions in ocean/spec_expr.py, the C
in ocean/spec_c.py): the format, the expressions that Python evaluates and the generator prints as C,
how setup.py loads them, and the promise that a new env needs nothing outside its own folder.

Some tests compile small C files with the compiler that builds the extensions; they skip where there
is none.
"""
import glob
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig

import numpy as np
import pytest

from pufferlib import ocean
from pufferlib.ocean import docs as ocean_docs
from pufferlib.ocean import spec as ocean_spec
from pufferlib.ocean import spec_c
from pufferlib.ocean.env import OceanEnv
from pufferlib.pufferenv import APIUsageError, EnvError

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CC = (sysconfig.get_config_var('CC') or 'cc').split()[0]
needs_cc = pytest.mark.skipif(shutil.which(CC) is None, reason=f'no C compiler ({CC})')

MINIMAL = '''
summary = "a test env"
group = "game"
agents = 1
[options]
size = {default = 4, min = 1, max = 64, help = "cells"}
[observation]
dtype = "uint8"
size = "size"
low = 0
high = 1
[action]
n = 2
'''


def write_spec(tmp_path, text, name='probe'):
    folder = tmp_path / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / 'spec.toml').write_text(text)
    return str(folder)


def compile_c(source, out, include_dirs=(), shared=False):
    flags = ['-shared', '-fPIC'] if shared else []
    cmd = [CC, '-std=gnu11', '-O1', '-Wall', '-Werror', '-Wno-unused-function', *flags, '-o', str(out), str(source),
           *[f'-I{d}' for d in include_dirs]]
    result = subprocess.run(cmd, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


# ---------------------------------------------------------------------------------------------
# The format
# ---------------------------------------------------------------------------------------------

def test_every_env_folder_has_a_loadable_spec():
    # ocean/web/ holds the web page's glue and template (puffer web), not an env
    folders = sorted(entry for entry in os.listdir(ocean.ROOT) if os.path.isdir(os.path.join(ocean.ROOT, entry))
                     and not entry.startswith('__') and entry != 'web')
    assert sorted(ocean.SPECS) == folders
    for name, spec in ocean.SPECS.items():
        assert spec.name == name and spec.summary and all(o.help for o in spec.options.values())


OPTION = 'size = {default = 4, min = 1, max = 64, help = "cells"}'


@pytest.mark.parametrize('old, new, match', [
    ('group = "game"', 'group = "game"\ncolour = "red"', 'unknown key.*colour'),
    ('group = "game"', 'group = "games"', 'group must be one of'),
    ('agents = 1\n', '', "missing required key 'agents'"),
    (OPTION, 'size = {default = 4, min = 1, max = 64}', 'default and a help'),
    (OPTION, 'size = {default = 4, max = 64, help = "cells"}', 'needs min and max'),
    (OPTION, 'size = {default = "4", min = 1, max = 64, help = "cells"}', 'default must be an int'),
    (OPTION, 'size = {default = 4, min = 1, max = 64, help = "cells", step = 2}', 'unknown key.*step'),
    (OPTION, 'size = {default = 4, min = 1, max = 2.5, help = "cells"}', 'max of an int option'),
    (OPTION, 'size = {default = 99, min = 1, max = 64, help = "cells"}', 'defaults break.*size=99 is outside'),
    (OPTION, 'size = {default = 4, min = 1, max = "len(x)", help = "cells"}', 'Call'),
    (OPTION, 'size = {default = 4, min = 1, max = "os.sep", help = "cells"}', 'Attribute'),
    (OPTION, 'size = {default = 4, min = 1, max = "widht", help = "cells"}', "unknown name 'widht'"),
    (OPTION, OPTION + '\nint = {default = 1, min = 0, max = 1, help = "x"}', 'not usable as a C identifier'),
    ('n = 2', 'n = "size / 2.0"', 'must be an int expression'),
    ('n = 2', 'nvec = [2, 2]\nn = 2', 'give n .* or nvec'),
    ('n = 2', 'n = 2\nbuiltin = "yes"', 'builtin must be true or false'),
    ('size = "size"', 'size = "size % 2.0"', '% on a float'),
    ('size = "size"', 'shape = [2, "size"]\nsize = 3', 'exactly one of size, shape or fields'),
    ('dtype = "uint8"', 'dtype = "float64"', 'dtype must be one of'),
])
def test_spec_errors_name_the_file_and_the_key(tmp_path, old, new, match):
    assert old in MINIMAL
    assert ocean_spec.load(write_spec(tmp_path / 'good', MINIMAL)).name == 'probe'
    with pytest.raises(ocean_spec.SpecError, match=match) as info:
        ocean_spec.load(write_spec(tmp_path / 'bad', MINIMAL.replace(old, new, 1)))
    assert 'ocean/probe/spec.toml' in str(info.value)


def test_defaults_types_and_packing_follow_the_spec():
    spec = ocean.spec_of('puffer_pong')
    assert [o.kind for o in spec.options.values()] == ['int', 'int', 'int', 'float', 'float', 'float', 'bool']
    packed = spec.pack(spec.defaults())
    assert len(packed) == 4 * len(spec.options)
    assert np.frombuffer(packed[:12], dtype=np.int32).tolist() == [21, 4, 100000]
    assert np.frombuffer(packed[12:24], dtype=np.float32).tolist() == [20.0, 3.0, 1.5]
    assert np.frombuffer(packed[24:], dtype=np.int32).tolist() == [0]  # two_player: a bool packs as int32
    env = ocean.make('puffer_pong', max_score=3)
    assert env.config['max_score'] == 3 and env.single_observation_space.shape == (8,)
    env.close()


def test_option_types_are_checked_with_one_rule():
    with pytest.raises(APIUsageError, match='max_score must be int'):
        ocean.make('puffer_pong', max_score=2.5)
    with pytest.raises(APIUsageError, match='max_score must be int'):
        ocean.make('puffer_pong', max_score=True)
    env = ocean.make('puffer_pong', paddle_height=np.int64(10), max_score=np.int32(2))  # ints fit floats
    assert env.config['paddle_height'] == 10.0 and isinstance(env.config['paddle_height'], float)
    env.close()


# ---------------------------------------------------------------------------------------------
# Expressions: Python evaluates, C is generated, both must agree
# ---------------------------------------------------------------------------------------------

EXPRESSIONS = ['a + b * c', '(a + b) * c', 'a / b', 'b / a', '-a / b', 'a % b', '-a % b', 'a % -b', 'a / z',
               'a % z', '2 * a - b', 'a < b', 'a < b < c', 'a <= b and b > c', 'a == 7 or not b', 'x * 2',
               'x / b', 'a / x', '-x', 'x > a / b', 'big * big']
VALUES = [dict(a=7, b=3, c=-2, z=0, big=2**31 - 1, x=0.5), dict(a=-7, b=2, c=5, z=0, big=-2**31, x=-1.25),
          dict(a=0, b=-4, c=0, z=0, big=5, x=3.0)]


def _expr(text):
    kinds = dict(a='int', b='int', c='int', z='int', big='int', x='float')
    return ocean_spec.Expr(text, kinds, {}, 'test')


def test_integer_division_and_modulo_follow_c():
    values = dict(a=-7, b=2, z=0, c=0, big=0, x=0.0)
    assert _expr('a / b')(values) == -3 and _expr('a % b')(values) == -1
    assert _expr('a / z')(values) == 0 and _expr('a % z')(values) == 0
    assert _expr('a').names == ['a'] and _expr('b + a * b').names == ['b', 'a']
    with pytest.raises(OverflowError):
        _expr('big * big * big')(dict(big=2**31 - 1))


@needs_cc
def test_python_and_generated_c_evaluate_expressions_identically(tmp_path):
    exprs = [_expr(text) for text in EXPRESSIONS]
    lines = ['#include <stdio.h>', 'typedef struct V { int a, b, c, z, big; float x; } V;',
             'static long long ocean_spec_div(long long a, long long b) { return b ? a / b : 0; }',
             'static long long ocean_spec_mod(long long a, long long b) { return b ? a % b : 0; }',
             'int main(void) {']
    for values in VALUES:
        fields = ', '.join(f'.{k} = {v!r}' for k, v in values.items())
        lines.append(f'    {{ V v = {{{fields}}}; const V *c = &v;')
        for e in exprs:
            fmt = '%.17g' if e.kind == 'float' else '%lld'
            cast = '(double)' if e.kind == 'float' else '(long long)'
            lines.append(f'      printf("{fmt}\\n", {cast}({e.c()}));')
        lines.append('    }')
    lines += ['    return 0;', '}']
    source = tmp_path / 'exprs.c'
    source.write_text('\n'.join(lines))
    compile_c(source, tmp_path / 'exprs')
    out = subprocess.run([str(tmp_path / 'exprs')], capture_output=True, text=True, check=True).stdout.split()
    expected, got = [], []
    for i, values in enumerate(VALUES):
        values = {**values, 'x': float(np.float32(values['x']))}  # C stores the option as a float
        for j, e in enumerate(exprs):
            text = out[i * len(exprs) + j]
            expected.append((e.text, e(values)))
            got.append((e.text, float(text) if e.kind == 'float' else int(text)))
    assert got == expected


# ---------------------------------------------------------------------------------------------
# A new env touches only its own folder
# ---------------------------------------------------------------------------------------------

def copy_template(root, name):
    """ocean/template copied to root/<name> and renamed, as docs/ocean.md tells a new author to."""
    camel = ocean_spec.camel(name)
    folder = root / name
    shutil.copytree(os.path.join(ocean.ROOT, 'template'), folder,
                    ignore=shutil.ignore_patterns('*.so', '__pycache__'))
    header = (folder / 'template.h').read_text().replace('Template', camel).replace('template_', f'{name}_')
    (folder / 'template.h').unlink()
    (folder / f'{name}.h').write_text(header)
    return folder


def build(spec, folder, out_dir):
    """What setup.py does for one env: generate spec.h and the binding source, compile, load."""
    generated = out_dir / 'generated'
    generated.mkdir(parents=True)
    (generated / 'spec.h').write_text(spec_c.c_header(spec))
    (generated / 'binding.c').write_text(spec_c.c_binding(spec))
    library = out_dir / f'binding{sysconfig.get_config_var("EXT_SUFFIX")}'
    compile_c(generated / 'binding.c', library, [generated, folder, ocean.ROOT, sysconfig.get_paths()['include']],
              shared=True)
    module_spec = importlib.util.spec_from_file_location(f'pufferlib.ocean.{spec.name}.binding', library)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


@needs_cc
def test_a_new_env_needs_only_its_folder(tmp_path, monkeypatch):
    """Copy the template under a new name into a scratch tree: discovery, the generated C, the build,
    the Python class and the docs all pick it up, and c_init can refuse to start with a message."""
    root = tmp_path / 'ocean'
    folder = copy_template(root, 'trash_probe')
    header = folder / 'trash_probe.h'
    header.write_text(header.read_text().replace(
        'static int c_init(TrashProbe *env) {\n',
        'static int c_init(TrashProbe *env) {\n'
        '    if (env->cfg.length == 7) return ocean_fail(env, "the probe refuses length 7");\n'))
    specs = ocean_spec.discover(str(root))
    assert list(specs) == ['trash_probe'] and specs['trash_probe'].c_struct == 'TrashProbe'
    binding = build(specs['trash_probe'], folder, tmp_path / 'build')
    monkeypatch.setitem(sys.modules, 'pufferlib.ocean.trash_probe.binding', binding)
    cls = type('TrashProbe', (OceanEnv,), {'spec': specs['trash_probe'], 'name': 'trash_probe'})

    env = cls(num_envs=4, seed=1, length=6)
    assert env.single_observation_space.shape == (6,) and env.action_masks.shape == (4, 2)
    obs, _ = env.reset(seed=1)
    for _ in range(20):
        obs, rewards, terminals, _, _ = env.step(np.ones(4, dtype=np.int32))
    assert (obs[:, -1] == 2).all() and env._binding.vec_layout(env._handle) == (1, 6, 1, 1)
    env.close()
    with pytest.raises(EnvError, match='the probe refuses length 7'):
        cls(num_envs=3, length=7)
    with pytest.raises(APIUsageError, match='max_steps must leave time'):
        cls(num_envs=1, length=40, max_steps=10)

    sections = ocean_docs.render({**specs, 'probe_game': _as_game(specs['trash_probe'])}, {})
    assert '`puffer_probe_game`' in sections['ocean-catalogue'] and 'trash_probe' not in sections['ocean-catalogue']


def _as_game(spec):
    """The template's spec listed in the catalogue, as a real env would be."""
    import dataclasses
    return dataclasses.replace(spec, name='probe_game', group='game')


def _code_strings(path):
    """The string literals of a Python file's code (docstrings and comments left out)."""
    import ast
    tree = ast.parse(open(path).read())
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) and node.body
                  and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return {node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings}


def test_nothing_outside_an_env_folder_names_the_env():
    """setup.py, the package, the docs generator and the sanitizer script find envs by scanning; none of
    them keeps a list of names."""
    # an env may share a word of the spec's own vocabulary (a group, an [action] key: puffer_mixed and
    # `mixed = true`); those words are the schema, not a list of envs
    vocabulary = set(ocean_spec.GROUPS) | ocean_spec.ACTION_KEYS
    names = {n for name in ocean.SPECS for n in (name, f'puffer_{name}')} - vocabulary
    for path in ['setup.py', 'ocean/__init__.py', 'ocean/env.py', 'ocean/spec.py', 'ocean/spec_expr.py',
                 'ocean/spec_c.py', 'ocean/tools.py', 'ocean/docs.py', 'scripts/ocean_docs.py',
                 'pufferlib/config/__init__.py']:
        words = {w for text in _code_strings(os.path.join(REPO, path)) for w in re.findall(r'\w+', text)}
        assert not names & words, f'{path} names {names & words}'
    script = open(os.path.join(REPO, 'scripts', 'sanitize_ocean.sh')).read()
    assert not names & set(re.findall(r'\w+', script))


SETUP_PROBE = """
import json, sys
sys.modules['pufferlib'] = None  # what setup.py sees while pufferlib is being built: nothing to import
sys.argv = ['setup.py', '--name']
names = {'__file__': 'setup.py', '__name__': '__main__'}
exec(compile(open('setup.py').read(), 'setup.py', 'exec'), names)
print(json.dumps({'shared': names['shared_sources'], 'envs': list(names['ocean_specs']),
                  'header': names['ocean_spec_c'].c_header(names['ocean_specs']['template'])}))
"""


def test_setup_loads_every_spec_module_without_pufferlib():
    """setup.py reads the specs and generates the C before pufferlib is importable, from the spec modules
    alone; an edit to any of them (a shared source) rebuilds every env."""
    result = subprocess.run([sys.executable, '-c', SETUP_PROBE], cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    probe = json.loads(result.stdout.splitlines()[-1])
    modules = sorted(os.path.relpath(path, REPO) for path in glob.glob(os.path.join(REPO, 'ocean', 'spec*.py')))
    assert len(modules) >= 3 and set(modules) <= set(probe['shared'])
    assert probe['envs'] == list(ocean.SPECS) and probe['header'] == spec_c.c_header(ocean.SPECS['template'])


def test_docs_tables_are_generated_from_the_specs():
    result = subprocess.run([sys.executable, os.path.join(REPO, 'scripts', 'ocean_docs.py'), '--check'],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


KINDS_SPEC = '''
summary = "every option kind"
group = "game"
agents = "1 + 2 * teams"
[constants]
LIMIT = 40
[options]
teams = {default = 2, min = 1, max = "LIMIT / 4", help = "teams"}
speed = {default = 1.5, min = 0.0, max = 8.0, help = "speed"}
wrap = {default = false, help = "wrap around the edges"}
size = {default = 8, min = "teams + 1", max = "LIMIT", help = "side"}
[[checks]]
require = "not wrap or size % 2 == 0"
message = "a wrapping board has an even size"
[[checks]]
require = "speed * size <= 60"
message = "too fast for the board"
[observation]
dtype = "int8"
shape = ["size", "size + teams"]
low = -1
high = 1
[action]
nvec = [3, "teams"]
mask = true
'''


@needs_cc
def test_generated_c_checks_every_option_kind_like_python(tmp_path):
    """Ints, floats and bools, bounds that are expressions, checks with % and `not`: the generated
    ocean_spec_check reports exactly Python's message (or none) for each set of values."""
    spec = ocean_spec.load(write_spec(tmp_path, KINDS_SPEC))
    assert spec.num_agents(spec.defaults()) == 5 and spec.obs_shape_of(spec.defaults()) == (8, 10)
    assert spec.action_dims(spec.defaults()) == [3, 2] and spec.num_actions(spec.defaults()) == 5
    cases = [{}, {'teams': 0}, {'teams': 11}, {'size': 2}, {'speed': -0.5}, {'speed': 8.5}, {'wrap': True, 'size': 9},
             {'wrap': True}, {'speed': 7.9, 'size': 8}, {'speed': 7.5, 'size': 9}, {'teams': 10, 'size': 10}]
    values = [{**spec.defaults(), **case} for case in cases]
    (tmp_path / 'spec.h').write_text(spec_c.c_header(spec))
    config = f'{spec.c_struct}Config'
    main = ['#include <stdio.h>', '#include <string.h>', '#include "spec.h"', 'int main(void) {',
            f'    {config} c; unsigned char raw[sizeof c]; char msg[512];',
            '    while (fread(raw, 1, sizeof raw, stdin) == sizeof raw) {',
            '        memcpy(&c, raw, sizeof c); msg[0] = 0;',
            '        printf("%d|%s|%lld|%lld|%lld\\n", ocean_spec_check(&c, msg, sizeof msg), msg,',
            '               ocean_spec_num_agents(&c), ocean_spec_obs_size(&c), ocean_spec_num_actions(&c));',
            '    }', '    return 0;', '}']
    (tmp_path / 'main.c').write_text('\n'.join(main))
    compile_c(tmp_path / 'main.c', tmp_path / 'check', [tmp_path])
    packed = b''.join(spec.pack(v) for v in values)
    out = subprocess.run([str(tmp_path / 'check')], input=packed, capture_output=True, check=True).stdout
    for case, v, line in zip(cases, values, out.decode().splitlines()):
        status, message, agents, obs, actions = line.split('|')
        problem = spec.problem(v)
        assert (int(status), message) == ((-1, problem) if problem else (0, '')), case
        if not problem:
            assert (int(agents), int(obs), int(actions)) == (
                spec.num_agents(v), int(np.prod(spec.obs_shape_of(v))), spec.num_actions(v))


# ---------------------------------------------------------------------------------------------
# Box actions
# ---------------------------------------------------------------------------------------------

BOX_ACTION = '[action]\nn = 2\n'


@pytest.mark.parametrize('new, match', [
    ('[action]\nbox = 3\n', 'a box needs low and high'),
    ('[action]\nbox = 3\nlow = 1.0\nhigh = -1.0\n', 'low must be below high'),
    ('[action]\nbox = "size / 2.0"\nlow = -1.0\nhigh = 1.0\n', 'box: must be an int expression'),
    ('[action]\nn = 2\nlow = -1.0\n', 'low and high bound a box'),
    ('[action]\nbox = 3\nlow = -1.0\nhigh = 1.0\nmask = true\n', 'mask applies to discrete actions only'),
    ('[action]\nhelp = "nothing"\n', 'give n .*, nvec .* or box'),
])
def test_box_action_errors_name_the_key(tmp_path, new, match):
    assert BOX_ACTION in MINIMAL
    with pytest.raises(ocean_spec.SpecError, match=match):
        ocean_spec.load(write_spec(tmp_path, MINIMAL.replace(BOX_ACTION, new)))


BOTH_FORMS = MINIMAL.replace(OPTION, OPTION + '\ndiscrete = {default = false, help = "four buttons"}').replace(
    BOX_ACTION, '[action]\nn = 4\nbox = "(size - 2) * (not discrete)"\nlow = -2.0\nhigh = 0.5\n')


@needs_cc
def test_an_option_picks_box_or_discrete_and_c_agrees(tmp_path):
    """`box` beside `n`: the Box where box > 0, Discrete(n) where it is 0; a box-only spec refuses a size
    below 1 with one message on both sides."""
    spec = ocean_spec.load(write_spec(tmp_path / 'both', BOTH_FORMS))
    only = ocean_spec.load(write_spec(tmp_path / 'only', MINIMAL.replace(
        BOX_ACTION, '[action]\nbox = "size - 2"\nlow = -1.0\nhigh = 1.0\n')))
    cases = [(spec, {}), (spec, {'discrete': True}), (spec, {'size': 2}), (spec, {'size': 7}),
             (only, {}), (only, {'size': 2}), (only, {'size': 1})]
    lines = []
    for s, case in cases:
        folder = tmp_path / f'c{len(lines)}'
        folder.mkdir()
        (folder / 'spec.h').write_text(spec_c.c_header(s))
        values = {**s.defaults(), **case}
        main = ['#include <stdio.h>', '#include "spec.h"', 'int main(void) {',
                f'    {s.c_struct}Config c = {{0}}; char msg[512] = "";',
                *[f'    c.{k} = {int(v)};' for k, v in values.items()],  # these specs' options are ints and bools
                '    int status = ocean_spec_check(&c, msg, sizeof msg);',
                '    printf("%d|%s|%lld|%lld|%lld|%g|%g", status, msg, ocean_spec_box_size(&c),',
                '           ocean_spec_act_size(&c), ocean_spec_num_actions(&c), (double)OCEAN_ACTION_LOW,',
                '           (double)OCEAN_ACTION_HIGH);',
                '    return 0;', '}']
        (folder / 'main.c').write_text('\n'.join(main))
        compile_c(folder / 'main.c', folder / 'run', [folder])
        lines.append(subprocess.run([str(folder / 'run')], capture_output=True, check=True, text=True).stdout)
    for (s, case), line in zip(cases, lines):
        values = {**s.defaults(), **case}
        status, message, box, act, width, low, high = line.split('|')
        problem = s.problem(values)
        assert (int(status), message) == ((-1, problem) if problem else (0, '')), case
        assert (int(box), int(act), int(width)) == (s.box_size(values), s.action_size(values), s.num_actions(values))
        assert (float(low), float(high)) == (s.action_low, s.action_high)
    assert spec.box_size({**spec.defaults(), 'discrete': True}) == 0 and spec.action_dims(spec.defaults()) == []
    assert spec.box_size(spec.defaults()) == 2 and spec.action_size({**spec.defaults(), 'discrete': True}) == 1
    assert only.problem({'size': 2}).startswith('[action] box must be >= 1') and 'size=2' in only.problem({'size': 2})
    docs = ocean_docs.options({'both': spec})
    assert 'Box [(size - 2) * (not discrete)] in [-2, 0.5]; Discrete(4) where that size is 0' in docs
