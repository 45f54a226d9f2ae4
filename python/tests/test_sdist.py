"""The release path: python -m build makes an sdist that holds the C
sources, a wheel builds from that sdist alone and offline, the wheel holds
the package and its library only, and it installs into a fresh virtual
environment and works there (issue 28)."""

import glob
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile

import pytest

PKG_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd, env, cwd=None, timeout=900):
    r = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True, timeout=timeout, check=False)
    return r.returncode, r.stdout


@pytest.fixture(scope="module")
def tools():
    for mod, deb in (("build", "python3-build"), ("venv", "python3-venv"),
                     ("mesonpy", "python3-mesonpy"), ("numpy", "python3-numpy")):
        if importlib.util.find_spec(mod) is None:
            pytest.skip("%s is not installed (Debian: %s)" % (mod, deb))
    if shutil.which("patchelf") is None:
        pytest.skip("patchelf is missing (Debian: patchelf, recommended by python3-mesonpy)")
    if shutil.which("git") is None or not os.path.exists(os.path.join(PKG_ROOT, "..", ".git")):
        pytest.skip("not a git checkout: meson dist makes sdists from git")
    base = os.environ.get("SIMLSH_BUILD_ROOT") or os.getcwd()
    root = os.path.join(base, "python-sdist-test")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    env = dict(os.environ)
    for var in ("SIMLSH_LIBRARY", "PYTHONPATH", "PYTHONDONTWRITEBYTECODE"):
        env.pop(var, None)
    env["PIP_NO_INDEX"] = "1"  # offline, whatever the machine's pip.conf says
    return root, env


def test_sdist_to_wheel_to_venv(tools):
    root, env = tools
    dist = os.path.join(root, "dist")
    rc, out = run([sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir",
                   dist, PKG_ROOT], env)
    assert rc == 0, out
    sdist, = glob.glob(os.path.join(dist, "simlsh-*.tar.gz"))
    with tarfile.open(sdist) as tar:
        names = tar.getnames()
        tar.extractall(os.path.join(root, "src"))
    top = names[0].split("/")[0]
    for want in ("subprojects/simlsh/meson.build", "subprojects/simlsh/include/simlsh.h",
                 "subprojects/simlsh/lib/minhash.c", "subprojects/simlsh/lib/simlsh.map",
                 "simlsh/datasketch.py", "pyproject.toml"):
        assert "%s/%s" % (top, want) in names, want
    # the wheel from the unpacked sdist alone: no checkout, no network
    src = os.path.join(root, "src", top)
    rc, out = run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir",
                   dist, src], env, cwd=root)
    assert rc == 0, out
    wheel, = glob.glob(os.path.join(dist, "simlsh-*.whl"))
    with zipfile.ZipFile(wheel) as z:
        files = z.namelist()
    extra = [f for f in files if not f.startswith(("simlsh/", ".simlsh.mesonpy.libs/",
                                                   "simlsh-"))]
    assert not extra, extra  # no simlsh.pc, CMake files, header or API JSON
    assert any(f.startswith(".simlsh.mesonpy.libs/libsimlsh.so") for f in files)
    assert "simlsh/datasketch.py" in files and "simlsh/_buildinfo.py" in files

    venv = os.path.join(root, "venv")
    rc, out = run([sys.executable, "-m", "venv", "--system-site-packages", venv], env)
    assert rc == 0, out
    py = os.path.join(venv, "bin", "python")
    rc, out = run([py, "-m", "pip", "install", "--no-build-isolation", "--no-index",
                   "--no-deps", wheel], env)
    assert rc == 0, out
    script = (
        "import json, simlsh\n"
        "from simlsh.datasketch import MinHash, MinHashLSH\n"
        "p = simlsh.Params(unit='word', k=2, num_perm=64, threshold=0.5)\n"
        "ix = simlsh.Index(p)\n"
        "ix.insert_batch(['a', 'b'], simlsh.sign_batch(['the quick brown fox jumps',\n"
        "                                               'lorem ipsum dolor sit amet'], p))\n"
        "m = MinHash(); m.update_batch(['x', 'y', 'z'])\n"
        "lsh = MinHashLSH(threshold=0.5); lsh.insert('m', m)\n"
        "print(json.dumps({'file': simlsh.__file__, 'lib': simlsh.LIB_PATH,\n"
        "                  'hits': ix.query(simlsh.Signature(p, 'the quick brown fox jumps')),\n"
        "                  'lsh': lsh.query(m)}))\n")
    rc, out = run([py, "-c", script], env, cwd=root)
    assert rc == 0, out
    got = json.loads(out.strip().splitlines()[-1])
    real = os.path.realpath(venv)
    assert os.path.realpath(got["file"]).startswith(real)
    assert os.path.realpath(got["lib"]).startswith(real)
    assert got["hits"] == ["a"] and got["lsh"] == ["m"]
