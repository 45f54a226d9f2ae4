"""The bindings' toolchains, set up offline inside the build tree, for the
tests that build and run them (run-test.py, test-dedup.py).

Toolchains stay inside BUILD_ROOT/bindings (GOCACHE, CARGO_HOME, the cargo
target directory, node_modules), and a simlsh.pc there points at the
source tree's header and the build's library, as an installed one would
point at the installed files.
"""
import os
import shutil
import subprocess


class Skip(Exception):
    """The toolchain (or koffi for node) is missing: the test is skipped."""


class Toolchains:
    def __init__(self, src, build, libdir):
        self.src, self.build, self.libdir = (os.path.abspath(p) for p in (src, build, libdir))
        pcdir = os.path.join(self.build, "bindings", "pkgconfig")
        os.makedirs(pcdir, exist_ok=True)
        with open(os.path.join(pcdir, "simlsh.pc"), "w") as f:
            f.write("includedir=%s\nlibdir=%s\n\nName: simlsh\nDescription: in-tree build\n"
                    "Version: 0\nCflags: -I${includedir}\nLibs: -L${libdir} -lsimlsh\n"
                    % (os.path.join(self.src, "include"), self.libdir))
        env = dict(os.environ)
        env["PKG_CONFIG_PATH"] = pcdir
        env["LD_LIBRARY_PATH"] = self.libdir + os.pathsep + env.get("LD_LIBRARY_PATH", "")
        env["SIMLSH_LIBRARY"] = os.path.join(self.libdir, "libsimlsh.so.1")
        env["SIMLSH_HEADER"] = os.path.join(self.src, "include", "simlsh.h")
        self.env = env

    def here(self, binding):
        return os.path.join(self.src, "bindings", binding)

    def work(self, binding):
        work = os.path.join(self.build, "bindings", binding)
        os.makedirs(work, exist_ok=True)
        return work

    def run(self, cmd, cwd, **kw):
        print("+", " ".join(cmd), flush=True)
        return subprocess.run(cmd, cwd=cwd, env=self.env, check=True, **kw)

    def prepare(self, binding):
        """Set the environment up for binding; raise Skip when it cannot be
        built here. Returns the directory to run its commands in."""
        env, work = self.env, self.work(binding)
        if binding == "go":
            if not shutil.which("go"):
                raise Skip("go not found")
            env.update(GOCACHE=os.path.join(work, "cache"), GOPATH=os.path.join(work, "gopath"),
                       GOFLAGS="-mod=mod", GO111MODULE="on", GOPROXY="off", CGO_ENABLED="1")
            return self.here("go")
        if binding == "rust":
            if not shutil.which("cargo"):
                raise Skip("cargo not found")
            env.update(CARGO_HOME=os.path.join(work, "cargo-home"),
                       CARGO_TARGET_DIR=os.path.join(work, "target"), SIMLSH_NO_PKG_CONFIG="")
            # Build a copy: cargo writes Cargo.lock next to the manifest, and a
            # lock written by one cargo may not parse with another (format 4 vs
            # 3), so the source tree keeps none. copytree keeps the mtimes, so
            # cargo rebuilds only what changed.
            crates = os.path.join(work, "src")
            shutil.rmtree(crates, ignore_errors=True)
            shutil.copytree(self.here("rust"), crates,
                            ignore=shutil.ignore_patterns("Cargo.lock", "target"))
            return crates
        if binding == "node":
            if not shutil.which("node"):
                raise Skip("node not found")
            modules = os.path.join(work, "node_modules")
            env["NODE_PATH"] = modules
            probe = ["node", "-e", "require('koffi')"]
            if subprocess.run(probe, env=env, capture_output=True).returncode != 0:
                if shutil.which("npm"):
                    subprocess.run(["npm", "install", "--no-save", "--no-audit", "--no-fund",
                                    "--prefix", work, "koffi"], env=env)
                if subprocess.run(probe, env=env, capture_output=True).returncode != 0:
                    raise Skip("koffi not installed and npm could not install it")
            return self.here("node")
        raise ValueError("unknown binding " + binding)

    def example(self, binding):
        """Build binding's dedup example (after prepare); return its command."""
        work = self.work(binding)
        if binding == "go":
            exe = os.path.join(work, "dedup")
            self.run(["go", "build", "-o", exe, "./cmd/dedup"], cwd=self.here("go"))
            return [exe]
        if binding == "rust":
            manifest = os.path.join(work, "src", "simlsh", "Cargo.toml")
            self.run(["cargo", "build", "-q", "--example", "dedup", "--manifest-path", manifest,
                      "--offline"], cwd=work)
            return [os.path.join(work, "target", "debug", "examples", "dedup")]
        return ["node", os.path.join(self.here("node"), "dedup.js")]
