"""`puffer export`: a trained policy out of Python, as ONNX (for other tools) or in the native format that
ocean/puffernet.h runs in C (and in WebAssembly builds of the Ocean envs). docs/export.md is the user's page.

    paths = export('puffer_squared', 'latest', format='all')      # RUN/export/policy.{onnx,json,bin}
    native = load_native('RUN/export/policy.json', env)           # checked against the env it will play
    net = NativeNet(native.weights, env.num_agents, native.twin_header())  # puffernet.h through ctypes
    logits, values = net.forward(obs)

The native format is a manifest (policy.json: format version, the env's name and options, the observation
layout, the layers, the action heads, the tensors) and a weights file (policy.bin: a short integer header
that describes the same net for C, then every tensor as little-endian float32). ocean/puffernet.h says
the header word by word; `native_plan` below writes it. The format holds the policies the configs build
for Ocean envs: the Default MLP, optionally inside LSTMWrapper, and an env's own policy class that brings its
C twin (NATIVE_TWIN below: a policy.h that encodes the row, adds terms to the logits, or both). Other
policies export to ONNX only.
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import importlib
import json
import os
import shlex
import subprocess
import sysconfig
import tempfile
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from torch import nn

import pufferlib
from pufferlib import ocean, registry, rundir
from pufferlib.models import Default, LSTMWrapper, Policy, load_policy_weights, make_policy
from pufferlib.pufferenv import PufferError

FORMAT_VERSION = 2  # 2: a policy class's C twin (its tag, params and tensors)
MANIFEST = 'policy.json'
WEIGHTS = 'policy.bin'
ONNX = 'policy.onnx'
FORMATS = ('onnx', 'native', 'all')
FORMAT_NAME = 'pufferlib native policy'

MAGIC = 0x4E465550  # "PUFN" as a little-endian word; ocean/puffernet.h checks the same
# The codes puffernet.h reads for an observation leaf's element type, a layer's activation, the action kind.
DTYPES = {'float32': 0, 'uint8': 1, 'int8': 2, 'int16': 3, 'int32': 4, 'float64': 5, 'bool': 1}
ACTIVATIONS = {'identity': 0, 'gelu': 1, 'relu': 2}
ACTION_KINDS = {'discrete': 0, 'multidiscrete': 1, 'continuous': 2}
LINEAR = 1
MAX_TWIN_PARAMS = 32  # puffernet.h's PUFFERNET_MAX_PARAMS


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
                          f'with a C twin, not {inner}: export it with --format onnx, or train with '
                          '--policy.class pufferlib.models:Default')
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
    else:
        heads = [int(np.prod(core.action_shape))]
    tensors += [('actor.weight', _floats(core.actor.weight)), ('actor.bias', _floats(core.actor.bias)),
                ('value.weight', _floats(core.value.weight)), ('value.bias', _floats(core.value.bias))]
    if kind == 'continuous':
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
    path = twin_header(core)
    if path is None:
        raise ExportError(f'{cls} declares a C twin, but {_twin_path(type(core).__module__)} is missing: put its '
                          'policy.h beside the module, or export with --format onnx')
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


def twin_header(policy: nn.Module) -> str | None:
    """The C twin of `policy`'s class (policy.h beside its module, see ocean/puffernet.h), or None when the
    class declares none (or it is missing: native_plan says so)."""
    core = policy.policy if isinstance(policy, LSTMWrapper) else policy
    if type(core) is Default or getattr(type(core), 'NATIVE_TWIN', None) is None:
        return None
    path = _twin_path(type(core).__module__)
    return path if os.path.isfile(path) else None


def twin_tag(name: str) -> int:
    """The word that names a twin in the weights file: 32-bit FNV-1a of its name, never 0 (puffernet.h's
    puffernet_tag)."""
    h = 2166136261
    for byte in name.encode():
        h = ((h ^ byte) * 16777619) & 0xFFFFFFFF
    return h or 1


def _twin_path(module_name: str) -> str:
    """policy.h beside Python module `module_name` (imported if need be)."""
    module = importlib.import_module(module_name)
    return os.path.join(os.path.dirname(os.path.abspath(module.__file__ or '')), 'policy.h')


def _floats(tensor: torch.Tensor) -> np.ndarray:
    return tensor.detach().cpu().to(torch.float32).numpy().astype('<f4', copy=True)


def _header_words(plan: dict, floats: int) -> np.ndarray:
    """The integer header of the weights file (ocean/puffernet.h reads it word by word)."""
    obs = plan['observation']
    twin = plan['twin'] or {'name': None, 'encoder': False, 'width': 0, 'params': [], 'floats': 0}
    words: list[int] = [obs['row_bytes'], twin_tag(twin['name']) if twin['name'] else 0, int(twin['encoder']),
                        twin['width'], len(twin['params']), *twin['params'], twin['floats'], len(obs['leaves'])]
    for leaf in obs['leaves']:
        words += [DTYPES[leaf['dtype']], leaf['offset'], leaf['count']]
    words.append(int(np.array(obs['divisor'], dtype='<f4').view('<u4')))
    linear = [layer for layer in plan['layers'] if layer['kind'] == 'linear']
    words.append(len(linear))
    for layer in linear:
        words += [LINEAR, layer['in'], layer['out'], ACTIVATIONS[layer['activation']]]
    lstm = [layer for layer in plan['layers'] if layer['kind'] == 'lstm']
    words.append(lstm[0]['hidden'] if lstm else 0)
    words += [ACTION_KINDS[plan['actions']['kind']], len(plan['actions']['heads']), *plan['actions']['heads']]
    header = [MAGIC, FORMAT_VERSION, 4 + len(words), floats, *words]
    return np.array(header, dtype='<u4')


def header_fields(weights: bytes) -> dict:
    """What a sound weights file's header says that a caller sizes buffers by: row_bytes, the action kind and
    heads (the header as _header_words writes it; puffernet_load checks it first)."""
    words = [int(w) for w in np.frombuffer(weights[:4 * int.from_bytes(weights[8:12], 'little')], dtype='<u4')]
    at = 9 + words[8]            # past the twin's params, at its float count
    at += 2 + 3 * words[at + 1]  # past the leaves, at the divisor
    at += 2 + 4 * words[at + 1]  # past the layers, at the LSTM size
    at += 1
    kinds = {code: name for name, code in ACTION_KINDS.items()}
    return {'row_bytes': words[4], 'kind': kinds[words[at]], 'heads': words[at + 2:at + 2 + words[at + 1]]}


def native_bytes(policy: nn.Module) -> tuple[dict, bytes]:
    """(plan with the tensors' names, shapes and byte offsets, the weights file's bytes) for `policy`."""
    plan, tensors = native_plan(policy)
    floats = sum(array.size for _, array in tensors)
    header = _header_words(plan, floats)
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
    rundir.atomic_write(weights_path, lambda f: f.write(data))
    rundir.write_text(manifest_path, json.dumps(manifest, indent=1) + '\n')
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
            path = _twin_path(cls.split(':')[0])
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
    observation rows and action space."""
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


