"""`puffer export`: a trained policy out of Python, as ONNX (for other tools) or in the native format that
ocean/puffernet.h runs in C (and in WebAssembly builds of the Ocean envs). docs/export.md is the user's page.

    paths = export('puffer_squared', 'latest', format='all')      # RUN/export/policy.{onnx,json,bin}
    native = load_native('RUN/export/policy.json', env)           # checked against the env it will play
    net = NativeNet(native.weights, env.num_agents, native.twin_header())  # pufferlib.native: puffernet.h
    logits, values = net.forward(obs)

The native format is a manifest (policy.json: format version, the env's name and options, the observation
layout, the layers, the action heads, the tensors) and a weights file (policy.bin: a short integer header
that describes the same net for C, then every tensor as little-endian float32). ocean/puffernet.h says
the header word by word; `native_plan` below plans the net and pufferlib/native.py writes the header. The
format holds the policies the configs build for Ocean envs: the Default MLP, optionally inside LSTMWrapper,
and an env's own policy class that brings its C twin (NATIVE_TWIN below: a policy.h that encodes the row,
adds terms to the logits, or both). Other policies export to ONNX only.
"""
from __future__ import annotations

import hashlib
import inspect
import io
import json
import os
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from torch import nn

import pufferlib
from pufferlib import registry, rundir
from pufferlib.checkpoint import find_checkpoint
from pufferlib.distributions import MixedLogits
from pufferlib.models import Default, LSTMWrapper, Policy, saved_settings
from pufferlib.native import DTYPES, FORMAT_VERSION, MAX_TWIN_PARAMS, header_words, twin_path
from pufferlib.pufferenv import MixedSpace, PufferError

MANIFEST = 'policy.json'
WEIGHTS = 'policy.bin'
ONNX = 'policy.onnx'
FORMATS = ('onnx', 'native', 'all')
FORMAT_NAME = 'pufferlib native policy'


class ExportError(PufferError):
    """A policy that a format cannot hold, or an exported file that is damaged or does not fit its env."""


# ---------------------------------------------------------------------------------------------
# The native format: a plan of the net, the weights file, the manifest
# ---------------------------------------------------------------------------------------------

def _observation_leaves(core: Default) -> list[dict]:
    """The observation row's leaves in the order Default concatenates them: dtype, byte offset, count."""
    if core.nativizer is None:
        dtype = np.dtype(core.obs_space.dtype)
        return [{'path': '', 'dtype': dtype.name, 'offset': 0, 'count': int(np.prod(core.obs_space.shape))}]
    leaves: list[dict] = []

    def walk(node: tuple) -> None:
        kind, body = node
        if kind == 'leaf':
            leaves.append({'path': '/'.join(str(p) for p in body.path), 'dtype': np.dtype(body.dtype).name,
                           'offset': int(body.offset), 'count': int(np.prod(body.shape, dtype=np.int64))})
            return
        for child in body:
            walk(child[1] if kind == 'dict' else child)
    walk(core.nativizer.tree)
    return leaves


def _activation(module: nn.Module | None) -> str:
    if module is None:
        return 'identity'
    if isinstance(module, nn.GELU) and module.approximate == 'none':
        return 'gelu'
    if isinstance(module, nn.ReLU):
        return 'relu'
    raise ExportError(f'the native format has no {module!r} activation (it holds exact GELU and ReLU); '
                      'export with --format onnx')


