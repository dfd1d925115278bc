"""Builds the Ocean C extensions; project metadata lives in pyproject.toml.

Every folder ocean/<name>/ with a binding.c becomes the extension `pufferlib.ocean.<name>.binding`.
pufferlib/csrc/advantage.c becomes `pufferlib._advantage` (the CPU advantage kernel), and when nvcc
is found pufferlib/csrc/advantage_cu.cu becomes the ctypes library `pufferlib._advantage_cuda`
(PUFFER_CUDA=0 skips it; a missing nvcc or a failed CUDA build prints one note and never fails).
  pip install -e . --no-build-isolation        optimised (-O3) build, editable
  python setup.py build_ext --inplace          rebuild the extensions in place after editing C
  PUFFER_SANITIZE=1 python setup.py build_ext --build-lib build/sanitize --build-temp build/sanitize-tmp
                                               AddressSanitizer + UBSan build (see scripts/sanitize_ocean.sh)
"""
import glob
import os
import shutil
import subprocess

from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext

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
extensions.append(Extension(
    'pufferlib._advantage',
    sources=[os.path.join('pufferlib', 'csrc', 'advantage.c')],
    extra_compile_args=compile_args,
    extra_link_args=link_args,
))

# The CUDA advantage kernel is a plain shared library (loaded with ctypes, no torch or Python headers),
# so one binary works with any torch build. sm_80/sm_90 cover A100/H100/H200; the compute_90 PTX lets
# newer GPUs JIT it. Static cudart: nothing to find at load time besides the driver.
CUDA_SOURCE = os.path.join('pufferlib', 'csrc', 'advantage_cu.cu')
NVCC_FLAGS = ['-O3', '-shared', '-Xcompiler', '-fPIC', '-cudart', 'static',
              '-gencode', 'arch=compute_80,code=sm_80', '-gencode', 'arch=compute_90,code=sm_90',
              '-gencode', 'arch=compute_90,code=compute_90']
# optional=True: setuptools then tolerates the library being absent when it copies builds in place.
cuda_extension = Extension('pufferlib._advantage_cuda', sources=[CUDA_SOURCE], optional=True)
extensions.append(cuda_extension)


def find_nvcc():
    cuda_home = os.environ.get('CUDA_HOME') or os.environ.get('CUDA_PATH')
    if cuda_home and os.path.exists(os.path.join(cuda_home, 'bin', 'nvcc')):
        return os.path.join(cuda_home, 'bin', 'nvcc')
    return shutil.which('nvcc')


class BuildExt(build_ext):
    """build_ext that compiles the CUDA kernel with nvcc, and drops it (with a note) when it cannot."""

    def build_extensions(self):
        self.skipped = []
        super().build_extensions()
        # Dropped extensions are neither copied in place nor listed as outputs of the wheel.
        self.extensions = [ext for ext in self.extensions if ext not in self.skipped]

    def build_extension(self, ext):
        if ext is not cuda_extension:
            return super().build_extension(ext)
        if os.environ.get('PUFFER_CUDA', '') == '0':
            return self.skip(ext, 'PUFFER_CUDA=0')
        nvcc = find_nvcc()
        if nvcc is None:
            return self.skip(ext, 'nvcc not found (set CUDA_HOME or put nvcc on PATH)')
        target = self.get_ext_fullpath(ext.name)
        if not self.force and os.path.exists(target) and os.path.getmtime(target) >= os.path.getmtime(CUDA_SOURCE):
            return
        os.makedirs(os.path.dirname(target), exist_ok=True)
        cmd = [nvcc, *NVCC_FLAGS, '-o', target, CUDA_SOURCE]
        try:
            result = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        except (OSError, subprocess.SubprocessError) as e:
            return self.skip(ext, f'{nvcc} could not run: {e}')
        if result.returncode != 0:
            tail = (result.stderr or result.stdout).strip().splitlines()[-5:]
            return self.skip(ext, 'nvcc failed: ' + ' | '.join(tail))

    def skip(self, ext, reason):
        self.skipped.append(ext)
        print(f'note: CUDA advantage kernel not built ({reason}); CUDA tensors use the torch fallback')

# ocean/ sits at the top level (the product layout) but installs as pufferlib.ocean.
setup(
    packages=find_packages(include=['pufferlib', 'pufferlib.*'])
    + ['pufferlib.ocean'] + [f'pufferlib.ocean.{name}' for name in ocean_envs()],
    package_dir={'pufferlib.ocean': 'ocean'},
    package_data={'pufferlib.ocean': ['*.h', '*/*.h', '*/*.c'], 'pufferlib.config': ['*.toml']},
    ext_modules=extensions,
    cmdclass={'build_ext': BuildExt},
)
