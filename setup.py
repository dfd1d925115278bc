"""Builds the Ocean C extensions; project metadata lives in pyproject.toml.

Every folder ocean/<name>/ with a binding.c becomes the extension `pufferlib.ocean.<name>.binding`.
  pip install -e . --no-build-isolation        optimised (-O3) build, editable
  python setup.py build_ext --inplace          rebuild the extensions in place after editing C
  PUFFER_SANITIZE=1 python setup.py build_ext --build-lib build/sanitize --build-temp build/sanitize-tmp
                                               AddressSanitizer + UBSan build (see scripts/sanitize_ocean.sh)
"""
import glob
import os

from setuptools import Extension, find_packages, setup

HERE = os.path.dirname(os.path.abspath(__file__))
SANITIZE = os.environ.get('PUFFER_SANITIZE', '') not in ('', '0')

if SANITIZE:
    # -O1 keeps stack traces readable; no-recover turns every UBSan report into an abort a test sees.
    compile_args = ['-O1', '-g', '-fno-omit-frame-pointer', '-fsanitize=address,undefined',
                    '-fno-sanitize-recover=all']
    link_args = ['-fsanitize=address,undefined']
else:
    compile_args = ['-O3']
    link_args = []
compile_args += ['-std=gnu11', '-Wall', '-Wno-unused-function']


def ocean_envs():
    return sorted(os.path.basename(os.path.dirname(path))
                  for path in glob.glob(os.path.join(HERE, 'ocean', '*', 'binding.c')))


shared_headers = [os.path.join('ocean', 'ocean.h'), os.path.join('ocean', 'binding.h')]
extensions = [
    Extension(
        f'pufferlib.ocean.{name}.binding',
        sources=[os.path.join('ocean', name, 'binding.c')],
        include_dirs=['ocean'],
        depends=shared_headers + glob.glob(os.path.join('ocean', name, '*.h')),
        extra_compile_args=compile_args,
        extra_link_args=link_args,
    )
    for name in ocean_envs()
]

# ocean/ sits at the top level (the product layout) but installs as pufferlib.ocean.
setup(
    packages=find_packages(include=['pufferlib', 'pufferlib.*'])
    + ['pufferlib.ocean'] + [f'pufferlib.ocean.{name}' for name in ocean_envs()],
    package_dir={'pufferlib.ocean': 'ocean'},
    package_data={'pufferlib.ocean': ['*.h', '*/*.h', '*/*.c']},
    ext_modules=extensions,
)
