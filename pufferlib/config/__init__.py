"""Experiment configuration: TOML files layered default -> family -> env -> --config -> flags.

A config is a dict of sections (`env`, `vec`, `train`, `policy`, `rnn`, `wandb`) of plain values.
Every key is also a flag: `--train.learning-rate 0.01` (dashes or underscores). In the strict
sections (everything but `env` and `policy`) unknown keys and values of the wrong type are errors
that name the key; `env` and `policy` are keyword arguments of the env and policy, checked there.
"""
import difflib
import importlib
import math
import os
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pufferlib.pufferenv import APIUsageError, option_kind, typed_option

HERE = os.path.dirname(os.path.abspath(__file__))
FREE_SECTIONS = ('env', 'policy')


class ConfigError(APIUsageError):
    """A config file or flag is wrong: an unknown key, a wrong type, an impossible combination."""


def read(path: str) -> dict:
    try:
        with open(path, 'rb') as f:
            return tomllib.load(f)
    except FileNotFoundError:
        raise ConfigError(f'config file {path} does not exist') from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f'config file {path} is not valid TOML: {e}') from None


def read_saved(directory: str, filename: str, flags: Sequence[str], allowed: tuple[str, ...], refusal: str,
               error: type[Exception], where: str) -> tuple[str, dict]:
    """(env, config) of a sweep or league directory: its `filename` (the resolved config with an [_meta]
    table naming the env), with the flags a resumed one may change (`allowed` prefixes) applied. Another
    flag is `error` with `refusal` after its name: a resumed directory keeps the config it ran with."""
    toml_path = os.path.join(directory, filename)
    if not os.path.exists(toml_path):
        kind = filename.split('.')[0]
        raise error(f'{directory} is not a {kind} directory (no {filename}); {kind}s live in {where}')
    config = read(toml_path)
    env = config.pop('_meta', {}).get('env')
    if not isinstance(env, str):
        raise error(f'{toml_path} names no env in its [_meta] table; it was edited or not written by puffer')
    bad = [f for f in flags if f.startswith('--') and not f.replace('_', '-').startswith(allowed)]
    if bad:
        raise error(f'{bad[0]}: {refusal}')
    return env, config


def defaults() -> dict:
    return read(os.path.join(HERE, 'default.toml'))


def merge(base: dict, override: dict, source: str) -> dict:
    """Merge `override` into a copy of `base`, checking keys and types against `base`."""
    out = {section: dict(values) for section, values in base.items()}
    for section, values in override.items():
        if section not in out:
            raise ConfigError(f'{source}: unknown section [{section}]{_suggest(section, out)}; '
                              f'sections are {", ".join(out)}')
        if not isinstance(values, dict):
            raise ConfigError(f'{source}: [{section}] must be a table of keys, got {values!r}')
        for key, value in values.items():
            out[section][key] = check(section, key, value, out[section], source)
    return out


# Sizes a config may leave to the machine: "auto" (or 0) here is sized by pufferlib.cpus (size_vec,
# size_minibatch) when a training run starts, and the run's saved config holds the numbers chosen.
AUTO_KEYS = (('vec', 'num_envs'), ('vec', 'num_workers'), ('vec', 'batch_size'), ('train', 'minibatch_size'))


def check(section: str, key: str, value: Any, current: dict, source: str) -> Any:
    if section in FREE_SECTIONS and key not in current:
        return value
    if (section, key) in AUTO_KEYS and value == 'auto':
        return 0
    if isinstance(current.get(key), dict) and isinstance(value, dict):
        return merge_tables(current[key], value)  # [sweep.train.gamma] in a later file: key by key
    if key not in current:
        raise ConfigError(f'{source}: unknown key {section}.{key}{_suggest(key, current)}')
    default = current[key]
    kind = option_kind(default)
    if kind is not None:
        typed = typed_option(value, kind)
        ok, value = typed is not None, value if typed is None else typed
    else:
        ok = isinstance(value, type(default))
    if not ok:
        flag = f' (from --{section}.{key.replace("_", "-")})' if source == 'flags' else ''
        kind_name = f'{type(default).__name__} or "auto"' if (section, key) in AUTO_KEYS else type(default).__name__
        raise ConfigError(f'{source}: {section}.{key} must be {kind_name} '
                          f'(like {default!r}), got {type(value).__name__} {value!r}{flag}')
    return value


