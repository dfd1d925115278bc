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