def native_plan(policy: nn.Module) -> tuple[dict, list[tuple[str, np.ndarray]]]:
    """(the manifest's description of `policy`: observation, layers, actions, twin; its tensors in file order),
    or an ExportError naming what the native format cannot hold."""
    lstm = None
    core = policy
    if isinstance(policy, LSTMWrapper) and type(policy) is LSTMWrapper:
        lstm, core = policy.lstm, policy.policy
    # Exact types: a subclass may change what forward computes. A class that computes its own way declares
    # its C twin (NATIVE_TWIN), which runs that part in C.
    twin = _twin_plan(core)
    if type(core) is not Default and twin is None:
        inner = f'{type(policy).__name__} around {type(core).__name__}' if lstm is not None else type(core).__name__
        raise ExportError(f'the native format holds the Default MLP (optionally in LSTMWrapper) and policy classes '
                          f'with a C twin, not {inner}: export it with --format onnx{_default_hint(policy)}')
    assert isinstance(core, Policy)  # Default, or a class of pufferlib.models.Policy with a twin (_twin_plan)
    leaves: list[dict]
    layers: list[dict]
    tensors: list[tuple[str, np.ndarray]]
    if twin is not None and twin['encoder']:
        leaves, layers, tensors, hidden = [], [], [], twin['width']
    else:
        assert isinstance(core, Default)  # a twin that does not encode sits on Default's encoder (_twin_plan)
        leaves, layers, tensors = _default_encoder(core)
        hidden = layers[-1]['out']
    if lstm is not None:
        layers.append({'kind': 'lstm', 'in': lstm.input_size, 'hidden': lstm.hidden_size})
        tensors += [(f'lstm.{name}', _floats(getattr(lstm, name)))
                    for name in ('weight_ih_l0', 'weight_hh_l0', 'bias_ih_l0', 'bias_hh_l0')]
        hidden = lstm.hidden_size
    kind = core.action_kind
    if kind == 'discrete':
        heads = [int(core.actor.out_features)]
    elif kind == 'multidiscrete':
        heads = list(core.action_splits)
    elif kind == 'mixed':  # the discrete parts' heads, then the Box as the last head
        heads = [*core.action_splits, int(np.prod(core.action_shape))]
    else:
        heads = [int(np.prod(core.action_shape))]
    tensors += [('actor.weight', _floats(core.actor.weight)), ('actor.bias', _floats(core.actor.bias)),
                ('value.weight', _floats(core.value.weight)), ('value.bias', _floats(core.value.bias))]
    if kind in ('continuous', 'mixed'):
        tensors.append(('log_std', _floats(core.log_std)))
    if twin is not None:
        tensors += twin.pop('tensors')
    row_bytes = int(np.prod(core.obs_space.shape)) * np.dtype(core.obs_space.dtype).itemsize
    plan = {
        'observation': {'shape': [int(d) for d in core.obs_space.shape], 'dtype': np.dtype(core.obs_space.dtype).name,
                        'row_bytes': row_bytes, 'divisor': 1.0, 'leaves': leaves},
        'layers': layers,
        'actions': {'kind': kind, 'heads': heads, 'hidden': hidden},
        'twin': twin,
    }
    return plan, tensors


def _default_hint(policy: nn.Module) -> str:
    """', or train with --policy.class pufferlib.models:Default' where the run's [policy] options are all
    Default's, so that the flag, pasted, trains; else nothing: another class's options (a MuJoCo policy's
    log_std_init) stay in its config layers, where Default refuses them."""
    settings = (saved_settings(policy.state_dict()) or {}).get('policy')
    if not isinstance(settings, dict):
        return ''
    accepted = set(inspect.signature(Default.__init__).parameters) - {'self', 'env'}
    if any(key != 'class' and key not in accepted for key in settings):
        return ''
    return ', or train with --policy.class pufferlib.models:Default'


def _default_encoder(core: Default) -> tuple[list[dict], list[dict], list[tuple[str, np.ndarray]]]:
    """(observation leaves, linear layers, their tensors) of Default's encoder."""
    leaves = _observation_leaves(core)
    for leaf in leaves:
        if leaf['dtype'] not in DTYPES:
            raise ExportError(f'the native format reads observations of {", ".join(DTYPES)}, not '
                              f'{leaf["dtype"]} (observation leaf {leaf["path"] or "the row"})')
    modules = list(core.encoder)
    layers: list[dict] = []
    tensors: list[tuple[str, np.ndarray]] = []
    for i, module in enumerate(modules):
        if isinstance(module, nn.Linear):
            following = modules[i + 1] if i + 1 < len(modules) and not isinstance(modules[i + 1], nn.Linear) else None
            layers.append({'kind': 'linear', 'in': module.in_features, 'out': module.out_features,
                           'activation': _activation(following)})
            tensors += [(f'encoder.{i}.weight', _floats(module.weight)), (f'encoder.{i}.bias', _floats(module.bias))]
        elif i == 0 or not isinstance(modules[i - 1], nn.Linear):  # an activation follows its Linear
            raise ExportError(f'the native format cannot hold encoder module {module!r}; export with --format onnx')
    return leaves, layers, tensors


