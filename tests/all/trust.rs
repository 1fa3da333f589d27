//! Only the operator's files may hold machine code: a precompiled artifact
//! (`husk compile`'s `.cwasm`, genuine or forged) is refused wherever a
//! component is expected — by `Sandbox::load_bytes`, a deploy through the
//! API, `--watch`, a config file without `allow_precompiled` — and the
//! compile cache is husk's own directory, which keeps only components that
//! loaded.

use std::os::unix::fs::PermissionsExt;

use husk::engine::{CodeSource, Engine};
use husk::plugin::{PluginError, World};
use husk::sandbox::Sandbox;
use serde_json::json;

use crate::serve::start_error;
use crate::support::{guest, output, run, sandbox, test_config};
use crate::support_server::Server;

/// `transform` precompiled by this build's engine, and the same artifact
/// with a few KiB past its header overwritten (as a tenant crafting machine
/// code would).
fn artifacts(sandbox: &Sandbox) -> (Vec<u8>, Vec<u8>) {
    let genuine = sandbox.engine().precompile(&std::fs::read(guest("transform")).unwrap()).unwrap();
    let mut forged = genuine.clone();
    let middle = forged.len() / 2;
    forged[middle..middle + 4096].fill(0xcc); // int3
    (genuine, forged)
}

#[test]
fn precompiled_bytes_are_refused_where_a_component_is_expected() {
    let sandbox = sandbox();
    let (genuine, forged) = artifacts(&sandbox);
    for (what, bytes) in [("genuine", &genuine), ("forged", &forged)] {
        let error = sandbox.load_bytes(bytes, World::Operation, what).unwrap_err();
        assert!(matches!(error, PluginError::Precompiled { .. }), "{what}: {error}");
        assert!(error.to_string().contains("allow_precompiled"), "{error}");
    }
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), &genuine).unwrap();
    let error = sandbox.load(file.path(), World::Operation).unwrap_err();
    assert!(matches!(error, PluginError::Precompiled { .. }), "{error}");
    // The operator's own file, vouched for, loads and runs.
    #[allow(unsafe_code)]
    // SAFETY: the file holds what this engine's `precompile` just wrote.
    let plugin = unsafe { sandbox.load_trusted(file.path(), World::Operation) }.unwrap();
    assert_eq!(plugin.code_source(), CodeSource::Precompiled);
    assert_eq!(output(&run(&sandbox, &plugin, json!({ "name": "aot" })))["greeting"], "hello, aot");
}

