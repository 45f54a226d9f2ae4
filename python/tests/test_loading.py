"""Finding and checking the library; errors; the package's surface."""

import ctypes
import ctypes.util
import os
import re
import shutil
import subprocess
import sys

import pytest

import simlsh
from simlsh import _lib

PKG_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_import(env_lib, code="import simlsh; print(simlsh.LIB_PATH)"):
    env = dict(os.environ)
    env.pop("SIMLSH_LIBRARY", None)
    if env_lib is not None:
        env["SIMLSH_LIBRARY"] = env_lib
    return subprocess.run([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, check=False)


def test_versions_agree(source_root):
    assert simlsh.version() == simlsh.__version__
    assert simlsh.LIB_VERSION == tuple(int(x) for x in simlsh.__version__.split("."))
    want = os.environ.get("SIMLSH_PROJECT_VERSION")
    if want:
        assert simlsh.__version__ == want
    # python/meson.build (the wheel's version) names the same version
    with open(os.path.join(PKG_ROOT, "meson.build"), encoding="utf-8") as f:
        m = re.search(r"version : '([^']+)'", f.read())
    assert m and m.group(1) == simlsh.__version__


def test_library_from_the_environment():
    r = run_import(os.environ["SIMLSH_LIBRARY"])
    assert r.returncode == 0 and os.path.samefile(r.stdout.strip(),
                                                  os.environ["SIMLSH_LIBRARY"])


def test_missing_library_is_an_import_error(tmp_path):
    r = run_import(str(tmp_path / "nope.so"))
    assert r.returncode != 0 and "ImportError" in r.stderr
    assert "nope.so" in r.stderr and "SIMLSH_LIBRARY" in r.stderr
    # from the sources, without a build configuration, it says what to do
    r = run_import(None)
    assert r.returncode != 0 and "SIMLSH_LIBRARY" in r.stderr


def test_other_library_is_refused():
    libm = ctypes.util.find_library("m")
    if not libm:
        pytest.skip("no libm to try")
    r = run_import(libm)
    assert r.returncode != 0 and "not libsimlsh" in r.stderr


def test_old_library_is_refused(tmp_path):
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler to build a stand-in library")
    src = tmp_path / "old.c"
    src.write_text("unsigned simlsh_version_number(void) { return 103; }\n")
    so = tmp_path / "libold.so"
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(so), str(src)], check=True)
    r = run_import(str(so))
    assert r.returncode != 0 and "0.1.3" in r.stderr and "needs 0.2.0" in r.stderr


def test_error_classes_follow_the_c_codes():
    for code in range(-1, -13, -1):
        cls = _lib.ERRORS[code]
        assert issubclass(cls, simlsh.Error) and cls.code == code
        assert cls.name == _lib.lib.simlsh_error_name(code).decode()
        err = _lib.error_for(code, "what")
        assert type(err) is cls and str(err).startswith("what: ")
        assert _lib.lib.simlsh_strerror(code).decode() in str(err)
    assert issubclass(simlsh.InvalidArgument, ValueError)
    assert issubclass(simlsh.OutOfMemory, MemoryError)
    assert issubclass(simlsh.NotFound, KeyError)
    assert issubclass(simlsh.IOFailure, OSError)
    unknown = _lib.error_for(-999)
    assert type(unknown) is simlsh.Error and unknown.code == -999
    assert _lib.check(3) == 3
    with pytest.raises(simlsh.ContractMismatch):
        _lib.check(-3)


def test_public_surface_is_documented_and_typed():
    assert os.path.exists(os.path.join(os.path.dirname(simlsh.__file__), "py.typed"))
    for name in simlsh.__all__:
        obj = getattr(simlsh, name)
        if callable(obj):
            assert obj.__doc__, name
    for cls in (simlsh.Params, simlsh.Signature, simlsh.ShingleSet, simlsh.Index):
        for attr, member in vars(cls).items():
            if not attr.startswith("_") and callable(member):
                assert member.__doc__, "%s.%s" % (cls.__name__, attr)
                assert member.__annotations__, "%s.%s has no type hints" % (cls.__name__, attr)