def _twin_plan(core: nn.Module) -> dict | None:
    """The manifest's `twin` of a policy class that declares a C twin (NATIVE_TWIN, see docs/export.md), with
    its tensors under 'tensors'; None for a class that declares none. A declaration that does not fit the
    policy, or a twin missing beside the module, is an ExportError that says what to fix."""
    declared = getattr(type(core), 'NATIVE_TWIN', None)
    if declared is None or type(core) is Default:
        return None
    cls = f'{type(core).__module__}:{type(core).__qualname__}'
    fix = (f'{cls}.NATIVE_TWIN must be a dict of name (str), encoder (bool), params (attribute names of the '
           'policy, or ints) and tensors (names of its modules or parameters, in the order its C twin reads them)')
    if not isinstance(declared, dict) or set(declared) != {'name', 'encoder', 'params', 'tensors'}:
        raise ExportError(fix)
    name, encoder, params, names = declared['name'], declared['encoder'], declared['params'], declared['tensors']
    if (not isinstance(name, str) or not name or not isinstance(encoder, bool)
            or not isinstance(params, (tuple, list)) or not isinstance(names, (tuple, list))):
        raise ExportError(fix)
    if not isinstance(core, Policy) or (not encoder and not isinstance(core, Default)):
        base = 'pufferlib.models.Policy' if encoder else 'pufferlib.models.Default (whose encoder the twin keeps)'
        raise ExportError(f'{cls} declares a C twin, so it must be a subclass of {base}')
    path = twin_path(type(core).__module__)
    if not os.path.isfile(path):
        raise ExportError(f'{cls} declares a C twin, but {path} is missing: put its policy.h beside the module, or '
                          'export with --format onnx')
    values: list[int] = []
    for param in params:
        value = param
        if isinstance(param, str):
            value = core
            for part in param.split('.'):
                value = getattr(value, part, None)
        if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 2 ** 31:
            raise ExportError(f'{cls}.NATIVE_TWIN param {param!r} is {value!r}, not a non-negative int; {fix}')
        values.append(value)
    if len(values) > MAX_TWIN_PARAMS:
        raise ExportError(f'{cls}.NATIVE_TWIN has {len(values)} params; puffernet.h holds at most {MAX_TWIN_PARAMS}')
    tensors: list[tuple[str, np.ndarray]] = []
    for module_name in names:
        found = getattr(core, module_name, None) if isinstance(module_name, str) else None
        if isinstance(found, nn.Parameter):
            tensors.append((f'twin.{module_name}', _floats(found)))
        elif isinstance(found, nn.Module):
            tensors += [(f'twin.{module_name}.{key}', _floats(value)) for key, value in found.named_parameters()]
        else:
            raise ExportError(f'{cls}.NATIVE_TWIN tensor {module_name!r} is no module or parameter of the policy; '
                              f'{fix}')
    return {'name': name, 'class': cls, 'encoder': encoder, 'width': int(core.hidden_size) if encoder else 0,
            'params': values, 'floats': int(sum(array.size for _, array in tensors)), 'tensors': tensors}


def _floats(tensor: torch.Tensor) -> np.ndarray:
    return tensor.detach().cpu().to(torch.float32).numpy().astype('<f4', copy=True)


def native_bytes(policy: nn.Module) -> tuple[dict, bytes]:
    """(plan with the tensors' names, shapes and byte offsets, the weights file's bytes) for `policy`."""
    plan, tensors = native_plan(policy)
    floats = sum(array.size for _, array in tensors)
    header = header_words(plan, floats)
    offset = header.nbytes
    listed = []
    for name, array in tensors:
        listed.append({'name': name, 'shape': list(array.shape), 'offset': offset})
        offset += array.nbytes
    plan['tensors'] = listed
    data = header.tobytes() + b''.join(array.tobytes() for _, array in tensors)
    return plan, data


def _env_summary(env_name: str, env: Any, options: dict) -> dict:
    obs_space, act_space = env.single_observation_space, env.single_action_space
    return {'name': env_name, 'options': options, 'observation_shape': [int(d) for d in obs_space.shape],
            'observation_dtype': np.dtype(obs_space.dtype).name, 'action_space': _action_summary(act_space)}