def merge_tables(base: dict, override: dict) -> dict:
    """Nested tables (the [sweep] search space) merge key by key; pufferlib.sweep checks their contents."""
    out = dict(base)
    for key, value in override.items():
        out[key] = merge_tables(out[key], value) if isinstance(out.get(key), dict) and isinstance(value, dict) \
            else value
    return out


def _suggest(key: str, options: Iterable[str]) -> str:
    close = difflib.get_close_matches(key, list(options), n=3, cutoff=0.6)
    return f' (did you mean {", ".join(close)}?)' if close else ''


def parse_value(text: str, like: object) -> Any:
    """A flag's text as the type of `like` (the current value), or as TOML would read it."""
    if isinstance(like, bool):
        lowered = text.lower()
        if lowered in ('true', '1', 'yes', 'on'):
            return True
        if lowered in ('false', '0', 'no', 'off'):
            return False
        return text  # check() names the key and the expected type
    if isinstance(like, int):
        try:
            return int(text.replace('_', ''))
        except ValueError:
            pass
        try:  # 1e6: check() takes an integral float for an int key (pufferenv.typed_option), names others
            return float(text.replace('_', ''))
        except ValueError:
            return text
    if isinstance(like, float):
        try:
            return float(text)
        except ValueError:
            return text
    if isinstance(like, str):
        return text
    try:  # a free key: read it as TOML would (numbers, booleans, quoted strings), else a bare string
        return tomllib.loads(f'v = {text}')['v']
    except tomllib.TOMLDecodeError:
        return text


def parse_flags(args: list[str], config: dict) -> dict:
    """Apply `--section.key value` / `--section.key=value` flags; return the new config."""
    override: dict[str, dict[str, Any]] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        if not arg.startswith('--') or '.' not in arg:
            raise ConfigError(f'unexpected argument {arg!r}: options look like --train.learning-rate 0.01')
        name, _, value = arg[2:].partition('=')
        if not _:
            if i + 1 >= len(args):
                raise ConfigError(f'flag {arg} needs a value')
            value, i = args[i + 1], i + 1
        section, _, key = name.partition('.')
        key = key.replace('-', '_')
        like = config.get(section, {}).get(key)
        override.setdefault(section, {})[key] = parse_value(value, like)
        i += 1
    return merge(config, override, 'flags')


def as_flags(section: str, values: Mapping[str, Any]) -> list[str]:
    """`--section.key value` flags that parse_flags reads back into `values`: one table of a config file
    laid over another config (scripts/lab/acceptance_train.py trains the large mmo network on the CPU config)."""
    return [x for key, value in values.items()
            for x in (f'--{section}.{key}', value if isinstance(value, str) else _toml_value(value))]


def load(env_name: str | None, flags: Sequence[str] = (), config_file: str | None = None) -> dict:
    """The resolved config of an experiment on `env_name`: defaults, the env's declared options, its
    family's and its own config files (pufferlib.registry), --config, then flags."""
    config = defaults()
    layers = []
    if env_name is not None:  # None: a custom env creator, with no declared options or config files
        from pufferlib import registry
        entry = registry.lookup(env_name)
        config['env'] = {**entry.option_defaults(), **config['env']}
        layers = entry.config_layers()
    for path in layers:
        config = merge(config, read(path), os.path.relpath(path))
    if config_file:
        config = merge(config, read(config_file), config_file)
    config = parse_flags(list(flags), config)
    validate(config)
    return config


