"""pufferlib.registry: every env name resolves in one place, lazily; "latest" means one thing."""
import os
import subprocess
import sys

import pytest

import pufferlib
import pufferlib.vector
from pufferlib import environments, registry
from pufferlib.pufferenv import APIUsageError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.parametrize('name, family', [('puffer_pong', 'ocean'), ('atari_pong', 'atari'), ('nethack', 'nethack'),
                                          ('classic_cartpole', 'classic_control'), ('CartPole-v1', 'gymnasium')])
def test_every_kind_of_name_resolves(name, family):
    entry = registry.lookup(name)
    assert entry.family == family and registry.family_of(name) == family
    layers = [os.path.basename(p) for p in entry.config_layers()]
    assert layers[0] == f'{family}.toml'


def test_ocean_entries_carry_their_spec_and_policies():
    entry = registry.lookup('puffer_squared')
    assert entry.option_defaults() == {'size': 11, 'num_targets': 4, 'max_steps': 64}
    assert entry.option_specs()['size'].max.text == '255'
    assert list(entry.scripted_policies()) == ['greedy']
    assert registry.lookup('atari_pong').option_specs() == {} and registry.lookup('CartPole-v1').spec is None


def test_unknown_names_suggest_close_ones():
    assert registry.family_of('puffer_pongg') is None and registry.family_of('atari_ponk') is None
    for bad, close in (('puffer_pongg', 'puffer_pong'), ('CartPole-v9', 'CartPole-v1')):
        with pytest.raises(APIUsageError, match=f'unknown environment.*{close}'):
            registry.lookup(bad)
    with pytest.raises(APIUsageError, match='must be a string'):
        pufferlib.make(3)


def test_looking_up_one_name_imports_one_family():
    code = ('import sys; from pufferlib import registry, environments\n'
            'assert registry.lookup("atari_pong").family == "atari"\n'
            'loaded = [f for f in environments.FAMILIES if f"pufferlib.environments.{f}" in sys.modules]\n'
            'assert loaded == ["atari"], loaded\n'
            'registry.lookup("CartPole-v1")\n'
            'loaded = [f for f in environments.FAMILIES if f"pufferlib.environments.{f}" in sys.modules]\n'
            'assert loaded == ["atari"], loaded\n')
    subprocess.run([sys.executable, '-c', code], check=True, cwd=ROOT)


def test_every_family_declares_its_prefix_and_its_names_carry_it():
    for family, prefix in environments.FAMILIES.items():
        for name in environments.module(family).env_names():
            assert name == prefix or name.startswith(prefix + '_'), (family, name)


def test_vector_resolves_names_through_the_registry_and_checks_backend_options():
    with pufferlib.vector.make('CartPole-v1', num_envs=2) as vecenv:  # the README's example
        assert vecenv.num_agents == 2
    with pytest.raises(APIUsageError, match='unknown environment'):
        pufferlib.vector.make('CartPole-v9', num_envs=2)
    with pytest.raises(APIUsageError, match='Serial has no option spin_us'):
        pufferlib.vector.make('CartPole-v1', num_envs=2, spin_us=5)