def _action_summary(space: spaces.Space) -> dict:
    if isinstance(space, spaces.Discrete):
        return {'kind': 'discrete', 'dims': [int(space.n)]}
    if isinstance(space, spaces.MultiDiscrete):
        return {'kind': 'multidiscrete', 'dims': [int(n) for n in space.nvec]}
    if isinstance(space, spaces.Box):
        return {'kind': 'continuous', 'dims': [int(d) for d in space.shape]}
    if isinstance(space, MixedSpace):  # the discrete parts' sizes, then the Box's size
        return {'kind': 'mixed', 'dims': [*(int(n) for n in space.discrete.nvec), int(space.box.shape[0])]}
    return {'kind': type(space).__name__, 'dims': []}


def _plain_options(options: dict) -> dict:
    return {key: value for key, value in options.items()
            if key != 'num_envs' and isinstance(value, (str, int, float, bool))}


def write_native(policy: nn.Module, env: Any, env_name: str, out: str, options: dict | None = None,
                 source: dict | None = None) -> tuple[str, str]:
    """policy.json and policy.bin in folder `out`; returns their paths."""
    plan, data = native_bytes(policy)
    manifest = {
        'format': FORMAT_NAME,
        'version': FORMAT_VERSION,
        'env': _env_summary(env_name, env, _plain_options(options if options is not None else _env_options(env))),
        **plan,
        'weights': {'file': WEIGHTS, 'bytes': len(data), 'sha256': hashlib.sha256(data).hexdigest()},
        'source': source or {},
    }
    os.makedirs(out, exist_ok=True)
    weights_path, manifest_path = os.path.join(out, WEIGHTS), os.path.join(out, MANIFEST)
    _write_whole('the native weights', weights_path, data)
    _write_whole('the native manifest', manifest_path, (json.dumps(manifest, indent=1) + '\n').encode())
    return manifest_path, weights_path


def _env_options(env: Any) -> dict:
    config = getattr(env, 'config', None)  # an Ocean env's options, resolved from its spec
    return dict(config) if isinstance(config, dict) else {}


@dataclass
class NativePolicy:
    """An exported native policy read back: its manifest and the weights file's bytes."""

    manifest: dict
    weights: bytes
    path: str

    def twin_header(self) -> str | None:
        """The C twin of the policy's class (for NativeNet), or None when it has none."""
        cls = (self.manifest.get('twin') or {}).get('class')
        if not cls:
            return None
        try:
            path = twin_path(cls.split(':')[0])
        except ImportError as e:
            raise ExportError(f'{self.path}: the policy is a {cls}, whose module (and C twin beside it) cannot be '
                              f'imported here ({e})') from None
        if not os.path.isfile(path):
            raise ExportError(f'{self.path}: the policy is a {cls}, whose C twin {path} is missing')
        return path


def load_native(path: str, env: Any = None, env_name: str | None = None) -> NativePolicy:
    """Read an export folder (or its policy.json) and check it: the format version, the weights file's size
    and checksum, and, given `env` (and `env_name`), that the policy was exported for that env."""
    manifest_path = os.path.join(path, MANIFEST) if os.path.isdir(path) else path
    again = 'export the checkpoint again (puffer export ENV --checkpoint RUN --format native)'
    if not os.path.exists(manifest_path):
        raise ExportError(f'{manifest_path} does not exist: pass the folder `puffer export` wrote, or its {MANIFEST}')
    try:
        with open(manifest_path) as f:
            manifest = json.load(f)
    except (ValueError, UnicodeDecodeError) as e:
        raise ExportError(f'{manifest_path} is not a readable manifest ({e}); {again}') from None
    if not isinstance(manifest, dict) or manifest.get('format') != FORMAT_NAME:
        raise ExportError(f'{manifest_path} is not a {FORMAT_NAME} manifest; {again}')
    version = manifest.get('version')
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ExportError(f'{manifest_path} has no valid format version ({version!r}); {again}')
    if version > FORMAT_VERSION:
        raise ExportError(f'{manifest_path} is native format version {version}, written by a newer pufferlib; this '
                          f'one reads version {FORMAT_VERSION}: upgrade pufferlib, or {again} with this one')
    try:
        weights_info = manifest['weights']
        weights_path = os.path.join(os.path.dirname(os.path.abspath(manifest_path)), weights_info['file'])
        expected, checksum = int(weights_info['bytes']), str(weights_info['sha256'])
    except (KeyError, TypeError, ValueError):
        raise ExportError(f'{manifest_path} does not name its weights file, size and checksum; {again}') from None
    if not os.path.exists(weights_path):
        raise ExportError(f'the weights file {weights_path} is missing; keep {WEIGHTS} beside {MANIFEST}, or {again}')
    with open(weights_path, 'rb') as f:
        data = f.read()
    if len(data) != expected:
        raise ExportError(f'the weights file {weights_path} is {len(data):,} bytes, the manifest says {expected:,}: '
                          f'it is truncated or from another export; {again}')
    if hashlib.sha256(data).hexdigest() != checksum:
        raise ExportError(f'the weights file {weights_path} does not match its manifest\'s checksum (corrupt, or '
                          f'from another export); {again}')
    native = NativePolicy(manifest, data, manifest_path)
    if env is not None:
        check_fits(native, env, env_name)
    return native


