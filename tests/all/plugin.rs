//! Loading plugins: validation against the claimed world at load time, the
//! compile cache, and precompiled components.

use husk_host::engine::{CodeSource, Engine};
use husk_host::plugin::{Plugin, PluginError, World};
use husk_host::sandbox::Sandbox;
use serde_json::json;

use crate::support::{guest, output, run, sandbox, test_config};

fn load_bytes(bytes: &[u8], world: World) -> Result<Plugin, PluginError> {
    Plugin::from_bytes(&sandbox(), bytes, world, "fixture")
}

#[test]
fn a_component_without_execute_is_refused_at_load() {
    let error = Plugin::load(&sandbox(), &guest("mapper"), World::Operation).unwrap_err();
    assert!(matches!(&error, PluginError::WrongWorld { world: World::Operation, .. }), "{error}");
    assert!(error.to_string().contains("execute"), "{error}");
}

#[test]
fn an_operation_is_not_an_error_mapper() {
    let error = Plugin::load(&sandbox(), &guest("transform"), World::ErrorMapper).unwrap_err();
    assert!(matches!(&error, PluginError::WrongWorld { world: World::ErrorMapper, .. }), "{error}");
    assert!(error.to_string().contains("classify"), "{error}");
}

#[test]
fn execute_with_the_wrong_type_is_refused_at_load() {
    let wat = r#"(component
        (core module $m (func (export "f") (result i32) i32.const 0))
        (core instance $i (instantiate $m))
        (func (export "execute") (result u32) (canon lift (core func $i "f"))))"#;
    let error = load_bytes(wat.as_bytes(), World::Operation).unwrap_err();
    assert!(matches!(&error, PluginError::WrongWorld { .. }), "{error}");
    assert!(error.to_string().contains("type"), "{error}");
}

#[test]
fn an_import_husk_does_not_provide_is_refused_with_its_name() {
    let wat = r#"(component (import "wasi:http/outgoing-handler@0.2.0" (instance (export "handle" (func)))))"#;
    let error = load_bytes(wat.as_bytes(), World::Operation).unwrap_err();
    assert!(matches!(&error, PluginError::Imports { .. }), "{error}");
    assert!(error.to_string().contains("wasi:http/outgoing-handler"), "{error}");
}

#[test]
fn core_modules_and_other_files_are_not_components() {
    let empty_core_module = b"\0asm\x01\0\0\0";
    assert!(matches!(load_bytes(empty_core_module, World::Operation), Err(PluginError::CoreModule { .. })));
    assert!(matches!(load_bytes(b"[package]\nname = 'x'\n", World::Operation), Err(PluginError::NotWasm { .. })));
    let truncated = &std::fs::read(guest("transform")).unwrap()[..200];
    assert!(matches!(load_bytes(truncated, World::Operation), Err(PluginError::Invalid { .. })));
    let missing = Plugin::load(&sandbox(), "/no/such/plugin.wasm".as_ref(), World::Operation).unwrap_err();
    assert!(matches!(&missing, PluginError::Read { .. }) && missing.to_string().contains("/no/such/plugin.wasm"));
}

#[test]
fn second_load_comes_from_the_compile_cache() {
    let dir = tempfile::tempdir().unwrap();
    let config = || husk_host::engine::EngineConfig { cache_dir: Some(dir.path().to_owned()), ..test_config() };
    let first = Sandbox::new(Engine::new(config()).unwrap()).unwrap();
    let compiled = Plugin::load(&first, &guest("transform"), World::Operation).unwrap();
    assert_eq!(compiled.code_source(), CodeSource::Compiled);
    let entry = first.engine().cache().unwrap().path_for(&std::fs::read(guest("transform")).unwrap());
    assert!(entry.exists());

    // A new engine (a restarted process) with the same configuration.
    let second = Sandbox::new(Engine::new(config()).unwrap()).unwrap();
    let cached = Plugin::load(&second, &guest("transform"), World::Operation).unwrap();
    assert_eq!(cached.code_source(), CodeSource::Cache);
    assert_eq!(cached.digest(), compiled.digest());
    assert_eq!(output(&run(&second, &cached, json!({ "name": "cached" })))["greeting"], "hello, cached");

    // A corrupt entry is replaced, not trusted.
    std::fs::write(&entry, b"not machine code").unwrap();
    let recompiled = Plugin::load(&second, &guest("transform"), World::Operation).unwrap();
    assert_eq!(recompiled.code_source(), CodeSource::Compiled);
    assert_eq!(output(&run(&second, &recompiled, json!({ "name": "again" })))["greeting"], "hello, again");
}

#[test]
fn precompiled_components_load_and_run() {
    let sandbox = sandbox();
    let wasm = std::fs::read(guest("transform")).unwrap();
    let precompiled = sandbox.engine().precompile(&wasm).unwrap();
    assert!(Engine::is_precompiled_component(&precompiled));
    let plugin = Plugin::from_bytes(&sandbox, &precompiled, World::Operation, "transform.cwasm").unwrap();
    assert_eq!(plugin.code_source(), CodeSource::Precompiled);
    assert_eq!(output(&run(&sandbox, &plugin, json!({ "name": "aot" })))["greeting"], "hello, aot");
}
