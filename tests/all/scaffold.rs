//! `husk new`: each language's template builds with its own `build.sh` and
//! its component passes `husk run` as created.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::support::Language;

fn husk() -> Command {
    Command::new(env!("CARGO_BIN_EXE_husk"))
}

/// The toolchain binary `scripts/build-guests` built `language`'s examples
/// with (it notes it in `target/guests/<language>/tool`).
fn tool(language: Language) -> PathBuf {
    let dir = language.guest("transform").expect("the examples were built").parent().unwrap().to_path_buf();
    let noted = std::fs::read_to_string(dir.join("tool")).expect("scripts/build-guests notes its tool");
    PathBuf::from(noted.trim_end())
}

/// Creates `greeter` in `language` under `parent`, builds it with its
/// `build.sh`, and returns the component; `None` when the language's
/// toolchain is unavailable outside CI (see `Language::guest`).
fn create_and_build(language: Language, parent: &Path, http: bool) -> Option<PathBuf> {
    // The examples' build installs the toolchain the template needs.
    language.guest("transform")?;
    let dir = parent.join("greeter");
    let mut new = husk();
    new.args(["new", "greeter", "--lang", language.name(), "--dir"]).arg(&dir);
    if http {
        new.arg("--http");
    }
    let created = new.output().unwrap();
    assert!(created.status.success(), "{}: husk new: {}", language.name(), String::from_utf8_lossy(&created.stderr));
    let contract = if http && language == Language::Python { "wit/deps/worker/worker.wit" } else { "wit/worker.wit" };
    for file in ["build.sh", "README.md", contract] {
        assert!(dir.join(file).is_file(), "{}: {file} is missing", language.name());
    }
    let mut build = Command::new(dir.join("build.sh"));
    for var in ["CARGO_TARGET_DIR", "RUSTFLAGS", "CARGO_ENCODED_RUSTFLAGS", "CARGO_BUILD_TARGET"] {
        build.env_remove(var);
    }
    match language {
        Language::Rust => {
            // One target dir for every run, so wit-bindgen is compiled once.
            let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/scaffold");
            build.env("CARGO_TARGET_DIR", target);
        }
        Language::Python => {
            let path = std::env::var_os("PATH").unwrap_or_default();
            let mut paths = vec![tool(language).parent().unwrap().to_path_buf()];
            paths.extend(std::env::split_paths(&path));
            build.env("PATH", std::env::join_paths(paths).unwrap());
        }
        Language::Js => {
            build.env("COMPONENTIZE_JS", tool(language));
        }
        Language::C => {
            build.env("HUSK", env!("CARGO_BIN_EXE_husk"));
        }
        Language::Go => {
            build.env("HUSK", env!("CARGO_BIN_EXE_husk")).env("GO", tool(language));
        }
    }
    let built = build.output().unwrap();
    assert!(
        built.status.success(),
        "{}: build.sh failed:\n{}{}",
        language.name(),
        String::from_utf8_lossy(&built.stdout),
        String::from_utf8_lossy(&built.stderr)
    );
    snippet_is_a_topic_a_token_reaches(&dir);
    Some(dir.join("greeter.wasm"))
}

/// The README's `husk.toml` snippet is a config whose topic a tenant's
/// token reaches (a topic without a tenant runs, but the API never finds
/// it).
fn snippet_is_a_topic_a_token_reaches(dir: &Path) {
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    let snippet = readme.split("```toml\n").nth(1).and_then(|s| s.split("```").next()).expect("a toml snippet");
    let config = husk_server::config::Config::parse(snippet).unwrap_or_else(|e| panic!("{e}:\n{snippet}"));
    let tenant = config.topics["greeter"].tenant.clone().expect("the topic names its tenant");
    assert!(!config.tenants[&tenant].tokens.is_empty(), "{snippet}");
    config.topics(dir).unwrap_or_else(|e| panic!("{e}:\n{snippet}"));
}

fn run(component: &Path, input: &str) -> (Option<i32>, Value) {
    run_with(component, input, &[])
}

fn run_with(component: &Path, input: &str, args: &[&str]) -> (Option<i32>, Value) {
    let output = husk().arg("run").arg(component).args(["--input", input]).args(args).output().unwrap();
    let json = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("husk run printed no JSON ({e}): {}", String::from_utf8_lossy(&output.stderr)));
    (output.status.code(), json)
}

