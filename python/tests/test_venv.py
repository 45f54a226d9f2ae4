"""The package installs offline into a clean virtual environment, as the
README says (pip install --no-build-isolation), and works from there."""

import importlib.util
import os
import shutil
import subprocess
import sys

import pytest

import simlsh

PKG_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd, env, timeout=900):
    r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True, timeout=timeout, check=False)
    return r.returncode, r.stdout


@pytest.fixture(scope="module")
def venv():
    base = os.environ.get("SIMLSH_BUILD_ROOT") or os.getcwd()
    root = os.path.join(base, "python-venv-test")
    env_dir = os.path.join(root, "venv")
    shutil.rmtree(env_dir, ignore_errors=True)
    os.makedirs(root, exist_ok=True)
    if importlib.util.find_spec("venv") is None:
        pytest.skip("the venv module is missing (Debian: python3-venv)")
    for mod in ("mesonpy", "numpy"):
        try:
            __import__(mod)
        except ImportError:
            pytest.skip("%s is not installed (Debian: python3-mesonpy, python3-numpy)" % mod)
    # meson-python 0.12 rewrites the RPATH of the bundled library with
    # patchelf (a Recommends of python3-mesonpy)
    if shutil.which("patchelf") is None:
        pytest.skip("patchelf is missing (Debian: patchelf, recommended by python3-mesonpy)")
    env = dict(os.environ)
    for var in ("SIMLSH_LIBRARY", "PYTHONPATH", "PYTHONDONTWRITEBYTECODE"):
        env.pop(var, None)
    rc, out = run([sys.executable, "-m", "venv", "--system-site-packages", env_dir], env)
    if rc != 0:
        pytest.skip("cannot create a virtual environment: " + out[-500:])
    py = os.path.join(env_dir, "bin", "python")
    rc, out = run([py, "-m", "pip", "--version"], env)
    if rc != 0:
        pytest.skip("pip is not available in the virtual environment: " + out[-500:])
    return py, env, root


def test_pip_install_and_use(venv, sample):
    py, env, root = venv
    # the README's command; the build directory is kept so reruns are fast
    rc, out = run([py, "-m", "pip", "install", "--no-build-isolation", "--no-deps",
                   "--no-index", "--config-settings", "builddir=" + os.path.join(root, "build"),
                   PKG_ROOT], env)
    assert rc == 0, out
    names, texts = sample
    script = (
        "import json, sys, simlsh\n"
        "texts = [bytes.fromhex(t) for t in json.loads(sys.stdin.read())]\n"
        "r = simlsh.dedup(texts)\n"
        "print(json.dumps({'file': simlsh.__file__, 'lib': simlsh.LIB_PATH,\n"
        "                  'version': simlsh.version(), 'groups': r.groups, 'keep': r.keep}))\n"
    )
    import json
    r = subprocess.run([py, "-c", script], env=env, input=json.dumps([t.hex() for t in texts]),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, check=False, cwd=root)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    venv_dir = os.path.dirname(os.path.dirname(py))
    # the installed copy, with the library bundled in the venv, was used
    assert os.path.realpath(got["file"]).startswith(os.path.realpath(venv_dir))
    assert os.path.realpath(got["lib"]).startswith(os.path.realpath(venv_dir))
    assert got["version"] == simlsh.version()
    want = simlsh.dedup(texts)
    assert got["groups"] == want.groups and got["keep"] == want.keep
    rc, out = run([py, "-m", "pip", "uninstall", "-y", "simlsh"], env)
    assert rc == 0, out
