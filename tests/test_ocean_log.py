"""An Ocean env's own episode statistics: `[[log]]` fields in its spec.toml, added to ocean.h's Log by the
generated spec.h, averaged by the binding like the standard fields and passed on under their names.

The C tests compile with the compiler that builds the extensions; they skip where there is none.
"""
import subprocess
import sys

import numpy as np
import pytest
from test_ocean_spec import MINIMAL, build, compile_c, copy_template, needs_cc, write_spec

from pufferlib import ocean
from pufferlib.ocean import spec as ocean_spec
from pufferlib.ocean import spec_c
from pufferlib.ocean.env import OceanEnv

LOG_FIELD = '\n[[log]]\nname = "steps_left"\nhelp = "steps the episode had left when it ended"\n'


@pytest.mark.parametrize('log,match', [
    ('[[log]]\nname = "score"\nhelp = "h"', r"'score' is a standard log field \(episode_return, episode_length, "
                                             r"score, perf, n, episodes\)"),
    ('[[log]]\nname = "n"\nhelp = "h"', "'n' is a standard log field"),
    ('[[log]]\nname = "episodes"\nhelp = "h"', "'episodes' is a standard log field"),
    ('[[log]]\nname = "kills"\nhelp = "h"\n[[log]]\nname = "kills"\nhelp = "h2"',
     "#2: 'kills' is declared twice"),
    ('[[log]]\nname = "2kills"\nhelp = "h"', "'2kills' is not usable as a C identifier"),
    ('[[log]]\nname = "kill rate"\nhelp = "h"', "'kill rate' is not usable as a C identifier"),
    ('[[log]]\nname = "float"\nhelp = "h"', "'float' is not usable as a C identifier"),
    ('[[log]]\nname = "CELLS"\nhelp = "h"', "'CELLS' is also a \\[constants\\] name"),
    ('[[log]]\nname = "kills"', 'needs `name` .* and `help`'),
    ('[[log]]\nname = "kills"\nhelp = "h"\nunit = "kills"', r'unknown key\(s\) unit'),
    ('[[log]]\nname = 3\nhelp = "h"', 'name must be a string'),
    ('log = "kills"', r'must be a list of tables'),
])
def test_bad_log_fields_are_one_spec_error(tmp_path, log, match):
    text = MINIMAL.replace('[options]', '[constants]\nCELLS = 4\n[options]')
    if log.startswith('log ='):
        text = log + '\n' + text
    else:
        text += '\n' + log + '\n'
    with pytest.raises(ocean_spec.SpecError, match=r'ocean/probe/spec.toml \[\[log\]\].*' + match):
        ocean_spec.load(write_spec(tmp_path, text))


@pytest.mark.parametrize('extra,match', [
    ('[[progress]]\nname = "rooms"\nhelp = "h"\n[[progress]]\nname = "rooms"\nhelp = "h2"',
     r"\[\[progress\]\] #2: 'rooms' is declared twice"),
    ('[[progress]]\nname = "2rooms"\nhelp = "h"', "'2rooms' is not usable as a C identifier"),
    ('[[progress]]\nname = "rooms"', r'\[\[progress\]\] #1: needs `name`'),
    ('progress = "rooms"', r'\[\[progress\]\] must be a list of tables'),
    ('cell = 3', 'cell must be a string'),
])
def test_bad_progress_counters_and_cells_are_one_spec_error(tmp_path, extra, match):
    """[[progress]] and cell (what the trainer's [swarm] reads): a broken one is one SpecError naming it."""
    text = extra + '\n' + MINIMAL if not extra.startswith('[[') else MINIMAL + '\n' + extra + '\n'
    with pytest.raises(ocean_spec.SpecError, match=r'ocean/probe/spec.toml.*' + match):
        ocean_spec.load(write_spec(tmp_path, text))


def test_progress_counters_and_cells_reach_spec_h(tmp_path):
    """spec.h tells binding.h how many counters c_progress writes and whether c_cell exists (0 for neither)."""
    plain = spec_c.c_header(ocean_spec.load(write_spec(tmp_path / 'plain', MINIMAL)))
    assert '#define OCEAN_PROGRESS_COUNT 0' in plain and '#define OCEAN_CELL 0' in plain
    both = ocean_spec.load(write_spec(tmp_path / 'both', 'cell = "where"\n' + MINIMAL
                                      + '[[progress]]\nname = "rooms"\nhelp = "h"\n'))
    assert both.progress_fields == [('rooms', 'h')] and both.cell_help == 'where'
    assert '#define OCEAN_PROGRESS_COUNT 1' in spec_c.c_header(both) and '#define OCEAN_CELL 1' in spec_c.c_header(both)