fn scaffolded_project_builds_and_runs(language: Language) {
    let parent = tempfile::tempdir().unwrap();
    let Some(component) = create_and_build(language, parent.path(), false) else { return };
    // "name" also as a value, before the field: a reader must find the field.
    let (code, ran) = run(&component, r#"{"title": "name", "name": "Ada"}"#);
    assert_eq!(code, Some(0), "{}: {ran}", language.name());
    assert_eq!(ran["outcome"], "completed", "{}: {ran}", language.name());
    assert_eq!(ran["output"]["greeting"], "hello, Ada", "{}: {ran}", language.name());
    let (code, faulted) = run(&component, r#"{"nom":"Ada"}"#);
    assert_eq!(code, Some(3), "{}: a guest fault exits 3: {faulted}", language.name());
    assert_eq!(faulted["fault"]["code"], "invalid-input", "{}: {faulted}", language.name());
}

/// `husk new --http`: the operation calls the URL of its input, only when
/// `husk run` allows its host.
fn scaffolded_http_project_calls_an_allowed_host(language: Language) {
    let parent = tempfile::tempdir().unwrap();
    let Some(component) = create_and_build(language, parent.path(), true) else { return };
    let server = crate::support_http::TestServer::start();
    let input = serde_json::json!({ "url": server.url("/ok") }).to_string();
    let (code, denied) = run(&component, &input);
    assert_eq!(
        (code, &denied["fault"]["code"]),
        (Some(3), &Value::from("http.error")),
        "{}: {denied}",
        language.name()
    );
    let (code, called) = run_with(&component, &input, &["--allow-host", &server.origin()]);
    assert_eq!(code, Some(0), "{}: {called}", language.name());
    assert_eq!(called["output"], serde_json::json!({ "status": 200, "body": "ok" }), "{}", language.name());
    assert_eq!(server.seen().len(), 1, "{}", language.name());
}

#[test]
fn new_rust_http_project_calls_an_allowed_host() {
    scaffolded_http_project_calls_an_allowed_host(Language::Rust);
}

#[test]
#[cfg_attr(not(husk_guests_python), ignore = "no python guest toolchain: run scripts/build-guests python")]
fn new_python_http_project_calls_an_allowed_host() {
    scaffolded_http_project_calls_an_allowed_host(Language::Python);
}

#[test]
#[cfg_attr(not(husk_guests_js), ignore = "no js guest toolchain: run scripts/build-guests js")]
fn new_js_http_project_calls_an_allowed_host() {
    scaffolded_http_project_calls_an_allowed_host(Language::Js);
}

#[test]
fn new_rust_project_builds_and_runs() {
    scaffolded_project_builds_and_runs(Language::Rust);
}

#[test]
#[cfg_attr(not(husk_guests_python), ignore = "no python guest toolchain: run scripts/build-guests python")]
fn new_python_project_builds_and_runs() {
    scaffolded_project_builds_and_runs(Language::Python);
}

#[test]
#[cfg_attr(not(husk_guests_js), ignore = "no js guest toolchain: run scripts/build-guests js")]
fn new_js_project_builds_and_runs() {
    scaffolded_project_builds_and_runs(Language::Js);
}

#[test]
#[cfg_attr(not(husk_guests_c), ignore = "no c guest toolchain: run scripts/build-guests c")]
fn new_c_project_builds_and_runs() {
    scaffolded_project_builds_and_runs(Language::C);
}

#[test]
#[cfg_attr(not(husk_guests_go), ignore = "no go guest toolchain: run scripts/build-guests go")]
fn new_go_project_builds_and_runs() {
    scaffolded_project_builds_and_runs(Language::Go);
}

#[test]
fn husk_new_refuses_bad_names_existing_directories_and_unknown_languages() {
    let parent = tempfile::tempdir().unwrap();
    let refused = |args: &[&str]| {
        let output = husk().arg("new").args(args).current_dir(parent.path()).output().unwrap();
        assert_eq!(output.status.code(), Some(1), "{args:?} must be refused");
        String::from_utf8_lossy(&output.stderr).into_owned()
    };
    assert!(refused(&["Bad_Name"]).contains("invalid project name `Bad_Name`"));
    std::fs::create_dir(parent.path().join("taken")).unwrap();
    assert!(refused(&["taken", "--lang", "python"]).contains("already exists"));
    assert!(std::fs::read_dir(parent.path().join("taken")).unwrap().next().is_none(), "nothing written into it");
    let output = husk().args(["new", "op", "--lang", "cobol"]).current_dir(parent.path()).output().unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("invalid value 'cobol'"));
    for lang in ["c", "go"] {
        assert!(refused(&["op", "--lang", lang, "--http"]).contains("no --http template for C or Go"), "{lang}");
    }
    assert!(!parent.path().join("op").exists(), "nothing written for a refused --http");
}
