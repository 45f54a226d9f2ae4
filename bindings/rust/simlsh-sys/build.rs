// Find libsimlsh, with no crates (Debian's cargo builds offline only with
// packaged crates): SIMLSH_LIBRARY (the path of libsimlsh.so.1, the name
// every binding reads) if set, else `pkg-config --libs simlsh`, else the
// loader's own directories. When none has it the build stops saying what
// to set, instead of the linker's bare "unable to find library -lsimlsh".
use std::path::{Path, PathBuf};
use std::process::Command;

const HINT: &str = "set PKG_CONFIG_PATH to the directory of the installed simlsh.pc \
(PREFIX/LIBDIR/pkgconfig, e.g. /usr/local/lib/x86_64-linux-gnu/pkgconfig), or \
SIMLSH_LIBRARY to the path of libsimlsh.so.1 (docs/bindings.md, section 2)";

fn main() {
    for var in ["SIMLSH_LIBRARY", "SIMLSH_LIB_DIR", "PKG_CONFIG_PATH", "PKG_CONFIG_LIBDIR"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    let dir =
        from_library_var().or_else(from_old_var).or_else(from_pkg_config).or_else(from_system);
    match dir {
        Some(dir) => {
            println!("cargo:rustc-link-search=native={}", dir.display());
            // for dependents' build scripts (DEP_SIMLSH_LIBDIR), e.g. to set an rpath
            println!("cargo:libdir={}", dir.display());
        }
        None => {
            eprintln!("simlsh-sys: cannot find libsimlsh: {HINT}");
            std::process::exit(1);
        }
    }
    println!("cargo:rustc-link-lib=dylib=simlsh");
}

fn from_library_var() -> Option<PathBuf> {
    let file = PathBuf::from(std::env::var_os("SIMLSH_LIBRARY")?);
    if !file.exists() {
        eprintln!("simlsh-sys: SIMLSH_LIBRARY={} does not exist; {HINT}", file.display());
        std::process::exit(1);
    }
    let dir = file.parent().map(Path::to_path_buf).unwrap_or_default();
    // -lsimlsh needs the link-time name next to the file
    if !dir.join("libsimlsh.so").exists() {
        eprintln!(
            "simlsh-sys: SIMLSH_LIBRARY={}: no libsimlsh.so beside it (the link-time name, \
             installed with the development files)",
            file.display()
        );
        std::process::exit(1);
    }
    Some(dir)
}

fn from_old_var() -> Option<PathBuf> {
    let dir = std::env::var_os("SIMLSH_LIB_DIR")?;
    println!(
        "cargo:warning=SIMLSH_LIB_DIR is deprecated: set SIMLSH_LIBRARY to the path of \
         libsimlsh.so.1 instead"
    );
    Some(PathBuf::from(dir))
}

fn from_pkg_config() -> Option<PathBuf> {
    let out = Command::new("pkg-config").args(["--libs", "simlsh"]).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let flags = String::from_utf8_lossy(&out.stdout).into_owned();
    let dirs: Vec<&str> = flags.split_whitespace().filter_map(|f| f.strip_prefix("-L")).collect();
    // no -L: a directory the linker searches anyway
    Some(PathBuf::from(dirs.first().copied().unwrap_or("")))
        .filter(|d| !d.as_os_str().is_empty())
        .or_else(from_system)
}

fn from_system() -> Option<PathBuf> {
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let multiarch = format!("/usr/lib/{arch}-linux-gnu");
    [multiarch.as_str(), "/usr/lib64", "/usr/lib", "/lib64", "/lib"]
        .iter()
        .map(PathBuf::from)
        .find(|d| d.join("libsimlsh.so").exists())
}
