"""Config values (pufferlib/config): what an int setting accepts from a flag or a config file."""
import pytest

from pufferlib import config as configuration
from pufferlib.config import ConfigError


@pytest.mark.parametrize('text', ['1e6', '1_000_000', '1000000', '1000000.0'])
def test_an_int_setting_takes_any_spelling_of_an_integer(text):
    config = configuration.load('puffer_squared', ['--train.total-timesteps', text])
    assert config['train']['total_timesteps'] == 1_000_000 and type(config['train']['total_timesteps']) is int


def test_an_int_setting_in_a_config_file_takes_an_integral_float(tmp_path):
    path = tmp_path / 'mine.toml'
    path.write_text('[train]\ntotal_timesteps = 2e6\n')
    config = configuration.load('puffer_squared', config_file=str(path))
    assert config['train']['total_timesteps'] == 2_000_000 and type(config['train']['total_timesteps']) is int


@pytest.mark.parametrize('text', ['1.5', '1e-3', 'nan', 'inf', 'many'])
def test_an_int_setting_refuses_what_is_not_an_integer(text):
    with pytest.raises(ConfigError, match='train.total_timesteps must be int'):
        configuration.load('puffer_squared', ['--train.total-timesteps', text])


def test_the_same_rule_holds_for_env_options():
    """pufferenv.typed_option is the one type rule of config files, flags and env keyword arguments."""
    from pufferlib import ocean
    env = ocean.make('puffer_pong', max_score=3.0)
    assert env.config['max_score'] == 3 and type(env.config['max_score']) is int
    env.close()


def test_a_table_of_a_config_file_as_flags_reads_back_the_same():
    """as_flags: the large mmo config's [policy] laid over the CPU config changes the network and nothing
    else (scripts/lab/acceptance_train.py's mmo_large run); booleans, floats, lists and strings survive."""
    import os
    large = os.path.join(os.path.dirname(configuration.__file__), 'puffer_mmo_large.toml')
    small = configuration.load('puffer_mmo')
    mixed = configuration.load('puffer_mmo', configuration.as_flags('policy', configuration.read(large)['policy']))
    assert mixed['policy'] == configuration.load('puffer_mmo', config_file=large)['policy'] != small['policy']
    assert all(mixed[s] == small[s] for s in ('env', 'vec', 'train', 'rnn'))
    values = {'flag': True, 'rate': 1e-05, 'sizes': [64, 32], 'name': 'a b', 'count': 3}
    flags = configuration.as_flags('policy', values)
    assert flags[:2] == ['--policy.flag', 'true']
    parsed = configuration.parse_flags(flags, configuration.defaults())['policy']
    assert parsed == {**configuration.defaults()['policy'], **values}
