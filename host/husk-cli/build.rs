//! Builds the example guests in `examples/` to wasm32-wasip2 components, in
//! their own target directory (`target/guests`), so that tests, benchmarks
//! and `husk demo` have them. A nested cargo on the host's own target
//! directory would deadlock on its lock.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

const TARGET: &str = "wasm32-wasip2";

fn main() {
    let manifest_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let root = manifest_dir.ancestors().nth(2).expect("host/husk-cli/ is inside the workspace").to_path_buf();
    let examples = root.join("examples");
    for watched in ["examples", "guest-sdk", "wit"] {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }
    println!("cargo:rerun-if-env-changed=HUSK_GUEST_TARGET_DIR");
    let target_dir =
        env::var_os("HUSK_GUEST_TARGET_DIR").map_or_else(|| root.join("target").join("guests"), PathBuf::from);

    ensure_target_installed();
    postgres_cfg(&root);
    browser_cfg();
    guest_toolchain_cfgs(&root);

    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut build = Command::new(cargo);
    build
        .current_dir(&examples)
        .args(["build", "--release", "--locked", "--target", TARGET, "--target-dir"])
        .arg(&target_dir);
    // Nothing of the outer build may leak into the guests' build.
    for var in [
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTFLAGS",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
        "RUSTC_WORKSPACE_WRAPPER",
        "CLIPPY_ARGS",
        "CARGO_PRIMARY_PACKAGE",
    ] {
        build.env_remove(var);
    }
    let status = build.status().expect("running cargo to build the example guests");
    if !status.success() {
        panic!(
            "building the example guests failed; run `cargo build --release --target {TARGET}` in examples/ to see why"
        );
    }
    let guests = target_dir.join(TARGET).join("release");
    println!("cargo:rustc-env=HUSK_GUEST_DIR={}", guests.display());
}

/// Tells the tests whether a PostgreSQL test server is there (cfg
/// `husk_postgres`): `scripts/postgres start` writes its URL to
/// `target/postgres/url`, or `HUSK_TEST_POSTGRES` names one. Without it the
/// PostgreSQL tests are ignored — listed as such, with the command that
/// starts a server — instead of passing untested. Under `CI=true` the cfg
/// is always set: there a missing server fails the tests.
fn postgres_cfg(root: &Path) {
    println!("cargo:rustc-check-cfg=cfg(husk_postgres)");
    println!("cargo:rerun-if-env-changed=HUSK_TEST_POSTGRES");
    println!("cargo:rerun-if-env-changed=CI");
    // Watched as a directory, made here if missing (scripts/postgres keeps
    // it): the script runs again when a server starts or stops, not at
    // every build as a missing path would make it.
    let state = root.join("target").join("postgres");
    let _ = std::fs::create_dir_all(&state);
    println!("cargo:rerun-if-changed={}", state.display());
    let ci = env::var("CI").is_ok_and(|v| v == "true");
    if ci || env::var_os("HUSK_TEST_POSTGRES").is_some() || state.join("url").exists() {
        println!("cargo:rustc-cfg=husk_postgres");
    }
}

/// Tells the tests whether Chromium and its WebDriver are installed (cfg
/// `husk_browser`; Debian's `chromium` and `chromium-driver`, which
/// `.ci/run` installs). Without them the dashboard's browser tests are
/// ignored, naming the packages; under `CI=true` they always run.
fn browser_cfg() {
    println!("cargo:rustc-check-cfg=cfg(husk_browser)");
    // The directory, not the file: a missing file would rerun this script
    // at every build.
    println!("cargo:rerun-if-changed=/usr/bin");
    let ci = env::var("CI").is_ok_and(|v| v == "true");
    if ci || (Path::new("/usr/bin/chromedriver").exists() && Path::new("/usr/bin/chromium").exists()) {
        println!("cargo:rustc-cfg=husk_browser");
    }
}

/// Tells the tests which guest toolchains are installed (cfgs
/// `husk_guests_python`, `husk_guests_js`, `husk_guests_c`, `husk_guests_go`):
/// `scripts/build-guests <language>` notes a language's toolchain in
/// `target/guests/<language>/tool` once it built its examples. Without it
/// that language's tests are ignored, naming the command; under `CI=true`
/// they always run, and a missing toolchain fails them.
fn guest_toolchain_cfgs(root: &Path) {
    let ci = env::var("CI").is_ok_and(|v| v == "true");
    for language in ["python", "js", "c", "go"] {
        println!("cargo:rustc-check-cfg=cfg(husk_guests_{language})");
        // Watched as a directory, made here if missing (as for PostgreSQL).
        let dir = root.join("target").join("guests").join(language);
        let _ = std::fs::create_dir_all(&dir);
        println!("cargo:rerun-if-changed={}", dir.display());
        if ci || dir.join("tool").exists() {
            println!("cargo:rustc-cfg=husk_guests_{language}");
        }
    }
}

/// Installs the wasm32-wasip2 standard library with rustup when it is
/// missing, or stops with the one command the user must run.
fn ensure_target_installed() {
    let rustc = env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let libdir = Command::new(&rustc)
        .args(["--print", "target-libdir", "--target", TARGET])
        .output()
        .ok()
        .filter(|out| out.status.success())
        .map(|out| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()));
    if libdir.as_deref().is_some_and(Path::exists) {
        return;
    }
    println!("cargo:warning=the {TARGET} target is missing; installing it with `rustup target add {TARGET}`");
    let installed = Command::new("rustup").args(["target", "add", TARGET]).status().is_ok_and(|s| s.success());
    if !installed {
        panic!("the {TARGET} Rust target is missing and could not be installed; run: rustup target add {TARGET}");
    }
}