# ---------------------------------------------------------------------------------------------
# The C header through ctypes: what `puffer eval --native` and the tests run
# ---------------------------------------------------------------------------------------------

def header_path() -> str:
    """ocean/puffernet.h (installed as pufferlib/ocean/puffernet.h)."""
    return os.path.join(os.path.dirname(os.path.abspath(ocean.__file__)), 'puffernet.h')


def c_compiler() -> list[str]:
    """The C compiler: $CC, else the one Python was built with (what setup.py's extensions use), else cc."""
    return shlex.split(os.environ.get('CC') or sysconfig.get_config_var('CC') or 'cc')


@functools.cache
def native_library(twin: str | None = None) -> ctypes.CDLL:
    """ocean/puffernet.h compiled into a shared library (once per process and `twin`, in a temporary
    folder), with the C twin of a policy's class (twin_header) when given."""
    folder = os.path.dirname(header_path())
    with tempfile.TemporaryDirectory(prefix='puffernet-') as tmp:
        source, library = os.path.join(tmp, 'puffernet.c'), os.path.join(tmp, 'libpuffernet.so')
        with open(source, 'w') as f:
            if twin is not None:
                f.write(f'#define PUFFERNET_TWIN {json.dumps(os.path.abspath(twin))}\n')
            f.write('#define PUFFERNET_API\n#include "puffernet.h"\n')  # the functions, exported
        command = [*c_compiler(), '-std=c99', '-O3', '-ffp-contract=off', '-fPIC', '-shared', '-I', folder, source,
                   '-o', library, '-lm']
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=300)
        except OSError as e:
            raise ExportError(f'running a native policy compiles {header_path()} with a C compiler, and '
                              f'{command[0]!r} could not run ({e}): install gcc (or set CC)') from None
        if done.returncode != 0:
            raise ExportError(f'compiling {header_path()} failed: {(done.stderr or done.stdout).strip()[-800:]}')
        lib = ctypes.CDLL(library)  # loaded before the folder goes; the mapping outlives the file
    size_t, ptr = ctypes.c_size_t, ctypes.c_void_p
    lib.puffernet_arena_bytes.argtypes = [ptr, size_t, ctypes.c_int]
    lib.puffernet_arena_bytes.restype = size_t
    lib.puffernet_load.argtypes = [ptr, size_t, ptr, size_t, ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
    lib.puffernet_load.restype = ptr
    lib.puffernet_reset.argtypes = [ptr, ctypes.c_int]
    lib.puffernet_reset.restype = None
    lib.puffernet_forward.argtypes = [ptr, ctypes.c_int, ptr, ptr, ptr]
    lib.puffernet_forward.restype = ctypes.c_int
    lib.puffernet_sample.argtypes = [ptr, ctypes.c_int, ptr, ptr, ptr, ptr]
    lib.puffernet_sample.restype = None
    lib.puffernet_act.argtypes = [ptr, ctypes.c_int, ptr, ptr, ptr, ptr]
    lib.puffernet_act.restype = ctypes.c_int
    return lib


def _address(array: np.ndarray | None) -> int | None:
    return None if array is None else array.ctypes.data


class NativeNet:
    """A native weights file loaded into puffernet.h for `rows` observation rows (each with its own LSTM
    state). Observations are the env's rows [rows, ...] in the env's dtype. `twin`: the C twin of the
    policy's class, for weights that have one (twin_header of the policy)."""

    def __init__(self, weights: bytes, rows: int, twin: str | None = None) -> None:
        self.lib = native_library(twin)
        self.rows = int(rows)
        self._weights = np.frombuffer(weights, dtype=np.uint8)
        nbytes = self.lib.puffernet_arena_bytes(_address(self._weights), len(weights), self.rows)
        # +16: the arena must start on a 16-byte boundary, and numpy promises less
        self._arena = np.zeros(max(nbytes, 1) + 16, dtype=np.uint8)
        start = (-self._arena.ctypes.data) % 16
        error = ctypes.c_char_p()
        self._net = self.lib.puffernet_load(self._arena.ctypes.data + start, nbytes, _address(self._weights),
                                            len(weights), self.rows, ctypes.byref(error))
        if not self._net:
            reason = error.value.decode() if error.value else 'unknown reason'
            raise ExportError(f'puffernet.h refused the weights: {reason}')
        # The header is sound (puffernet_load checked it): read what the buffers' shapes need from it.
        fields = header_fields(weights)
        self.row_bytes, self.kind, self.heads = fields['row_bytes'], fields['kind'], fields['heads']
        self.logit_size = sum(self.heads)

    def _rows(self, observations: np.ndarray) -> tuple[np.ndarray, int]:
        obs = np.ascontiguousarray(observations)
        count = obs.shape[0] if obs.ndim else 0
        if count > self.rows:
            raise ExportError(f'{count} observation rows; this net was loaded for {self.rows}')
        if obs.nbytes != count * self.row_bytes:
            raise ExportError(f'observation rows of {obs.nbytes // max(count, 1)} bytes; the policy reads '
                              f'{self.row_bytes}-byte rows')
        return obs, count

    def forward(self, observations: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(logits [N, A] (the mean for Box actions), values [N]); row i advances LSTM state i."""
        obs, count = self._rows(observations)
        logits = np.zeros((count, self.logit_size), dtype=np.float32)
        values = np.zeros(count, dtype=np.float32)
        self.lib.puffernet_forward(self._net, count, _address(obs), _address(logits), _address(values))
        return logits, values

    def act(self, observations: np.ndarray, masks: np.ndarray | None = None,
            rng: np.ndarray | None = None) -> np.ndarray:
        """Actions for the rows: int32 [N, heads] (float32 [N, A] for Box); `rng` a uint64 array of one
        xorshift state to sample with (advanced in place), None for the argmax."""
        obs, count = self._rows(observations)
        legal, actions = self._choice_buffers(count, masks, rng)
        self.lib.puffernet_act(self._net, count, _address(obs), _address(legal), _address(actions), _address(rng))
        return actions

    def sample(self, logits: np.ndarray, masks: np.ndarray | None = None,
               rng: np.ndarray | None = None) -> np.ndarray:
        """Actions from logits [N, A] as `forward` returns them; the rest as in `act`."""
        logits = np.ascontiguousarray(logits, dtype=np.float32).reshape(-1, self.logit_size)
        legal, actions = self._choice_buffers(len(logits), masks, rng)
        self.lib.puffernet_sample(self._net, len(logits), _address(logits), _address(legal), _address(actions),
                                  _address(rng))
        return actions

    def _choice_buffers(self, count: int, masks: np.ndarray | None,
                        rng: np.ndarray | None) -> tuple[np.ndarray | None, np.ndarray]:
        legal = None
        if masks is not None:
            legal = np.ascontiguousarray(masks, dtype=np.uint8)
            if legal.size != count * self.logit_size:
                raise ExportError(f'action masks of {legal.size} values for {count} rows; the policy has '
                                  f'{self.logit_size} actions per row')
        if rng is not None and (rng.dtype != np.uint64 or rng.size != 1 or not rng.flags.c_contiguous):
            raise ExportError('rng must be a contiguous numpy uint64 array of one element (the xorshift state)')
        if self.kind == 'continuous':
            return legal, np.zeros((count, self.logit_size), dtype=np.float32)
        return legal, np.zeros((count, len(self.heads)), dtype=np.int32)

    def reset(self, row: int = -1) -> None:
        """Zero the LSTM state of `row` (every row when -1)."""
        self.lib.puffernet_reset(self._net, int(row))


def seed_state(seed: int) -> np.ndarray:
    """A nonzero xorshift state from `seed` (splitmix64, as ocean.h's ocean_seed_mix with index 0)."""
    mask = (1 << 64) - 1
    z = (seed * 0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019) & mask
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
    z ^= z >> 31
    return np.array([z or 0x2545F4914F6CDD1D], dtype=np.uint64)


class NativePlayer:
    """`puffer eval --native`: a checkpoint's policy, exported in memory, choosing actions through puffernet.h
    for every row of an env; the same interface as evaluate's torch player."""

    def __init__(self, env: Any, config: dict, state_dict: dict, path: str, deterministic: bool = False,
                 seed: int = 0) -> None:
        policy = make_policy(env, config)
        load_policy_weights(policy, state_dict, path)
        self.env = env
        self.net = NativeNet(native_bytes(policy)[1], env.num_agents, twin_header(policy))
        self.rng = None if deterministic else seed_state(seed)

    def act(self, obs: np.ndarray) -> np.ndarray:
        env = self.env
        legal = getattr(env, 'action_masks', None)
        actions = self.net.act(obs, legal, self.rng)
        return actions.reshape(env.actions.shape).astype(env.actions.dtype)

    def episodes_ended(self, terminals: np.ndarray, truncations: np.ndarray) -> None:
        for row in np.flatnonzero(np.asarray(terminals | truncations).reshape(-1)):
            self.net.reset(int(row))


# ---------------------------------------------------------------------------------------------
# ONNX
# ---------------------------------------------------------------------------------------------

class _OnnxGraph(nn.Module):
    """The policy as ONNX sees it: plain tensors in (obs, and h, c for an LSTM), plain tensors out (every
    action head's logits, or the Box mean and log-std; the value; the new h, c)."""

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
        if isinstance(logits, torch.distributions.Distribution):
            base = getattr(logits, 'base_dist', logits)
            heads: tuple[torch.Tensor, ...] = (base.mean, base.stddev.log())
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
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter('ignore')
        torch.onnx.export(graph, inputs, path, input_names=input_names, output_names=output_names,
                          dynamic_axes=axes, opset_version=17, dynamo=False)
    return path


# ---------------------------------------------------------------------------------------------
# `puffer export`
# ---------------------------------------------------------------------------------------------

def export(env_name: str, checkpoint: str, format: str = 'all', out: str | None = None) -> list[str]:
    """Export a checkpoint (a file, a run directory or `latest`, as `puffer eval` finds it) of `env_name`
    to folder `out` (default: the run's export/ folder); returns the paths written."""
    from pufferlib import evaluate  # its checkpoint lookup: the same RUN|latest as `puffer eval`
    if format not in FORMATS:
        raise pufferlib.APIUsageError(f'--format must be one of {", ".join(FORMATS)}, got {format!r}')
    path, state_dict, config = evaluate._load(env_name, checkpoint)
    run_dir = os.path.dirname(os.path.dirname(os.path.abspath(path)))
    out = out or os.path.join(run_dir, 'export')
    one = {'num_envs': 1} if registry.lookup(env_name).family == 'ocean' else {}  # one instance shows the spaces
    env = pufferlib.make(env_name, **{**config['env'], **one})
    try:
        policy = make_policy(env, config)
        load_policy_weights(policy, state_dict, path)
        policy.eval()
        written: list[str] = []
        if format in ('native', 'all'):
            native_plan(policy)  # a policy the format cannot hold fails before any file is written
        if format in ('onnx', 'all'):
            written.append(write_onnx(policy, env, os.path.join(out, ONNX)))
        if format in ('native', 'all'):
            source = {'checkpoint': os.path.abspath(path), 'global_step': int(state_dict.get('global_step', 0))}
            options = {**config['env'], **_env_options(env)}
            written += write_native(policy, env, env_name, out, options, source)
    finally:
        env.close()
    return written