def validate(config: dict) -> None:
    """Checks that need more than one key; each error names the keys involved."""
    vec, train = config['vec'], config['train']
    for key in ('num_envs', 'num_workers', 'batch_size', 'num_processes'):
        if vec[key] < 0:
            raise ConfigError(f'vec.{key} must be >= 0 (0 = automatic), got {vec[key]}')
    if vec['backend'].lower() not in ('serial', 'multiprocessing', 'ray'):
        raise ConfigError(f'vec.backend must be Serial, Multiprocessing or Ray, got {vec["backend"]!r}')
    if vec['local_worker'] and vec['backend'].lower() != 'multiprocessing':
        raise ConfigError(f'vec.local_worker=true needs vec.backend=Multiprocessing, got {vec["backend"]!r}')
    if vec['num_processes'] and vec['backend'].lower() != 'multiprocessing':
        raise ConfigError(f'vec.num_processes={vec["num_processes"]} needs vec.backend=Multiprocessing, got '
                          f'{vec["backend"]!r}; leave it at 0 for other backends')
    _check_numbers(config)
    if train['minibatch_size'] < 0:
        raise ConfigError(f'train.minibatch_size must be positive, or 0 or "auto" (sized from the rollout), got '
                          f'{train["minibatch_size"]}')
    positive = ('total_timesteps', 'bptt_horizon', 'update_epochs', 'checkpoint_interval',
                'keep_checkpoints', 'learning_rate', 'max_grad_norm', 'vtrace_rho_clip', 'vtrace_c_clip')
    for key in positive:
        if train[key] <= 0:
            raise ConfigError(f'train.{key} must be positive, got {train[key]}')
    for key in NON_NEGATIVE:
        if train[key] < 0:
            raise ConfigError(f'train.{key} must be >= 0, got {train[key]}')
    if not 0 <= train['seed'] < 2**32:
        raise ConfigError(f'train.seed must be in [0, 2**32), got {train["seed"]}')
    for key in ('adam_beta1', 'adam_beta2'):
        if not 0 <= train[key] < 1:
            raise ConfigError(f'train.{key} must be in [0, 1), got {train[key]}')
    # Layer sizes: [rnn] always, [policy] for its int keys named *_size (a class may take others).
    sizes = [('rnn', key) for key in ('input_size', 'hidden_size')]
    sizes += [('policy', key) for key, value in config['policy'].items()
              if key.endswith('_size') and isinstance(value, int) and not isinstance(value, bool)]
    for section, key in sizes:
        if config[section][key] <= 0:
            raise ConfigError(f'{section}.{key} must be positive, got {config[section][key]}')
    if train['torch_threads'] < 0:
        raise ConfigError(f'train.torch_threads must be >= 0 (0 = automatic), got {train["torch_threads"]}')
    if train['lr_schedule'] not in ('cosine', 'linear'):
        raise ConfigError(f'train.lr_schedule must be cosine or linear, got {train["lr_schedule"]!r}')
    if train['minibatch_sampling'] not in ('segments', 'steps'):
        raise ConfigError(f'train.minibatch_sampling must be segments or steps, got {train["minibatch_sampling"]!r}')
    if train['minibatch_sampling'] == 'steps' and train['prio_alpha'] > 0:
        raise ConfigError(f'train.minibatch_sampling="steps" draws every step once an epoch, without priorities: '
                          f'set train.prio_alpha=0 (got {train["prio_alpha"]}) or sample segments')
    if not train['reward_clip'] >= 0:
        raise ConfigError(f'train.reward_clip must be >= 0 (0: no clip), got {train["reward_clip"]}')
    if train['recompute_advantages'] and train['minibatch_sampling'] != 'steps':
        raise ConfigError('train.recompute_advantages needs train.minibatch_sampling="steps" (segment minibatches '
                          'already recompute theirs before every minibatch)')
    if train['minibatch_sampling'] == 'segments' and train['minibatch_size'] % train['bptt_horizon']:
        raise ConfigError(f'train.minibatch_size={train["minibatch_size"]} must be a multiple of '
                          f'train.bptt_horizon={train["bptt_horizon"]} (minibatches are whole segments)')
    for key in ('gamma', 'gae_lambda', 'prio_beta0'):
        if not 0 <= train[key] <= 1:
            raise ConfigError(f'train.{key} must be in [0, 1], got {train[key]}')
    if train['optimizer'] not in ('muon', 'adam'):
        raise ConfigError(f'train.optimizer must be muon or adam, got {train["optimizer"]!r}')
    if train['precision'] not in ('float32', 'bfloat16'):
        raise ConfigError(f'train.precision must be float32 or bfloat16, got {train["precision"]!r}')
    if 'swarm' in config:
        check_swarm(config['swarm'])
    for section in ('policy', 'rnn'):
        path = config[section].get('class', '')
        if path and ':' not in path:
            raise ConfigError(f'{section}.class must look like "package.module:ClassName", got {path!r}')