#[test]
fn a_config_file_names_a_precompiled_plugin_only_with_allow_precompiled() {
    let dir = tempfile::tempdir().unwrap();
    let cwasm = dir.path().join("transform.cwasm");
    let compile = std::process::Command::new(env!("CARGO_BIN_EXE_husk"))
        .args(["compile", guest("transform").to_str().unwrap(), "-o", cwasm.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(compile.status.success(), "{}", String::from_utf8_lossy(&compile.stderr));
    let text = format!(
        "store = \"memory\"\n\n[tenants.a]\ntokens = [\"sha256:{}\"]\n\n[topics.t]\ntenant = \"a\"\nplugin = \"{}\"\nworkers = 1\n",
        husk_server::tokens::token_hash(crate::support_server::TOKEN_A),
        cwasm.display()
    );
    let error = start_error(dir.path(), &text, &[]);
    assert!(error.contains("precompiled") && error.contains("allow_precompiled"), "{error}");
    // Allowed by the operator: it serves, and runs jobs on it.
    let server = Server::start(&format!("allow_precompiled = true\n{text}"));
    let a = server.client(Some(crate::support_server::TOKEN_A));
    let id = crate::support_server::enqueue(&a, "t", &json!({ "name": "aot" })).unwrap()["id"].clone();
    server.wait_until("the job ends", |_| crate::support_server::ended(&crate::support_server::job_state(&a, &id)));
    assert_eq!(crate::support_server::job_state(&a, &id)["outcome"]["output"]["greeting"], "hello, aot");
}

#[test]
fn the_api_refuses_a_precompiled_deploy_genuine_or_forged_and_keeps_serving() {
    let server = Server::start(&crate::support_server::config());
    let a = server.client(Some(crate::support_server::TOKEN_A));
    let (genuine, forged) = artifacts(&sandbox());
    let versions = || a.get("/v1/topics/a-quote/plugins").unwrap()["versions"].clone();
    let before = versions();
    for (what, bytes) in [("genuine", &genuine), ("forged", &forged)] {
        let refused = a.post("/v1/topics/a-quote/plugins", Some((bytes, "application/octet-stream")), &[]);
        let (status, kind) = crate::support_server::refusal(refused);
        assert_eq!((status, kind.as_str()), (422, "invalid-plugin"), "{what}");
    }
    assert_eq!(versions(), before, "the current version stays");
    // The server still runs the topic's jobs (a forged artifact that had
    // been loaded would have crashed it at the next job).
    let id = crate::support_server::enqueue(&a, "a-quote", &json!({ "amount": 1, "currency": "EUR" })).unwrap()["id"]
        .clone();
    server.wait_until("the job ends", |_| crate::support_server::ended(&crate::support_server::job_state(&a, &id)));
    assert_eq!(crate::support_server::job_state(&a, &id)["outcome"]["kind"], "completed");
}

#[test]
fn watch_refuses_a_precompiled_file_even_with_allow_precompiled() {
    let dir = tempfile::tempdir().unwrap();
    let plugin = dir.path().join("quote.wasm");
    std::fs::copy(guest("quote-v1"), &plugin).unwrap();
    let text = crate::support_server::config()
        .replace(&guest("quote-v1").display().to_string(), &plugin.display().to_string());
    let server = Server::process_in(dir, &format!("allow_precompiled = true\n{text}"), &["--watch"]);
    let a = server.client(Some(crate::support_server::TOKEN_A));
    let versions = || a.get("/v1/topics/a-quote/plugins").unwrap()["versions"].clone();
    let (genuine, _) = artifacts(&sandbox());
    std::fs::write(&plugin, &genuine).unwrap();
    server.wait_until("the precompiled file is refused", |s| {
        s.log().lines().any(|l| l.contains("the changed plugin was refused") && l.contains("precompiled"))
    });
    assert_eq!(versions().as_array().unwrap().len(), 1, "no version deployed");
}

#[test]
fn the_compile_cache_is_private_and_keeps_only_components_that_loaded() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("cache");
    let engine = Engine::new(test_config().with_cache_dir(Some(dir.clone()))).unwrap();
    let cache = engine.cache().expect("a cache in a fresh directory").clone();
    for path in [dir.as_path(), cache.dir()] {
        assert_eq!(std::fs::metadata(path).unwrap().permissions().mode() & 0o777, 0o700, "{}", path.display());
    }
    let sandbox = Sandbox::new(engine).unwrap();
    // Compiles, but imports what husk does not provide: refused at load.
    let refused = br#"(component (import "wasi:http/outgoing-handler@0.2.0" (instance)))"#;
    let error = sandbox.load_bytes(refused, World::Operation, "refused").unwrap_err();
    assert!(matches!(error, PluginError::Imports { .. }), "{error}");
    assert_eq!(std::fs::read_dir(cache.dir()).unwrap().count(), 0, "no entry for a refused component");
    sandbox.load(&guest("transform"), World::Operation).unwrap();
    assert_eq!(std::fs::read_dir(cache.dir()).unwrap().count(), 1, "an entry for a loaded one");

    // A directory others can write to is not used: husk runs without it.
    let shared = root.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
    let engine = Engine::new(test_config().with_cache_dir(Some(shared.clone()))).unwrap();
    assert!(engine.cache().is_none(), "a world-writable cache directory is bypassed");
    let sandbox = Sandbox::new(engine).unwrap();
    let plugin = sandbox.load(&guest("transform"), World::Operation).unwrap();
    assert_eq!(plugin.code_source(), CodeSource::Compiled);
    assert_eq!(std::fs::read_dir(&shared).unwrap().count(), 0, "nothing written there");
}
