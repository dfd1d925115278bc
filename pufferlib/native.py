"""ocean/puffernet.h from Python: the weights file's header as the C reads it, the C compiled by the host's
compiler and loaded with ctypes, and the C twin of a policy class (its policy.h).

    net = NativeNet(weights, env.num_agents, twin_header(policy))   # puffernet.h through ctypes
    logits, values = net.forward(obs)
    actions = net.act(obs, env.action_masks, rng=seed_state(0))     # rng=None: the argmax

`puffer export` (pufferlib/export.py) writes the weights, `puffer eval --native` plays them through
NativeNet, and `puffer web` (pufferlib/web.py) builds its page's C for this machine with native_library
to compare it with the browser's build. This module needs numpy, not torch.
"""
from __future__ import annotations

import ctypes
import functools
import importlib
import json
import os
import shlex
import subprocess
import sysconfig
import tempfile
from typing import TYPE_CHECKING, Any

import numpy as np

from pufferlib import ocean
from pufferlib.pufferenv import PufferError

if TYPE_CHECKING:
    from torch import nn

FORMAT_VERSION = 2  # 2: a policy class's C twin (its tag, params and tensors)
MAGIC = 0x4E465550  # "PUFN" as a little-endian word; ocean/puffernet.h checks the same
# The codes puffernet.h reads for an observation leaf's element type, a layer's activation, the action kind.
DTYPES = {'float32': 0, 'uint8': 1, 'int8': 2, 'int16': 3, 'int32': 4, 'float64': 5, 'bool': 1}
ACTIVATIONS = {'identity': 0, 'gelu': 1, 'relu': 2}
ACTION_KINDS = {'discrete': 0, 'multidiscrete': 1, 'continuous': 2, 'mixed': 3}
LINEAR = 1
MAX_TWIN_PARAMS = 32  # puffernet.h's PUFFERNET_MAX_PARAMS

# (name, argument types, result type) of each function a library exports, as ctypes declares them.
Functions = tuple[tuple[str, tuple[Any, ...], Any], ...]
_size, _ptr, _int = ctypes.c_size_t, ctypes.c_void_p, ctypes.c_int
PUFFERNET: Functions = (
    ('puffernet_arena_bytes', (_ptr, _size, _int), _size),
    ('puffernet_load', (_ptr, _size, _ptr, _size, _int, ctypes.POINTER(ctypes.c_char_p)), _ptr),
    ('puffernet_reset', (_ptr, _int), None),
    ('puffernet_forward', (_ptr, _int, _ptr, _ptr, _ptr), _int),
    ('puffernet_sample', (_ptr, _int, _ptr, _ptr, _ptr, _ptr), None),
    ('puffernet_act', (_ptr, _int, _ptr, _ptr, _ptr, _ptr), _int),
)


class NativeError(PufferError):
    """puffernet.h refuses weights or rows, or the C cannot be compiled here."""


# ---------------------------------------------------------------------------------------------
# The weights file's header, word by word (ocean/puffernet.h reads it in this order)
# ---------------------------------------------------------------------------------------------

def header_words(plan: dict, floats: int) -> np.ndarray:
    """The integer header of the weights file of `plan` (pufferlib.export.native_plan) with `floats` floats."""
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
    heads (the header as header_words writes it; puffernet_load checks it first)."""
    words = [int(w) for w in np.frombuffer(weights[:4 * int.from_bytes(weights[8:12], 'little')], dtype='<u4')]
    at = 9 + words[8]            # past the twin's params, at its float count
    at += 2 + 3 * words[at + 1]  # past the leaves, at the divisor
    at += 2 + 4 * words[at + 1]  # past the layers, at the LSTM size
    at += 1
    kinds = {code: name for name, code in ACTION_KINDS.items()}
    return {'row_bytes': words[4], 'kind': kinds[words[at]], 'heads': words[at + 2:at + 2 + words[at + 1]]}


# ---------------------------------------------------------------------------------------------
# The C twin of a policy class: policy.h beside its module (see ocean/puffernet.h)
# ---------------------------------------------------------------------------------------------

def twin_tag(name: str) -> int:
    """The word that names a twin in the weights file: 32-bit FNV-1a of its name, never 0 (puffernet.h's
    puffernet_tag)."""
    h = 2166136261
    for byte in name.encode():
        h = ((h ^ byte) * 16777619) & 0xFFFFFFFF
    return h or 1


def twin_path(module_name: str) -> str:
    """policy.h beside Python module `module_name` (imported if need be)."""
    module = importlib.import_module(module_name)
    return os.path.join(os.path.dirname(os.path.abspath(module.__file__ or '')), 'policy.h')


def twin_header(owner: nn.Module | str) -> str | None:
    """The C twin to compile puffernet.h with (PUFFERNET_TWIN), or None where there is none. Of a policy:
    its class's, when the class declares one (NATIVE_TWIN; policy.h beside the class's module, or missing:
    export.native_plan says so). Of an Ocean env ('puffer_mmo'): policy.h in its folder, the twin of the
    env's policy class, which a page compiles in so that weights exported from that class run there."""
    if isinstance(owner, str):
        path = os.path.join(ocean.spec_of(owner).folder, 'policy.h')
    else:
        core = owner.policy if getattr(owner, 'is_recurrent', False) else owner  # inside an LSTMWrapper
        if getattr(type(core), 'NATIVE_TWIN', None) is None:
            return None
        path = twin_path(type(core).__module__)
    return path if os.path.isfile(path) else None


# ---------------------------------------------------------------------------------------------
# The C compiled for this machine and loaded with ctypes
# ---------------------------------------------------------------------------------------------