SWARM_MODES = ('off', 'swarm', 'go_explore')


def check_swarm(swarm: dict) -> None:
    """The [swarm] options (pufferlib/explore.py reads them); what the env must offer is checked there."""
    if swarm['mode'] not in SWARM_MODES:
        raise ConfigError(f'swarm.mode must be one of {", ".join(SWARM_MODES)}, got {swarm["mode"]!r}')
    if swarm['interval'] < 1:
        raise ConfigError(f'swarm.interval must be >= 1 agent step, got {swarm["interval"]}')
    if not 0 < swarm['fraction'] <= 1:
        raise ConfigError(f'swarm.fraction must be in (0, 1] (the share of games moved each time), '
                                        f'got {swarm["fraction"]}')
    if not 0 < swarm['top_fraction'] < 1:
        raise ConfigError(f'swarm.top_fraction must be in (0, 1) (the share of games copied), got '
                                        f'{swarm["top_fraction"]}')
    if swarm['mode'] == 'swarm' and swarm['fraction'] + swarm['top_fraction'] > 1:
        raise ConfigError(
            f'swarm.fraction + swarm.top_fraction must be at most 1 (the games moved and the games copied do not '
            f'overlap), got {swarm["fraction"]} + {swarm["top_fraction"]}')
    if swarm['archive_size'] < 1:
        raise ConfigError(f'swarm.archive_size must be >= 1 cell, got {swarm["archive_size"]}')


NON_NEGATIVE = ('clip_coef', 'vf_coef', 'vf_clip_coef', 'ent_coef', 'prio_alpha', 'weight_decay', 'adam_eps',
                'log_interval')
INFINITE_OK = ('vtrace_rho_clip', 'vtrace_c_clip')  # inf turns the clipping off


def _check_numbers(config: dict) -> None:
    """nan, inf or 1e400 (inf once parsed) in a float setting is a typo, never a setting that trains."""
    for section in ('vec', 'train', 'policy', 'rnn'):
        for key, value in config[section].items():
            if not isinstance(value, float) or math.isfinite(value):
                continue
            if key in INFINITE_OK and section == 'train' and value == math.inf:
                continue
            allowed = ' (inf is allowed: no clipping)' if key in INFINITE_OK else ''
            raise ConfigError(f'{section}.{key} must be a finite number, got {value}{allowed}')


def import_class(path: str, key: str) -> type:
    module_name, _, name = path.partition(':')
    try:
        return getattr(importlib.import_module(module_name), name)
    except (ImportError, AttributeError) as e:
        raise ConfigError(f'{key}={path!r} cannot be imported: {e}') from None


def to_toml(config: dict) -> str:
    """A config as TOML text (flat sections of plain values), for the run directory."""
    lines = []

    def table(name: str, values: dict) -> None:
        lines.append(f'[{name}]')
        lines.extend(f'{key} = {_toml_value(value)}' for key, value in values.items() if not isinstance(value, dict))
        lines.append('')
        for key, value in values.items():
            if isinstance(value, dict):  # nested tables ([sweep.train.learning_rate]) after the plain keys
                table(f'{name}.{key}', value)

    for section, values in config.items():
        table(section, values)
    return '\n'.join(lines)


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return '"' + value.replace('\\', '\\\\').replace('"', '\\"') + '"'
    if isinstance(value, (list, tuple)):
        return '[' + ', '.join(_toml_value(v) for v in value) + ']'
    raise ConfigError(f'cannot write {value!r} to TOML')


def flag_help(config: dict, env_options: dict | None = None) -> str:
    """Every flag with its current value, for --help; `env_options` (name -> (type and range, help),
    from an Ocean spec) adds what the env declares about its own keys."""
    env_options = env_options or {}
    lines = []
    for section, values in config.items():
        for key, value in values.items():
            if isinstance(value, dict):  # nested tables (the sweep's search space) are no flags
                continue
            line = f'  --{section}.{key.replace("_", "-")} {value!r}'
            if section == 'env' and key in env_options:
                kind, text = env_options[key]
                line = f'{line:<44} {kind}: {text}'
            lines.append(line)
    return '\n'.join(lines)
