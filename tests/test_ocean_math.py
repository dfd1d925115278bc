"""ocean/ocean_math.h: the sinf, cosf, erff, tanhf and exp that every Ocean build uses instead of the C
library's (whose last bits differ between glibc and the browser's musl). They must be as accurate as the C
library's: the float results correctly rounded except in rare ties, never more than one ulp off."""
import ctypes
import importlib
import math
import shutil
import subprocess

import numpy as np
import pytest

from pufferlib import native, ocean

SHIM = r'''
#include "ocean_math.h"
#define MANY(name, type) \
    void many_##name(const type *x, type *y, int n) { for (int i = 0; i < n; i++) y[i] = name(x[i]); }
MANY(sinf, float)
MANY(cosf, float)
MANY(erff, float)
MANY(tanhf, float)
MANY(exp, double)
'''


@pytest.fixture(scope='module')
def lib(tmp_path_factory):
    folder = tmp_path_factory.mktemp('ocean-math')
    source, library = folder / 'shim.c', folder / 'libshim.so'
    source.write_text(SHIM)
    subprocess.run([*native.c_compiler(), '-std=c99', '-O2', '-ffp-contract=off', '-fPIC', '-shared',
                    '-I', ocean.ROOT, str(source), '-o', str(library), '-lm'], check=True)
    return ctypes.CDLL(str(library))


def call(lib, name, x):
    x = np.ascontiguousarray(x)
    y = np.empty_like(x)
    getattr(lib, f'many_{name}')(x.ctypes.data_as(ctypes.c_void_p), y.ctypes.data_as(ctypes.c_void_p),
                                 ctypes.c_int(len(x)))
    return y


def ulps(ours, exact):
    """Distance in float32 steps between our floats and the float nearest the exact (double) values."""
    a = ours.astype(np.float32).view(np.int32).astype(np.int64)
    b = exact.astype(np.float32).view(np.int32).astype(np.int64)
    # Map the sign-magnitude bit patterns onto one monotonic integer line.
    a = np.where(a < 0, np.int64(-(2**31)) - a, a)
    b = np.where(b < 0, np.int64(-(2**31)) - b, b)
    return np.abs(a - b)


def samples(low, high, count=200_000, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(low, high, count).astype(np.float32)


FLOAT_CASES = {
    # angles a game meets, a wide range, and the points right beside multiples of pi/2 (the reduction's edge)
    'sinf': (np.sin, [samples(-7, 7), samples(-1e4, 1e4, seed=1),
                      (np.arange(-200, 200) * np.pi / 2).astype(np.float32)]),
    'cosf': (np.cos, [samples(-7, 7, seed=2), samples(-1e4, 1e4, seed=3),
                      (np.arange(-200, 200) * np.pi / 2).astype(np.float32)]),
    'erff': (np.vectorize(math.erf), [samples(-5, 5, seed=4), samples(-0.01, 0.01, seed=5)]),
    'tanhf': (np.tanh, [samples(-12, 12, seed=6), samples(-1e-3, 1e-3, seed=7)]),
}


@pytest.mark.parametrize('name', sorted(FLOAT_CASES))
def test_the_float_functions_round_like_a_good_c_library(lib, name):
    exact, parts = FLOAT_CASES[name]
    x = np.concatenate(parts)
    off = ulps(call(lib, name, x), exact(x.astype(np.float64)))
    assert off.max() <= 1, (name, x[off.argmax()])
    assert (off > 0).mean() < 1e-4, name  # correctly rounded but for values a hair from a tie


def test_exp_is_accurate_in_double(lib):
    x = np.concatenate([np.random.default_rng(8).uniform(-700, 700, 100_000), np.linspace(-30, 30, 10_001)])
    ours, exact = call(lib, 'exp', x), np.exp(x)
    assert np.max(np.abs(ours - exact) / exact) < 1e-15


def test_edges_follow_the_c_standard(lib):
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0], dtype=np.float32)
    sin, cos = call(lib, 'sinf', special), call(lib, 'cosf', special)
    assert np.isnan(sin[:3]).all() and np.isnan(cos[:3]).all()
    assert sin[3] == 0 and cos[3] == 1 and cos[4] == 1
    assert list(call(lib, 'erff', special)[1:3]) == [1, -1]
    assert list(call(lib, 'tanhf', special)[1:3]) == [1, -1]
    e = call(lib, 'exp', np.array([np.nan, 710.0, -746.0, 0.0]))
    assert np.isnan(e[0]) and e[1] == np.inf and e[2] == 0 and e[3] == 1


LIBRARY_MATH = {'sinf', 'cosf', 'sincosf', 'sin', 'cos', 'sincos', 'erff', 'erf', 'tanhf', 'tanh', 'exp'}


@pytest.mark.skipif(not shutil.which('nm'), reason='needs binutils nm to list a library\'s imports')
@pytest.mark.parametrize('name', ocean.env_names())
def test_no_ocean_build_calls_the_c_librarys_versions(name):
    """ocean.h includes ocean_math.h, so the training build of every env imports none of those functions from
    the C library (gcc would otherwise turn a sinf and a cosf of one angle into glibc's sincosf)."""
    module = importlib.import_module(f'pufferlib.ocean.{ocean.short_name(name)}.binding')
    listed = subprocess.run(['nm', '-D', '--undefined-only', module.__file__], capture_output=True, text=True,
                            check=True).stdout
    imported = {line.split()[-1].split('@')[0] for line in listed.splitlines() if line.strip()}
    assert not imported & LIBRARY_MATH
