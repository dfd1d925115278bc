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


def test_the_sizes_left_to_the_machine_take_auto_in_flags_and_files(tmp_path):
    path = tmp_path / 'sized.toml'
    path.write_text('[vec]\nnum_envs = "auto"\n[train]\nminibatch_size = "auto"\n')
    config = configuration.load('CartPole-v1', ['--vec.num-workers', 'auto', '--vec.batch-size=auto'],
                                config_file=str(path))
    assert [config['vec'][key] for key in ('num_envs', 'num_workers', 'batch_size')] == [0, 0, 0]
    assert config['train']['minibatch_size'] == 0  # pufferlib.cpus sizes it when a run starts


def test_auto_is_refused_where_nothing_sizes_it_and_a_typo_names_auto():
    with pytest.raises(ConfigError, match=r'train.bptt_horizon must be int \(like'):
        configuration.load('CartPole-v1', ['--train.bptt-horizon', 'auto'])
    with pytest.raises(ConfigError, match=r'vec.num_envs must be int or "auto" .*got str \'atuo\''):
        configuration.load('CartPole-v1', ['--vec.num-envs', 'atuo'])
    with pytest.raises(ConfigError, match=r'train.minibatch_size must be positive, or 0 or "auto"'):
        configuration.load('CartPole-v1', ['--train.minibatch-size', '-256'])
