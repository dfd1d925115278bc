"""scripts/build_images.sh before it builds anything: what it tells a user whose machine has no container
engine. The image builds themselves run in scripts/test_containers.sh (CI's last step)."""
import os
import shutil
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_no_engine_points_to_the_podman_bootstrap(tmp_path):
    bin_dir = tmp_path / 'bin'  # a PATH with the script's own tools and no docker or podman
    bin_dir.mkdir()
    for tool in ('dirname', 'sed'):
        os.symlink(shutil.which(tool), bin_dir / tool)
    out = subprocess.run([shutil.which('bash'), os.path.join(ROOT, 'scripts', 'build_images.sh'), '--cpu'],
                         env={'PATH': str(bin_dir), 'HOME': str(tmp_path)}, capture_output=True, text=True, timeout=60)
    assert out.returncode == 1
    assert 'neither a docker engine nor podman found' in out.stderr
    assert 'scripts/build_images.sh --podman-bootstrap' in out.stderr and 'provision_box.sh' in out.stderr