def header_path() -> str:
    """ocean/puffernet.h (installed as pufferlib/ocean/puffernet.h)."""
    return os.path.join(ocean.ROOT, 'puffernet.h')


def c_compiler() -> list[str]:
    """The C compiler: $CC, else the one Python was built with (what setup.py's extensions use), else cc."""
    return shlex.split(os.environ.get('CC') or sysconfig.get_config_var('CC') or 'cc')


def puffernet_source(twin: str | None = None) -> str:
    """A translation unit that exports puffernet.h's functions, with the C twin `twin` (twin_header) built in."""
    define = f'#define PUFFERNET_TWIN {json.dumps(os.path.abspath(twin))}\n' if twin is not None else ''
    return f'{define}#define PUFFERNET_API\n#include "puffernet.h"\n'


@functools.cache
def native_library(source: str, functions: Functions = PUFFERNET, includes: tuple[str, ...] = (ocean.ROOT,),
                   files: tuple[tuple[str, str], ...] = (), std: str = 'c99', what: str = 'ocean/puffernet.h'
                   ) -> ctypes.CDLL:
    """C `source` compiled by the host's compiler into a shared library and loaded, once per process and
    arguments, with `functions` declared on it: by default puffernet.h's (source: puffernet_source). `files`
    ((name, text), ...) are written beside the source; `what` names the C in an error. -ffp-contract=off as in
    every build of ours: a multiply-add fused on one side only would change the last bits."""
    with tempfile.TemporaryDirectory(prefix='puffernet-') as tmp:
        for name, text in (*files, ('source.c', source)):
            with open(os.path.join(tmp, name), 'w') as f:
                f.write(text)
        library = os.path.join(tmp, 'library.so')
        command = [*c_compiler(), f'-std={std}', '-O3', '-ffp-contract=off', '-fPIC', '-shared', '-I', tmp,
                   *[flag for folder in includes for flag in ('-I', folder)], os.path.join(tmp, 'source.c'),
                   '-o', library, '-lm']
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=600)
        except OSError as e:
            raise NativeError(f'running {what} here compiles it with a C compiler, and {command[0]!r} could not '
                              f'run ({e}): install gcc (or set CC)') from None
        if done.returncode != 0:
            raise NativeError(f'compiling {what} failed: {(done.stderr or done.stdout).strip()[-1500:]}')
        lib = ctypes.CDLL(library)  # loaded before the folder goes; the mapping outlives the file
    for name, args, result in functions:
        getattr(lib, name).argtypes = list(args)
        getattr(lib, name).restype = result
    return lib


def _address(array: np.ndarray | None) -> int | None:
    return None if array is None else array.ctypes.data


class NativeNet:
    """A native weights file loaded into puffernet.h for `rows` observation rows (each with its own LSTM
    state). Observations are the env's rows [rows, ...] in the env's dtype. `twin`: the C twin of the
    policy's class, for weights that have one (twin_header of the policy)."""

    def __init__(self, weights: bytes, rows: int, twin: str | None = None) -> None:
        self.lib = native_library(puffernet_source(twin))
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
            raise NativeError(f'puffernet.h refused the weights: {reason}')
        # The header is sound (puffernet_load checked it): read what the buffers' shapes need from it.
        fields = header_fields(weights)
        self.row_bytes, self.kind, self.heads = fields['row_bytes'], fields['kind'], fields['heads']
        self.logit_size = sum(self.heads)
        # A mixed net's last head is its Box: masks cover the discrete heads before it, and an action row
        # holds one choice per discrete head, then the Box elements.
        self.mask_width = self.logit_size - self.heads[-1] if self.kind == 'mixed' else self.logit_size
        self.action_size = {'continuous': self.logit_size, 'mixed': len(self.heads) - 1 + self.heads[-1]}.get(
            self.kind, len(self.heads))

    def _rows(self, observations: np.ndarray) -> tuple[np.ndarray, int]:
        obs = np.ascontiguousarray(observations)
        count = obs.shape[0] if obs.ndim else 0
        if count > self.rows:
            raise NativeError(f'{count} observation rows; this net was loaded for {self.rows}')
        if obs.nbytes != count * self.row_bytes:
            raise NativeError(f'observation rows of {obs.nbytes // max(count, 1)} bytes; the policy reads '
                              f'{self.row_bytes}-byte rows')
        return obs, count

    def forward(self, observations: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(logits [N, A] (the mean for Box actions; a mixed net's discrete logits, then its Box means), values
        [N]); row i advances LSTM state i."""
        obs, count = self._rows(observations)
        logits = np.zeros((count, self.logit_size), dtype=np.float32)
        values = np.zeros(count, dtype=np.float32)
        self.lib.puffernet_forward(self._net, count, _address(obs), _address(logits), _address(values))
        return logits, values

    def act(self, observations: np.ndarray, masks: np.ndarray | None = None,
            rng: np.ndarray | None = None) -> np.ndarray:
        """Actions for the rows: int32 [N, heads] (float32 [N, A] for Box; for mixed, float32 rows of the
        choices then the Box elements); `rng` a uint64 array of one xorshift state to sample with (advanced in
        place), None for the argmax (and the Box means)."""
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
            if legal.size != count * self.mask_width:
                raise NativeError(f'action masks of {legal.size} values for {count} rows; the policy has '
                                  f'{self.mask_width} actions per row')
        if rng is not None and (rng.dtype != np.uint64 or rng.size != 1 or not rng.flags.c_contiguous):
            raise NativeError('rng must be a contiguous numpy uint64 array of one element (the xorshift state)')
        if self.kind in ('continuous', 'mixed'):
            return legal, np.zeros((count, self.action_size), dtype=np.float32)
        return legal, np.zeros((count, self.action_size), dtype=np.int32)

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


