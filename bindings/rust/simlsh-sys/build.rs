// Find libsimlsh: SIMLSH_LIB_DIR if set, else `pkg-config --libs simlsh`
// (no crates needed), else the linker's default paths.
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=SIMLSH_LIB_DIR");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    if let Ok(dir) = std::env::var("SIMLSH_LIB_DIR") {
        println!("cargo:rustc-link-search=native={dir}");
    } else if let Ok(out) = Command::new("pkg-config").args(["--libs", "simlsh"]).output() {
        let flags = String::from_utf8_lossy(&out.stdout).into_owned();
        for dir in flags.split_whitespace().filter_map(|f| f.strip_prefix("-L")) {
            println!("cargo:rustc-link-search=native={dir}");
        }
    }
    println!("cargo:rustc-link-lib=dylib=simlsh");
}
