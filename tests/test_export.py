"""`puffer export` and the C inference header: ONNX files and the native format give the torch policy's
outputs, the native format refuses what does not fit, ocean/puffernet.h matches torch on every Ocean env
(and in the C program of docs/export.md), and `puffer eval --native` plays the same games as torch."""
import json
import math
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
import torch
from gymnasium import spaces

import pufferlib
from pufferlib import config as configuration
from pufferlib import export, models, native, ocean, rundir
from pufferlib.checkpoint import find_checkpoint
from pufferlib.distributions import MixedLogits
from pufferlib.cli import main
from pufferlib.evaluate import evaluate
from pufferlib.export import ExportError
from pufferlib.models import Default, LSTMWrapper, layer_init, make_policy
from pufferlib.native import NativeError, NativeNet
from pufferlib.ocean import tools as ocean_tools
from pufferlib.pufferenv import MixedSpace

from small_run import train_small

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PARITY = 1e-5            # max abs difference allowed between torch and ONNX / C outputs
OBSERVATIONS = 10_000    # per env in the parity test, from real episodes
ROWS = 100               # agent rows stepped together while collecting them


def make_env(name, config, rows=ROWS):
    """The env of `config` with about `rows` agent rows (Ocean) or a single one (Gymnasium)."""
    if not name.startswith('puffer_'):
        return pufferlib.make(name, **config['env'])
    one = pufferlib.make(name, **{**config['env'], 'num_envs': 1})
    per_env = one.num_agents
    one.close()
    return pufferlib.make(name, **{**config['env'], 'num_envs': max(1, rows // per_env)})


def random_actions(env, rng):
    """Uniform random actions for every row; legal ones where the env publishes masks (so games last)."""
    space = env.single_action_space
    legal = getattr(env, 'action_masks', None)
    if isinstance(space, spaces.Discrete):
        scores = rng.random((env.num_agents, int(space.n)))
        if legal is not None:
            scores = np.where(legal, scores + 1, scores)
        return scores.argmax(1).reshape(env.actions.shape).astype(env.actions.dtype)
    if isinstance(space, spaces.MultiDiscrete):
        return rng.integers(0, space.nvec, size=(env.num_agents, len(space.nvec))).astype(env.actions.dtype)
    if isinstance(space, MixedSpace):
        return ocean_tools.random_actions(space, env.num_agents, 1, int(rng.integers(2 ** 31)))[0]
    return rng.uniform(space.low, space.high, size=(env.num_agents, *space.shape)).astype(env.actions.dtype)


def flat_logits(logits):
    if isinstance(logits, MixedLogits):
        return torch.cat([*logits.discrete, logits.continuous.mean], dim=-1)
    if isinstance(logits, torch.distributions.Distribution):
        return logits.mean.reshape(logits.mean.shape[0], -1)
    if isinstance(logits, (tuple, list)):
        return torch.cat(list(logits), dim=-1)
    return logits


def play(env, steps, seed=0):
    """(observation batch, rows whose episode ended with it) for `steps` steps of random play."""
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    for _ in range(steps):
        batch = obs.copy()
        obs, _, terminals, truncations, _ = env.step(random_actions(env, rng))
        yield batch, np.flatnonzero(np.asarray(terminals | truncations).reshape(-1))


def torch_vs_c(policy, env, steps, seed=0):
    """(max abs logit difference, max abs value difference, largest logit, observations) of the torch
    policy and puffernet.h over `steps` steps of random play, LSTM state carried and reset as in play."""
    policy.eval()
    net = NativeNet(export.native_bytes(policy)[1], env.num_agents, native.twin_header(policy))
    state = policy.initial_state(env.num_agents) if isinstance(policy, LSTMWrapper) else None
    worst_logit = worst_value = largest = 0.0
    count = 0
    for obs, ended in play(env, steps, seed):
        with torch.no_grad():
            tensor = torch.from_numpy(obs)
            logits, value = policy.forward_eval(tensor, state) if state is not None else policy(tensor)
        expected = flat_logits(logits).numpy()
        c_logits, c_values = net.forward(obs)
        worst_logit = max(worst_logit, float(np.abs(c_logits - expected).max()))
        worst_value = max(worst_value, float(np.abs(c_values - value.numpy()).max()))
        largest = max(largest, float(np.abs(expected).max()))
        count += len(obs)
        for row in ended:
            net.reset(int(row))
            if state is not None:
                for tensor in state.values():
                    tensor[row] = 0
    return worst_logit, worst_value, largest, count


def unit_scale_heads(policy):
    """The action head at gain 1 instead of 0.01, so logits are O(1) and 1e-5 is a real bound, and every
    bias random instead of 0, so the biases' place in the file is tested too (and a constant observation,
    like the bandit's, still gives logits that are not 0)."""
    core = policy.policy if isinstance(policy, LSTMWrapper) else policy
    layer_init(core.actor, 1.0)
    with torch.no_grad():
        for name, parameter in policy.named_parameters():
            if 'bias' in name:
                parameter.normal_(0.0, 0.5)
    return policy


@pytest.fixture(autouse=True, scope='module')
def one_torch_thread():
    """Small batches on a shared machine: torch's threads would only wait for each other."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope='module')
def trained(tmp_path_factory):
    """A tiny trained run of puffer_memory (the LSTM config): its run directory."""
    folder = tmp_path_factory.mktemp('experiments')
    old = os.environ.get('PUFFER_EXPERIMENTS')
    os.environ['PUFFER_EXPERIMENTS'] = str(folder)
    try:
        summary = train_small('puffer_memory', '--train.seed', '1', steps=4096)
    finally:
        if old is None:
            del os.environ['PUFFER_EXPERIMENTS']
        else:
            os.environ['PUFFER_EXPERIMENTS'] = old
    return summary['run_dir']


# ---------------------------------------------------------------------------------------------
# ONNX
# ---------------------------------------------------------------------------------------------

class MultiDiscreteSpaces:
    """No Ocean env has a MultiDiscrete action with plain (unstructured) rows: its spaces, for the model."""
    single_observation_space = spaces.Box(-1, 1, (12,), np.float32)
    single_action_space = spaces.MultiDiscrete([3, 4, 2])


@pytest.mark.parametrize('name', ['puffer_squared', 'puffer_memory', 'multidiscrete', 'Pendulum-v1', 'puffer_mixed'])
def test_onnx_gives_the_torch_outputs(tmp_path, name):
    """Default MLP (uint8 rows), the LSTM config (state in and out over 30 steps), a MultiDiscrete action
    (every head), a Box action (mean, log-std) and a mixed one (the discrete logits, then mean and log-std):
    onnxruntime's outputs are torch's within 1e-5."""
    ort = pytest.importorskip('onnxruntime', reason='pip install -e ".[export]"')
    torch.manual_seed(0)
    if name == 'multidiscrete':
        env = MultiDiscreteSpaces()
        policy = unit_scale_heads(Default(env))
        rng = np.random.default_rng(0)
        batches = [rng.uniform(-1, 1, (33, 12)).astype(np.float32) for _ in range(5)]
    else:
        config = configuration.load(name)
        env = make_env(name, config, rows=33)
        policy = unit_scale_heads(make_policy(env, config))
        if name == 'Pendulum-v1':  # one row per step: batch a few steps' rows together
            batches = [np.stack([obs[0] for obs, _ in play(env, 40, seed)]) for seed in range(3)]
        else:
            batches = [obs for obs, _ in play(env, 30)]
    policy.eval()
    path = export.write_onnx(policy, env, str(tmp_path / 'policy.onnx'))
    session = ort.InferenceSession(path)
    inputs, outputs = export.onnx_names(policy)
    assert [i.name for i in session.get_inputs()] == inputs
    assert [o.name for o in session.get_outputs()] == outputs
    recurrent = isinstance(policy, LSTMWrapper)
    state = policy.initial_state(len(batches[0])) if recurrent else None
    h = c = np.zeros((len(batches[0]), getattr(policy, 'hidden_size', 0)), np.float32)
    worst = 0.0
    for obs in batches:
        feed = {'obs': obs, **({'lstm_h': h, 'lstm_c': c} if recurrent else {})}
        got = session.run(None, feed)
        with torch.no_grad():
            logits, value = policy.forward_eval(torch.from_numpy(obs), state) if recurrent else policy(
                torch.from_numpy(obs))
        if isinstance(logits, MixedLogits):
            expected = [*logits.discrete, logits.continuous.mean, logits.continuous.stddev.log()]
        elif isinstance(logits, torch.distributions.Distribution):
            expected = [logits.mean, logits.stddev.log()]
        elif isinstance(logits, (tuple, list)):
            expected = list(logits)
        else:
            expected = [logits]
        expected.append(value)
        if recurrent:
            expected += [state['lstm_h'], state['lstm_c']]
            h, c = got[-2], got[-1]
        assert len(got) == len(expected) == len(outputs)
        for mine, theirs in zip(got, expected):
            assert mine.shape == tuple(theirs.shape)
            worst = max(worst, float(np.abs(mine - theirs.numpy()).max()))
    assert worst <= PARITY, worst


def test_onnx_refuses_structured_rows(tmp_path):
    config = configuration.load('puffer_spaces')
    env = make_env('puffer_spaces', config, rows=1)
    with pytest.raises(ExportError, match='ONNX cannot read structured observation rows.*--format native'):
        export.write_onnx(make_policy(env, config), env, str(tmp_path / 'policy.onnx'))
    assert not os.path.exists(tmp_path / 'policy.onnx')


# ---------------------------------------------------------------------------------------------
# The native format and ocean/puffernet.h
# ---------------------------------------------------------------------------------------------

def check_parity(name, config, observations):
    """`observations` from random play of `config` on `name` with the policy it builds (random weights, action
    head at gain 1): puffernet.h's logits and values are torch's within 1e-5 (relative beyond a logit of 1),
    LSTM state included."""
    torch.manual_seed(0)
    env = make_env(name, config)
    try:
        policy = unit_scale_heads(make_policy(env, config))
        steps = math.ceil(observations / env.num_agents)
        worst_logit, worst_value, largest, count = torch_vs_c(policy, env, steps)
    finally:
        env.close()
    print(f'{name}: max abs difference {worst_logit:.2e} (logits up to {largest:.2f}), {worst_value:.2e} (value)')
    assert count >= observations
    assert largest > 0.1  # the bound is tested on logits of a real size
    # float32 keeps about 7 significant digits, so past a logit of 1 the bound scales with the logits, where
    # two float32 sums of the same products in another order differ by more than 1e-5.
    assert worst_logit <= PARITY * max(1.0, largest), (worst_logit, largest)
    assert worst_value <= PARITY * max(1.0, largest), worst_value


@pytest.mark.parametrize('name', ocean.env_names())
def test_the_c_header_gives_torchs_logits_on_every_ocean_env(name):
    """Every Ocean env's default config and policy, its own class through its C twin where it has one
    (puffer_mmo's encoder and pointer, tripletriad's terms): 10,000 observations."""
    check_parity(name, configuration.load(name), OBSERVATIONS)


def test_the_c_header_gives_torchs_logits_on_mmos_large_config():
    """puffer_mmo's GPU config: the crop through two convolutions, 1.6M parameters. 2,000 observations, not
    10,000: a row costs about 4M multiply-adds on each side, so 10,000 took half a minute on two shared
    cores; the convolutions are the same code for every row, so more rows test the same sums."""
    config = configuration.load('puffer_mmo', config_file=os.path.join(ROOT, 'pufferlib', 'config',
                                                                       'puffer_mmo_large.toml'))
    assert config['policy']['channels'] > 0
    check_parity('puffer_mmo', config, 2000)


def test_export_command_writes_files_that_load_and_match_a_trained_policy(trained, tmp_path, capsys):
    """`puffer export` of a trained LSTM run: both formats; the native files load for the env and give its
    logits within 1e-5 over 10,000 observations; the manifest says what the docs say it holds."""
    out = tmp_path / 'out'
    assert main(['export', 'puffer_memory', '--checkpoint', trained, '--out', str(out)]) == 0
    written = re.findall(r'wrote (\S+)', capsys.readouterr().out)
    assert sorted(os.path.basename(p) for p in written) == ['policy.bin', 'policy.json', 'policy.onnx']
    config = configuration.load('puffer_memory')
    env = make_env('puffer_memory', config)
    try:
        loaded = export.load_native(str(out), env, 'puffer_memory')
        manifest = loaded.manifest
        assert manifest['version'] == export.FORMAT_VERSION and manifest['env']['name'] == 'puffer_memory'
        assert [layer['kind'] for layer in manifest['layers']] == ['linear', 'lstm']
        assert manifest['layers'][0]['activation'] == 'gelu'
        assert manifest['observation']['leaves'] == [{'path': '', 'dtype': 'uint8', 'offset': 0,
                                                      'count': env.single_observation_space.shape[0]}]
        assert manifest['source']['global_step'] > 0
        policy = make_policy(env, config)
        policy.load_state_dict(torch.load(rundir.latest_checkpoint(trained), weights_only=True)['policy'])
        assert loaded.weights == export.native_bytes(policy)[1]  # the file is this policy's weights
        worst_logit, worst_value, _, count = torch_vs_c(policy, env, math.ceil(OBSERVATIONS / env.num_agents))
    finally:
        env.close()
    assert count >= OBSERVATIONS
    assert worst_logit <= PARITY and worst_value <= PARITY, (worst_logit, worst_value)


def exported(tmp_path, name='puffer_squared', **options):
    """A randomly initialised Default policy of `name` written in the native format: (folder, env, policy)."""
    config = configuration.load(name)
    env = pufferlib.make(name, **{**config['env'], 'num_envs': 2, **options})
    torch.manual_seed(0)
    policy = make_policy(env, config)
    export.write_native(policy, env, name, str(tmp_path))
    return str(tmp_path), env, policy


def test_loading_refuses_another_env_damaged_files_and_a_future_version(tmp_path):
    folder, env, _ = exported(tmp_path / 'a', size=9)
    export.load_native(folder, env, 'puffer_squared')  # the right env loads
    other = pufferlib.make('puffer_squared', num_envs=1, size=11)
    with pytest.raises(ExportError, match=r'observation shape \[81\]; this env has \[121\]: make the env with the '
                                          r'options it was exported with \(.*size=9'):
        export.load_native(folder, other, 'puffer_squared')
    with pytest.raises(ExportError, match='exported for puffer_squared, not puffer_snake: play it on puffer_squared'):
        export.load_native(folder, env, 'puffer_snake')
    manifest_path = os.path.join(folder, export.MANIFEST)
    weights_path = os.path.join(folder, export.WEIGHTS)
    weights = open(weights_path, 'rb').read()

    open(weights_path, 'wb').write(weights[:-10])
    with pytest.raises(ExportError, match='bytes, the manifest says .*truncated.*export the checkpoint again'):
        export.load_native(folder)
    open(weights_path, 'wb').write(weights[:200] + bytes([weights[200] ^ 1]) + weights[201:])
    with pytest.raises(ExportError, match='does not match its manifest.s checksum'):
        export.load_native(folder)
    os.remove(weights_path)
    with pytest.raises(ExportError, match='weights file .* is missing'):
        export.load_native(folder)
    open(weights_path, 'wb').write(weights)

    manifest = json.load(open(manifest_path))
    json.dump({**manifest, 'version': export.FORMAT_VERSION + 1}, open(manifest_path, 'w'))
    with pytest.raises(ExportError, match=f'version {export.FORMAT_VERSION + 1}, written by a newer pufferlib; '
                                          f'this one reads version {export.FORMAT_VERSION}: upgrade pufferlib'):
        export.load_native(folder)
    open(manifest_path, 'w').write('{"format": ')
    with pytest.raises(ExportError, match='is not a readable manifest'):
        export.load_native(folder)
    with pytest.raises(ExportError, match='does not exist: pass the folder `puffer export` wrote'):
        export.load_native(str(tmp_path / 'nowhere'))
    env.close()
    other.close()


def test_the_c_header_refuses_damaged_weights_itself(tmp_path):
    """What a C program gets without the manifest's checks: one message from puffernet_load."""
    _, env, policy = exported(tmp_path)
    data = export.native_bytes(policy)[1]
    env.close()
    NativeNet(data, 4)
    words = np.frombuffer(data, dtype='<u4').copy()
    cases = [
        (data[:-4], 'truncated or corrupt'),
        (data[:12], 'too short'),
        (b'XXXX' + data[4:], 'bad magic'),
        (np.concatenate([words[:1], [export.FORMAT_VERSION + 1], words[2:]]).astype('<u4').tobytes(),
         'another format version than this puffernet.h reads; export it again'),
        (np.concatenate([words[:10], [0], words[11:]]).astype('<u4').tobytes(), 'observation layout is corrupt'),
        (np.concatenate([words[:6], [1], words[7:]]).astype('<u4').tobytes(), 'twin is corrupt'),
    ]
    for broken, reason in cases:
        with pytest.raises(NativeError, match=f'puffernet.h refused the weights: .*{reason}'):
            NativeNet(broken, 4)


class Tiny(models.Policy):
    """A policy class of its own with no C twin: what the native format cannot hold."""

    def __init__(self, env, hidden_size=8):
        super().__init__(env, hidden_size)
        self.encoder = torch.nn.Linear(int(np.prod(self.obs_space.shape)), hidden_size)

    def encode_observations(self, obs, state=None):
        return torch.tanh(self.encoder(obs.reshape(obs.shape[0], -1).float()))


def test_policies_the_native_format_cannot_hold_are_refused_before_writing(tmp_path):
    env = pufferlib.make('puffer_squared', num_envs=1)
    try:
        with pytest.raises(ExportError, match='holds the Default MLP .* and policy classes with a C twin, not Tiny: '
                                              'export it with --format onnx'):
            export.write_native(Tiny(env), env, 'puffer_squared', str(tmp_path))
        wrapped = LSTMWrapper(env, Tiny(env), 8, 8)
        with pytest.raises(ExportError, match='not LSTMWrapper around Tiny'):
            export.write_native(wrapped, env, 'puffer_squared', str(tmp_path))
    finally:
        env.close()
    assert os.listdir(tmp_path) == []


def test_the_default_policy_hint_is_given_only_where_the_flag_trains(tmp_path):
    """The refusal suggests --policy.class pufferlib.models:Default only for a run whose [policy] options
    Default takes: pasted on a MuJoCo run, the flag fails on the family's log_std_init."""
    pytest.importorskip('mujoco')
    flag = ['--policy.class', 'pufferlib.models:Default']
    mujoco_config = configuration.load('mujoco_hopper')
    env = pufferlib.make('mujoco_hopper')
    try:
        with pytest.raises(ExportError) as refused:
            export.write_native(make_policy(env, mujoco_config), env, 'mujoco_hopper', str(tmp_path))
        message = str(refused.value)
        assert message.endswith('export it with --format onnx') and '--policy.class' not in message, message
        with pytest.raises(configuration.ConfigError, match='log_std_init'):
            make_policy(env, configuration.load('mujoco_hopper', flag))  # what the old hint led to
    finally:
        env.close()
    env = pufferlib.make('puffer_squared', num_envs=1)
    try:
        tiny = Tiny(env, hidden_size=8)
        models.carry_settings(tiny, {'policy': {'class': 'tests:Tiny', 'hidden_size': 8}, 'rnn': {'class': ''}})
        with pytest.raises(ExportError, match=r'not Tiny: export it with --format onnx, or train with '
                                              r'--policy.class pufferlib.models:Default$'):
            export.write_native(tiny, env, 'puffer_squared', str(tmp_path))
        assert isinstance(make_policy(env, configuration.load('puffer_squared', [*flag, '--policy.hidden-size', '8'])),
                          Default)
    finally:
        env.close()
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize('name', ['puffer_tripletriad', 'puffer_mmo'])
def test_a_policy_class_with_a_c_twin_needs_it_in_the_build(name, tmp_path):
    """tripletriad's terms on Default's encoder, puffer_mmo's own encoder and pointer: the export names the class
    and its twin, load_native finds the twin (policy.h beside the class), and a build of puffernet.h without it,
    or with another env's twin, refuses the weights with one line that says what to build."""
    config = configuration.load(name)
    env = pufferlib.make(name, num_envs=1)
    try:
        policy = make_policy(env, config)
        export.write_native(policy, env, name, str(tmp_path))
        loaded = export.load_native(str(tmp_path), env, name)
    finally:
        env.close()
    short = name.removeprefix('puffer_')
    twin = loaded.manifest['twin']
    assert twin['name'] == name and twin['class'] == f'pufferlib.ocean.{short}.policy:Policy'
    assert twin['encoder'] == (name == 'puffer_mmo') and (loaded.manifest['layers'] == []) == twin['encoder']
    path = loaded.twin_header()
    assert path == native.twin_header(policy) and path.endswith(os.path.join(short, 'policy.h'))
    NativeNet(loaded.weights, 4, path)
    with pytest.raises(NativeError, match=r'refused the weights: the weights are of a policy class with a C twin '
                                          r'\(policy.h beside its Python module\): #define PUFFERNET_TWIN'):
        NativeNet(loaded.weights, 4)
    other = os.path.join(ROOT, 'ocean', 'mmo' if name == 'puffer_tripletriad' else 'tripletriad', 'policy.h')
    with pytest.raises(NativeError, match='another C twin than this build.s PUFFERNET_TWIN'):
        NativeNet(loaded.weights, 4, other)
    broken = {**loaded.manifest, 'twin': {**twin, 'class': 'pufferlib.no_such_module:Policy'}}
    with pytest.raises(ExportError, match='no_such_module:Policy, whose module .* cannot be imported'):
        export.NativePolicy(broken, loaded.weights, 'policy.json').twin_header()


def test_a_twin_declaration_that_does_not_fit_is_one_clear_error(monkeypatch):
    """A policy class's NATIVE_TWIN names its sizes and tensors; a wrong one, or a twin missing beside the
    module, is refused with what to fix."""
    from pufferlib.ocean.mmo.policy import Policy
    assert native.twin_header(make_policy(pufferlib.make('puffer_squared', num_envs=1),
                                          configuration.load('puffer_squared'))) is None
    env = pufferlib.make('puffer_mmo', num_envs=1)
    policy = make_policy(env, configuration.load('puffer_mmo'))
    env.close()
    declared = Policy.NATIVE_TWIN
    for change, match in (({'params': ('hidden_size', 'no_such_size')}, "param 'no_such_size' is None"),
                          ({'tensors': ('terrain', 'nowhere')}, "tensor 'nowhere' is no module or parameter"),
                          ({'encoder': 'yes'}, 'NATIVE_TWIN must be a dict of name'),
                          ({'params': tuple(range(40))}, 'puffernet.h holds at most 32')):
        monkeypatch.setattr(Policy, 'NATIVE_TWIN', {**declared, **change})
        with pytest.raises(ExportError, match=match):
            export.native_plan(policy)
    monkeypatch.setattr(Policy, 'NATIVE_TWIN', declared)
    monkeypatch.setattr(export, 'twin_path', lambda module: '/nonexistent/policy.h')
    with pytest.raises(ExportError, match='declares a C twin, but /nonexistent/policy.h is missing: put its policy.h '
                                          'beside the module'):
        export.native_plan(policy)


def test_argmax_masks_and_sampling_with_the_callers_rng():
    """Argmax is torch's argmax; masked actions are never chosen; draws follow the softmax and the same
    seed gives the same draws; Box actions are mean + std * noise."""
    env = MultiDiscreteSpaces()
    torch.manual_seed(0)
    policy = unit_scale_heads(Default(env))
    net = NativeNet(export.native_bytes(policy)[1], 1000)
    obs = np.random.default_rng(0).uniform(-1, 1, (1000, 12)).astype(np.float32)
    logits, _ = net.forward(obs)
    with torch.no_grad():
        expected = policy(torch.from_numpy(obs))[0]
    argmax = np.stack([head.argmax(-1).numpy() for head in expected], axis=1)
    assert (net.act(obs) == argmax).all()

    masks = np.ones((1000, 9), dtype=bool)
    masks[:, 0] = masks[:, 3] = False  # the first action of heads 0 and 1
    for rng in (None, native.seed_state(1)):
        chosen = net.act(obs, masks, rng)
        assert (chosen[:, 0] != 0).all() and (chosen[:, 1] != 0).all()

    one = np.repeat(obs[:1], 1000, axis=0)  # one row's distribution, drawn 20,000 times
    draws = np.concatenate([net.act(one, rng=native.seed_state(seed)) for seed in range(20)])
    assert (draws == np.concatenate([net.act(one, rng=native.seed_state(seed)) for seed in range(20)])).all()
    probs = torch.softmax(expected[1][0], -1).numpy()
    frequencies = np.bincount(draws[:, 1], minlength=4) / len(draws)
    assert np.abs(frequencies - probs).max() < 0.02, (frequencies, probs)
    assert (net.sample(logits[:1].repeat(1000, 0), rng=native.seed_state(0)) ==
            net.act(one, rng=native.seed_state(0))).all()

    box = pufferlib.make('Pendulum-v1')
    box_policy = Default(box)
    with torch.no_grad():
        box_policy.log_std.fill_(-1.0)
    box_net = NativeNet(export.native_bytes(box_policy)[1], 1000)
    row = np.zeros((1000, 3), dtype=np.float32)
    mean = box_net.act(row)
    samples = np.concatenate([box_net.act(row, rng=native.seed_state(seed)) for seed in range(10)])
    assert np.abs(samples.std() - math.exp(-1.0)) < 0.01 and np.abs(samples.mean() - mean[0, 0]) < 0.01
    box.close()


def c_example():
    """The C program of docs/export.md."""
    text = open(os.path.join(ROOT, 'docs', 'export.md')).read()
    found = re.search(r'```c\n(/\* policy_demo\.c.*?)```', text, re.S)
    assert found, 'docs/export.md lost its policy_demo.c example'
    return found.group(1)


@pytest.mark.parametrize('name', ['puffer_memory', 'puffer_mmo'])
def test_the_docs_c_example_runs_under_the_sanitizers(name, request, tmp_path):
    """docs/export.md's program, built with -fsanitize=address,undefined, reads a policy's weights and one
    agent's observations and prints torch's logits and argmax actions: a trained LSTM policy, and puffer_mmo's
    own policy (random weights) with its C twin built in as docs/export.md says."""
    compiler = native.c_compiler()
    if shutil.which(compiler[0]) is None:
        pytest.skip(f'no C compiler ({compiler[0]})')
    config = configuration.load(name)
    out = tmp_path / 'export'
    env = make_env(name, config, rows=1)
    if name == 'puffer_memory':
        trained = request.getfixturevalue('trained')
        export.export(name, trained, format='native', out=str(out))
        policy = make_policy(env, config)
        policy.load_state_dict(torch.load(rundir.latest_checkpoint(trained), weights_only=True)['policy'])
    else:
        torch.manual_seed(0)
        policy = unit_scale_heads(make_policy(env, config))
        export.write_native(policy, env, name, str(out))
    rows = np.stack([obs[0] for obs, _ in play(env, 200)])
    env.close()
    twin = native.twin_header(policy)
    (tmp_path / 'policy_demo.c').write_text(c_example())
    program = str(tmp_path / 'policy_demo')
    build = subprocess.run([*compiler, '-std=c99', '-O1', '-g', '-fsanitize=address,undefined',
                            '-fno-sanitize-recover=all', '-I', os.path.join(ROOT, 'ocean'),
                            *([f'-DPUFFERNET_TWIN="{twin}"'] if twin else []),
                            str(tmp_path / 'policy_demo.c'), '-o', program, '-lm'], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    run = subprocess.run([program, str(out / export.WEIGHTS)], input=rows.tobytes(), capture_output=True,
                         timeout=120, env={**os.environ, 'ASAN_OPTIONS': 'detect_leaks=1'})
    assert run.returncode == 0, run.stderr.decode()
    lines = run.stdout.decode().splitlines()
    assert len(lines) == len(rows)
    policy.eval()
    memory = policy.initial_state(1) if isinstance(policy, LSTMWrapper) else None
    for line, obs in zip(lines, rows):
        with torch.no_grad():
            tensor = torch.from_numpy(obs[None])
            logits, value = policy.forward_eval(tensor, memory) if memory is not None else policy(tensor)
        first = logits[0] if isinstance(logits, tuple) else logits  # the first action head
        numbers = line.split()
        assert numbers[0] == 'value' and abs(float(numbers[1]) - float(value[0])) <= PARITY
        assert numbers[2] == 'action' and int(numbers[3]) == int(first[0].argmax())
        assert numbers[4] == 'logits'
        assert np.abs(np.array(numbers[5:], dtype=np.float32) - flat_logits(logits)[0].numpy()).max() <= PARITY


@pytest.fixture(scope='module')
def trained_with_options(tmp_path_factory):
    """A tiny run of puffer_squared on a 7x7 grid (other rows than the default 11x11) with 20-step episodes
    (the same rows, another game): its summary."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv('PUFFER_EXPERIMENTS', str(tmp_path_factory.mktemp('experiments')))
        return train_small('puffer_squared', '--env.size', '7', '--env.max-steps', '20', steps=1024)


def test_a_checkpoint_out_of_its_run_keeps_the_options_it_was_trained_with(trained_with_options, tmp_path):
    """The checkpoint carries its config: copied alone, it plays, exports and loads natively with size=7 and
    max_steps=20, not the env's defaults; it wins over an edited config.toml; a checkpoint without one (written
    before they carried it) still takes the env's defaults."""
    alone = tmp_path / 'alone' / 'epoch.pt'
    alone.parent.mkdir()
    shutil.copy(trained_with_options['checkpoint'], alone)
    found = find_checkpoint('puffer_squared', str(alone))
    assert (found.config['env']['size'], found.config['env']['max_steps']) == (7, 20)
    assert evaluate('puffer_squared', str(alone), episodes=1)['episodes'] == 1
    out = tmp_path / 'out'
    assert main(['export', 'puffer_squared', '--checkpoint', str(alone), '--out', str(out), '--format', 'native']) == 0
    with open(out / export.MANIFEST) as f:
        options = json.load(f)['env']['options']
    assert (options['size'], options['max_steps']) == (7, 20)
    right = pufferlib.make('puffer_squared', num_envs=1, size=7, max_steps=20)
    other = pufferlib.make('puffer_squared', num_envs=1, size=7)
    try:
        export.load_native(str(out), right, 'puffer_squared')
        with pytest.raises(ExportError, match=r'exported for puffer_squared with max_steps=20; this env has '
                                              r'max_steps=64: make the env with the options it was exported with'):
            export.load_native(str(out), other, 'puffer_squared')
    finally:
        right.close()
        other.close()
    run_dir = trained_with_options['run_dir']
    config_path = os.path.join(run_dir, 'config.toml')
    with open(config_path) as f:
        text = f.read()
    with open(config_path, 'w') as f:
        f.write(text.replace('size = 7', 'size = 9'))
    assert find_checkpoint('puffer_squared', run_dir).config['env']['size'] == 7  # what the weights learned on
    old = tmp_path / 'old' / 'epoch.pt'
    old.parent.mkdir()
    state = torch.load(alone, weights_only=True)
    del state['config']
    torch.save(state, old)
    assert find_checkpoint('puffer_squared', str(old)).config['env']['size'] == 11


def test_exporting_another_envs_checkpoint_hints_at_export(trained_with_options):
    """The hint repeats the command the user ran: export, not eval."""
    checkpoint = trained_with_options['checkpoint']
    with pytest.raises(pufferlib.PufferError, match=r'trained on puffer_squared, not puffer_memory: use it with '
                                                    r'`.*export puffer_squared --checkpoint '):
        export.export('puffer_memory', checkpoint)


def test_export_mistakes_are_one_line(tmp_path):
    """A CLI mistake: exit status 2, one line, no traceback."""
    for args, match in ((['export', 'puffer_squared', '--checkpoint', str(tmp_path / 'e.pt')], 'does not exist'),
                        (['export', 'puffer_squared', '--checkpoint', 'x', '--format', 'pdf'], 'invalid choice')):
        done = subprocess.run([sys.executable, '-m', 'pufferlib.cli', *args], capture_output=True, text=True,
                              timeout=240, env={**os.environ, 'PUFFER_EXPERIMENTS': str(tmp_path)})
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        assert done.returncode == 2 and len(lines) == 1 and match in lines[0], done.stderr


@pytest.mark.parametrize('name', ['puffer_memory', 'puffer_connect4', 'puffer_tripletriad', 'puffer_mmo'])
def test_eval_native_plays_the_same_games_as_torch_under_argmax(name, trained, tmp_path, monkeypatch):
    """Same seed, argmax: `puffer eval --native` and torch get the same returns, episode by episode; on the
    trained LSTM run, and from untrained runs on connect4 (action masks, the env's scripted opponent),
    tripletriad (its policy's own logit terms) and puffer_mmo (its own encoder and pointer, MultiDiscrete
    actions under masks), the last two through their C twins."""
    if name == 'puffer_memory':
        checkpoint = trained
    else:
        monkeypatch.setenv('PUFFER_EXPERIMENTS', str(tmp_path))
        rows = ['--env.num-envs', '2'] if name == 'puffer_mmo' else []  # 16 agents a world: 64 rows, as the others
        checkpoint = train_small(name, *rows, steps=1024)['run_dir']
    native_play = evaluate(name, checkpoint, episodes=8, seed=3, deterministic=True, native=True)
    torch_returns = evaluate(name, checkpoint, episodes=8, seed=3, deterministic=True)['returns']
    assert native_play['episodes'] == len(torch_returns) >= 8
    assert native_play['returns'] == torch_returns
    assert len(set(torch_returns)) > 1 or name not in ('puffer_memory', 'puffer_mmo')  # not one game replayed


def test_eval_native_from_the_command_line(trained, capsys):
    assert main(['eval', 'puffer_memory', '--checkpoint', trained, '--native', '--episodes', '2', '--seed', '1']) == 0
    assert re.match(r'puffer_memory: mean episode return -?[\d.]+ over \d+ episodes', capsys.readouterr().out)