def check_fits(native: NativePolicy, env: Any, env_name: str | None = None) -> None:
    """An ExportError unless `native` was exported for an env like `env`: the same name (when given),
    observation rows, action space and options (those both the manifest and the env's config name)."""
    exported = native.manifest.get('env', {})
    name = exported.get('name')
    options = exported.get('options') or {}
    listed = ', '.join(f'{key}={value!r}' for key, value in options.items())
    hint = f'make the env with the options it was exported with ({listed})' if options else 'export it for this env'
    if env_name is not None and name != env_name:
        raise ExportError(f'{native.path} was exported for {name}, not {env_name}: play it on {name}, or export a '
                          f'checkpoint of {env_name}')
    here = _env_summary(name, env, {})
    for key, what in (('observation_shape', 'observation shape'), ('observation_dtype', 'observation dtype'),
                      ('action_space', 'action space')):
        if exported.get(key) != here[key]:
            raise ExportError(f'{native.path} was exported for {name} with {what} {exported.get(key)}; this env has '
                              f'{here[key]}: {hint}')
    # Options that leave the rows alone still change the game the policy learned (a drone's task): every
    # option both the export and this env name must agree.
    theirs = _plain_options(_env_options(env))
    differ = [key for key, value in options.items() if key in theirs and theirs[key] != value]
    if differ:
        raise ExportError(f'{native.path} was exported for {name} with '
                          f'{", ".join(f"{key}={options[key]!r}" for key in differ)}; this env has '
                          f'{", ".join(f"{key}={theirs[key]!r}" for key in differ)}: {hint}')


# ---------------------------------------------------------------------------------------------
# ONNX
# ---------------------------------------------------------------------------------------------

class _OnnxGraph(nn.Module):
    """The policy as ONNX sees it: plain tensors in (obs, and h, c for an LSTM), plain tensors out (every
    action head's logits, or the Box mean and log-std, or for a mixed action both: the discrete parts' logits,
    then the Box mean and log-std; the value; the new h, c)."""

    def __init__(self, policy: nn.Module) -> None:
        super().__init__()
        self.policy = policy
        self.wrapper = policy if isinstance(policy, LSTMWrapper) else None

    def forward(self, obs: torch.Tensor, lstm_h: torch.Tensor | None = None,
                lstm_c: torch.Tensor | None = None) -> tuple[torch.Tensor, ...]:
        new_state: tuple[torch.Tensor, ...] = ()
        wrapper = self.wrapper
        if wrapper is not None and lstm_h is not None and lstm_c is not None:
            hidden = wrapper.policy.encode_observations(obs)
            out, (h, c) = wrapper.lstm(hidden.unsqueeze(0), (lstm_h.unsqueeze(0), lstm_c.unsqueeze(0)))
            logits, value = wrapper.policy.decode_actions(out[0])
            new_state = (h[0], c[0])
        else:
            logits, value = self.policy(obs)
        if isinstance(logits, MixedLogits):
            gaussian = logits.continuous
            heads: tuple[torch.Tensor, ...] = (*logits.discrete, gaussian.mean, gaussian.stddev.log())
        elif isinstance(logits, torch.distributions.Distribution):
            base = getattr(logits, 'base_dist', logits)
            heads = (base.mean, base.stddev.log())
        elif isinstance(logits, (tuple, list)):
            heads = tuple(logits)
        else:
            heads = (logits,)
        return (*heads, value, *new_state)