def test_specs_without_log_fields_generate_the_standard_log(tmp_path):
    """No [[log]]: spec.h says nothing about the log, so Log (and the binding's loop) is the standard one."""
    plain = ocean_spec.load(write_spec(tmp_path / 'plain', MINIMAL))
    assert plain.log_fields == [] and 'OCEAN_LOG_EXTRA' not in spec_c.c_header(plain)
    extra = ocean_spec.load(write_spec(tmp_path / 'extra', MINIMAL + LOG_FIELD))
    assert extra.log_fields == [('steps_left', 'steps the episode had left when it ended')]
    assert '#define OCEAN_LOG_EXTRA float steps_left;' in spec_c.c_header(extra)


def _check_log_layout(tmp_path, spec_text, first, expect_floats):
    """Compile a unit that includes `first` ('spec.h' or 'ocean.h') then the other, and print Log's size."""
    spec = ocean_spec.load(write_spec(tmp_path / 'spec', spec_text))
    (tmp_path / 'spec.h').write_text(spec_c.c_header(spec))
    second = 'ocean.h' if first == 'spec.h' else 'spec.h'
    (tmp_path / 'main.c').write_text(f'#include <stdio.h>\n#include "{first}"\n#include "{second}"\n'
                                     'int main(void) { static const char *n[] = OCEAN_LOG_FIELDS;\n'
                                     '    printf("%d %d %s\\n", (int)(sizeof(Log) / sizeof(float)), '
                                     '(int)(sizeof n / sizeof n[0]), n[OCEAN_LOG_COUNT - 2]); return 0; }\n')
    compile_c(tmp_path / 'main.c', tmp_path / 'main', [tmp_path, ocean.ROOT])
    out = subprocess.run([str(tmp_path / 'main')], capture_output=True, text=True, check=True).stdout.split()
    assert out[:2] == [str(expect_floats)] * 2
    return out[2]


@needs_cc
def test_log_fields_sit_between_perf_and_n_in_c(tmp_path):
    assert _check_log_layout(tmp_path / 'plain', MINIMAL, 'spec.h', 5) == 'perf'
    assert _check_log_layout(tmp_path / 'extra', MINIMAL + LOG_FIELD, 'spec.h', 6) == 'steps_left'


@needs_cc
def test_spec_h_after_ocean_h_is_a_compile_error_that_says_so(tmp_path):
    """Log is declared by ocean.h: a spec.h with [[log]] fields that comes second would be too late."""
    assert _check_log_layout(tmp_path / 'plain', MINIMAL, 'ocean.h', 5) == 'perf'
    with pytest.raises(AssertionError, match='declares \\[\\[log\\]\\] fields: include it before ocean.h'):
        _check_log_layout(tmp_path / 'extra', MINIMAL + LOG_FIELD, 'ocean.h', 6)


@needs_cc
def test_log_fields_are_averaged_per_episode_like_the_standard_ones(tmp_path, monkeypatch):
    """The template, given one [[log]] field that it fills with max_steps - the episode's length: the
    binding's dict carries it under its name as the mean over the same episodes as episode_length."""
    folder = copy_template(tmp_path / 'ocean', 'log_probe')
    (folder / 'spec.toml').write_text((folder / 'spec.toml').read_text() + LOG_FIELD)
    header = folder / 'log_probe.h'
    call = '        ocean_log_episode(&env->log,'
    assert call in header.read_text()
    header.write_text(header.read_text().replace(
        call, '        env->log.steps_left += (float)(env->cfg.max_steps - env->tick);\n' + call))
    spec = ocean_spec.discover(str(tmp_path / 'ocean'))['log_probe']
    binding = build(spec, folder, tmp_path / 'build')
    monkeypatch.setitem(sys.modules, 'pufferlib.ocean.log_probe.binding', binding)
    cls = type('LogProbe', (OceanEnv,), {'spec': spec, 'name': 'log_probe'})
    env = cls(num_envs=8, seed=3, length=5, max_steps=20)
    rng = np.random.default_rng(0)
    for _ in range(200):
        env.step(rng.integers(0, 2, 8).astype(np.int32))
    log = env.log()
    assert log is not None and list(log) == ['episode_return', 'episode_length', 'score', 'perf', 'steps_left', 'n']
    assert log['n'] > 10
    assert log['steps_left'] == pytest.approx(20 - log['episode_length'], rel=1e-6)
    assert env.log() is None  # emptied by the report, like the standard fields
