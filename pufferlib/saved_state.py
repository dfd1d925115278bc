"""The bytes of a saved env state: the 80-byte header every state starts with, the parts a binding's
payload is made of, and a numpy generator's state.

The header (`pack_state`) holds a magic, the header format, the env's name, its state version, a hash of its
option set, a hash of its memory layout, the payload's length and a CRC-32 of it; `unpack_state` refuses a
state of another env, version, option set or build, a truncated one and a corrupted one, each with one
StateError, before anything is loaded. PufferEnv.get_state/set_state (pufferlib/pufferenv.py, which
re-exports these names) write and read it; an env's own payload is what its hooks make of its game.
"""
import hashlib
import struct
import zlib
from typing import NamedTuple

import numpy as np

from pufferlib.errors import StateError

STATE_MAGIC = b'PUFSTATE'
STATE_FORMAT = 1  # of the header below; bump it when the header changes
# magic, format, env version, env name, options hash, layout hash, payload bytes, payload CRC-32
_STATE_HEADER = struct.Struct('<8sII32sQQQI4x')
STATE_HEADER_BYTES = _STATE_HEADER.size


class StateIdentity(NamedTuple):
    """What a state must match to be loaded: the env, its state version, its options, its layout."""
    env: str       # the env's name, at most 32 bytes of UTF-8
    version: int   # the env's state format; an env bumps it when what its payload means changes
    options: int   # state_hash of the option set
    layout: int    # state_hash of the memory layout (Ocean: struct and row sizes of this build), else 0


def state_hash(value: object) -> int:
    """A 64-bit hash of `value`'s repr, the same in every process (unlike hash()): dicts are
    sorted first, so option order does not matter."""
    if isinstance(value, dict):
        value = sorted(value.items())
    data = value if isinstance(value, bytes) else repr(value).encode()
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), 'little')


def pack_state(identity: StateIdentity, payload: bytes) -> bytes:
    """The header of `identity` followed by `payload`."""
    name = identity.env.encode()[:32]
    header = _STATE_HEADER.pack(STATE_MAGIC, STATE_FORMAT, identity.version, name, identity.options,
                                identity.layout, len(payload), zlib.crc32(payload))
    return header + payload


def read_state_header(state: object, who: str = 'this env') -> tuple[StateIdentity, int, int]:
    """(identity, payload length, CRC-32) of a state's header; StateError when it has none."""
    if not isinstance(state, (bytes, bytearray, memoryview)):
        raise StateError(f'{who}: a state is bytes (from get_state), got {type(state).__name__}')
    if len(state) < STATE_HEADER_BYTES or bytes(state[:8]) != STATE_MAGIC:
        raise StateError(f'{who}: {len(state)} bytes that are not a saved env state (no state header); pass '
                         'what get_state/get_states returned')
    magic, fmt, version, name, options, layout, length, crc = _STATE_HEADER.unpack_from(state)
    if fmt != STATE_FORMAT:
        raise StateError(f'{who}: the state has header format {fmt}; this pufferlib reads format {STATE_FORMAT}')
    env = name.rstrip(b'\0').decode(errors='replace')
    return StateIdentity(env, version, options, layout), length, crc


def unpack_state(state: object, identity: StateIdentity, who: str) -> memoryview:
    """The payload of `state` once its header matches `identity`; one StateError naming the mismatch
    otherwise (another env, version, option set or build; truncated; corrupt)."""
    saved, length, crc = read_state_header(state, who)
    want = identity.env.encode()[:32].decode(errors='replace')
    if saved.env != want:
        raise StateError(f'{who}: this is a state of {saved.env}, not of {want}; states load only into the env '
                         'that saved them')
    if saved.version != identity.version:
        raise StateError(f'{who}: the state has version {saved.version} of {want}\'s state format, this build '
                         f'has version {identity.version}; it was saved by another version of the env')
    if saved.options != identity.options:
        raise StateError(f'{who}: the state was saved with other options of {want}; load it into an env made '
                         'with the same options')
    if saved.layout != identity.layout:
        raise StateError(f'{who}: the state was saved by a build of {want} with another memory layout; load it '
                         'with the build that saved it')
    payload = memoryview(state)[STATE_HEADER_BYTES:]  # type: ignore[arg-type]  # bytes-like: checked above
    if len(payload) != length:
        raise StateError(f'{who}: the state is truncated or padded: {len(payload)} payload bytes where its header '
                         f'says {length}')
    if zlib.crc32(payload) != crc:
        raise StateError(f'{who}: the state is corrupt (its checksum does not match)')
    return payload


def pack_parts(*parts: bytes) -> bytes:
    """Byte strings joined with their lengths, for a binding's state payload (no pickle: loading a
    state never runs code)."""
    return b''.join(struct.pack('<Q', len(part)) + bytes(part) for part in parts)


def unpack_parts(payload: bytes | memoryview, count: int, who: str) -> list[bytes]:
    """The `count` parts of pack_parts; StateError when the payload does not hold exactly that."""
    view, out, at = memoryview(payload), [], 0
    for _ in range(count):
        if at + 8 > len(view):
            raise StateError(f'{who}: the state payload is malformed (too short)')
        (n,) = struct.unpack_from('<Q', view, at)
        at += 8
        if at + n > len(view):
            raise StateError(f'{who}: the state payload is malformed (a part runs past its end)')
        out.append(bytes(view[at:at + n]))
        at += n
    if at != len(view):
        raise StateError(f'{who}: the state payload is malformed ({len(view) - at} bytes left over)')
    return out


def rng_state(generator: np.random.Generator) -> bytes:
    """A numpy Generator's state as bytes (JSON of its bit generator's state)."""
    import json
    return json.dumps(generator.bit_generator.state).encode()


def rng_from_state(data: bytes) -> np.random.Generator:
    """A new Generator in the state rng_state saved."""
    import json
    state = json.loads(data)
    bit_generator = getattr(np.random, state['bit_generator'])()
    bit_generator.state = state
    return np.random.Generator(bit_generator)