def onnx_names(policy: nn.Module) -> tuple[list[str], list[str]]:
    """(input names, output names) of the ONNX graph of `policy`."""
    core = policy.policy if isinstance(policy, LSTMWrapper) else policy
    kind = getattr(core, 'action_kind', 'discrete')
    splits: list[int] = getattr(core, 'action_splits', [])
    if kind == 'multidiscrete':
        heads = [f'logits_{i}' for i in range(len(splits))]
    elif kind == 'continuous':
        heads = ['mean', 'log_std']
    elif kind == 'mixed':
        heads = [*(f'logits_{i}' for i in range(len(splits))), 'mean', 'log_std']
    else:
        heads = ['logits']
    if isinstance(policy, LSTMWrapper):
        return ['obs', 'lstm_h', 'lstm_c'], [*heads, 'value', 'lstm_h_out', 'lstm_c_out']
    return ['obs'], [*heads, 'value']


def write_onnx(policy: nn.Module, env: Any, path: str) -> str:
    """`policy` as an ONNX file with a dynamic batch axis; returns the path."""
    try:
        import onnx  # noqa: F401  (torch.onnx writes through it)
    except ImportError:
        raise pufferlib.MissingDependencyError('ONNX export needs the onnx package: pip install -e ".[export]" in '
                                               'this repository (or pip install onnx onnxruntime)') from None
    if getattr(env, 'obs_dtype', None) is not None:
        raise ExportError('ONNX cannot read structured observation rows (a Dict or Tuple space laid out as bytes: '
                          'the policy reinterprets those bytes, which has no ONNX operator); export with '
                          '--format native')
    obs_space = env.single_observation_space
    example = torch.from_numpy(np.zeros((2, *obs_space.shape), dtype=obs_space.dtype))
    inputs: tuple[torch.Tensor, ...] = (example,)
    if isinstance(policy, LSTMWrapper):
        inputs += (torch.zeros(2, policy.hidden_size), torch.zeros(2, policy.hidden_size))
    input_names, output_names = onnx_names(policy)
    graph = _OnnxGraph(policy).eval()
    axes = {name: {0: 'batch'} for name in [*input_names, *output_names]}
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    # The TorchScript exporter, deprecated in torch 2.9 yet present in the pinned torch: it needs only onnx and
    # takes a fraction of a second, where the dynamo exporter needs onnxscript and took 10-12 s per policy
    # (torch 2.13) for the same graph. Its deprecation notice and tracer remarks (nn.LSTM's shape checks) are
    # for torch's developers, not for someone exporting a policy.
    # Into memory, then written whole beside the file and renamed: a full disk leaves no truncated file. The
    # TorchScript exporter takes a BytesIO, which torch's annotation (of both exporters) leaves out.
    buffer = io.BytesIO()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter('ignore')
        torch.onnx.export(graph, inputs, buffer, input_names=input_names,  # type: ignore[arg-type]
                          output_names=output_names, dynamic_axes=axes, opset_version=17, dynamo=False)
    _write_whole('the ONNX file', path, buffer.getvalue())
    return path


def _write_whole(what: str, path: str, data: bytes) -> None:
    """`data` to `path` whole or not at all; a refused write is one error naming the file, its size and the
    space free there."""
    try:
        rundir.atomic_write(path, lambda f: f.write(data))
    except OSError as e:
        raise rundir.write_failure(what, path, e, len(data)) from None


# ---------------------------------------------------------------------------------------------
# `puffer export`
# ---------------------------------------------------------------------------------------------

def export(env_name: str, checkpoint: str, format: str = 'all', out: str | None = None) -> list[str]:
    """Export a checkpoint (a file, a run directory or `latest`, as `puffer eval` finds it) of `env_name`
    to folder `out` (default: the run's export/ folder); returns the paths written."""
    if format not in FORMATS:
        raise pufferlib.APIUsageError(f'--format must be one of {", ".join(FORMATS)}, got {format!r}')
    found = find_checkpoint(env_name, checkpoint, command='export')
    out = out or os.path.join(found.run_dir, 'export')
    one = {'num_envs': 1} if registry.lookup(env_name).family == 'ocean' else {}  # one instance shows the spaces
    with found.open(**one) as (env, policy):
        written: list[str] = []
        if format in ('native', 'all'):
            native_plan(policy)  # a policy the format cannot hold fails before any file is written
        if format in ('onnx', 'all'):
            written.append(write_onnx(policy, env, os.path.join(out, ONNX)))
        if format in ('native', 'all'):
            source = {'checkpoint': os.path.abspath(found.path), 'global_step': found.global_step}
            options = {**found.config['env'], **_env_options(env)}
            written += write_native(policy, env, env_name, out, options, source)
    return written
