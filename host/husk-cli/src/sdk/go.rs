//! Go bindings of husk's worlds: what `wit-bindgen go` generates, plus the
//! small runtime package it imports (`go.bytecodealliance.org/pkg`),
//! vendored in the output so a build needs no Go module proxy.

use std::path::{Path, PathBuf};

use super::{SdkError, bindings_failed, bindings_world, create_dir, write};

/// The Go module path of the runtime package the bindings import.
const RUNTIME_MODULE: &str = "go.bytecodealliance.org/pkg";

/// The runtime package, as shipped with `wit-bindgen-go` at husk's
/// wit-bindgen version (its `src/pkg/`), under the directory `pkg/` of the
/// output.
const RUNTIME: [(&str, &str); 12] = [
    ("go.mod", include_str!("../../go-pkg/go.mod")),
    ("LICENSE", include_str!("../../go-pkg/LICENSE")),
    ("wit/async/async.go", include_str!("../../go-pkg/wit/async/async.go")),
    ("wit/async/empty.s", include_str!("../../go-pkg/wit/async/empty.s")),
    ("wit/runtime/runtime.go", include_str!("../../go-pkg/wit/runtime/runtime.go")),
    ("wit/runtime/empty.s", include_str!("../../go-pkg/wit/runtime/empty.s")),
    ("wit/types/future.go", include_str!("../../go-pkg/wit/types/future.go")),
    ("wit/types/option.go", include_str!("../../go-pkg/wit/types/option.go")),
    ("wit/types/result.go", include_str!("../../go-pkg/wit/types/result.go")),
    ("wit/types/stream.go", include_str!("../../go-pkg/wit/types/stream.go")),
    ("wit/types/tuple.go", include_str!("../../go-pkg/wit/types/tuple.go")),
    ("wit/types/unit.go", include_str!("../../go-pkg/wit/types/unit.go")),
];

/// Generates the Go bindings of `world` — of husk's contract, or of the
/// package in the WIT directory `wit` — into `dir`, as a Go module named
/// `wit_component`: `go.mod` (which points `go.bytecodealliance.org/pkg`
/// at the vendored copy in `pkg/`), `wit_exports.go` (package `main`,
/// the exports' glue), one package per interface, and `pkg/`. The guest's
/// own code goes beside them in package `main` or in the generated
/// `export_wit_world` package's implementation file. Returns the files
/// written.
///
/// # Errors
///
/// [`SdkError::UnknownWorld`], [`SdkError::Bindings`], or
/// [`SdkError::Io`] when a file cannot be written.
pub fn go_bindings(world: &str, wit: Option<&Path>, dir: &Path) -> Result<Vec<PathBuf>, SdkError> {
    let (mut resolve, world_id) = bindings_world("Go", world, wit)?;
    let failed = bindings_failed("Go", world);
    let mut files = wit_bindgen_core::Files::default();
    let opts = wit_bindgen_go::Opts { format: wit_bindgen_go::Format::False, ..Default::default() };
    opts.build().generate(&mut resolve, world_id, &mut files).map_err(failed)?;
    let mut written = Vec::new();
    for (name, bytes) in files.iter() {
        let path = dir.join(name);
        create_dir(path.parent().unwrap_or(dir))?;
        let bytes = if name == "go.mod" { go_mod(bytes) } else { bytes.to_vec() };
        written.push(write(path, &bytes)?);
    }
    for (name, text) in RUNTIME {
        let path = dir.join("pkg").join(name);
        create_dir(path.parent().unwrap_or(dir))?;
        written.push(write(path, text.as_bytes())?);
    }
    Ok(written)
}

/// The generated `go.mod` with the runtime module replaced by `./pkg`.
fn go_mod(generated: &[u8]) -> Vec<u8> {
    let mut text = String::from_utf8_lossy(generated).into_owned();
    text.push_str(&format!("\nreplace {RUNTIME_MODULE} => ./pkg\n"));
    text.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn generated(world: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        go_bindings(world, None, dir.path()).unwrap();
        dir
    }

    fn read(dir: &tempfile::TempDir, name: &str) -> String {
        std::fs::read_to_string(dir.path().join(name)).unwrap()
    }

    #[test]
    fn each_world_exports_its_functions_and_the_runtime_is_vendored() {
        for (world, exports) in
            [("operation", &["execute"][..]), ("error-mapper", &["classify"]), ("plugin", &["execute", "classify"])]
        {
            let dir = generated(world);
            let glue = read(&dir, "wit_exports.go");
            for export in exports {
                assert!(glue.contains(&format!("//go:wasmexport {export}\n")), "{world}: {export}");
            }
            assert!(
                read(&dir, "husk_worker_log/wit_bindings.go").contains("//go:wasmimport husk:worker/log@0.1.0 log")
            );
            let go_mod = read(&dir, "go.mod");
            assert!(
                go_mod.contains("module wit_component")
                    && go_mod.ends_with(&format!("replace {RUNTIME_MODULE} => ./pkg\n"))
            );
            for (name, text) in RUNTIME {
                assert_eq!(read(&dir, &format!("pkg/{name}")), text, "{world}: pkg/{name}");
            }
            // The vendored module is the one the bindings import.
            assert!(read(&dir, "pkg/go.mod").starts_with(&format!("module {RUNTIME_MODULE}\n")));
            assert!(glue.contains(&format!("\"{RUNTIME_MODULE}/wit/runtime\"")), "{world}");
        }
    }

    #[test]
    fn an_unknown_world_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let error = go_bindings("worker", None, dir.path()).unwrap_err();
        assert!(matches!(error, SdkError::UnknownWorld(ref w) if w == "worker"), "{error}");
    }
}
