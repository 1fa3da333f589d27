//! Loading plugins: validation against the claimed world at load time, the
//! compile cache, and precompiled components.

use husk::engine::{CodeSource, Engine};
use husk::plugin::{Plugin, PluginError, World};
use husk::sandbox::{Ending, Sandbox};
use serde_json::json;
use wasmparser::{ComponentTypeRef, TypeBounds};

use crate::support::{GuestLogs, guest, load, output, run, sandbox, test_config};

fn load_bytes(bytes: &[u8], world: World) -> Result<Plugin, PluginError> {
    sandbox().load_bytes(bytes, world, "fixture")
}

#[test]
fn a_component_without_execute_is_refused_at_load() {
    let error = sandbox().load(&guest("mapper"), World::Operation).unwrap_err();
    assert!(matches!(&error, PluginError::WrongWorld { world: World::Operation, .. }), "{error}");
    assert!(error.to_string().contains("execute"), "{error}");
}

#[test]
fn an_operation_is_not_an_error_mapper() {
    let error = sandbox().load(&guest("transform"), World::ErrorMapper).unwrap_err();
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
    let wat = r#"(component (import "wasi:keyvalue/store@0.2.0" (instance (export "open" (func)))))"#;
    let error = load_bytes(wat.as_bytes(), World::Operation).unwrap_err();
    assert!(
        matches!(&error, PluginError::Imports { import, .. } if import == "wasi:keyvalue/store@0.2.0"),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(message.contains("fixture imports `wasi:keyvalue/store@0.2.0`"), "{message}");
    // The message says what husk does provide.
    assert!(message.contains("husk:worker/log") && message.contains("wasi:io/streams"), "{message}");
    // wasi:http is provided, but only to a topic that grants it.
    let wat = r#"(component (import "wasi:http/outgoing-handler@0.2.0" (instance (export "handle" (func)))))"#;
    let message = load_bytes(wat.as_bytes(), World::Operation).unwrap_err().to_string();
    assert!(message.contains("`wasi:http/outgoing-handler@0.2.0`, which its topic does not grant"), "{message}");
}

/// The names a component imports at its top level, read from its bytes with
/// `wasmparser` (not through wasmtime, which the host uses).
fn imports_in(bytes: &[u8]) -> Vec<String> {
    let mut depth = 0;
    let mut imports = Vec::new();
    for payload in wasmparser::Parser::new(0).parse_all(bytes) {
        match payload.unwrap() {
            wasmparser::Payload::Version { .. } => depth += 1,
            wasmparser::Payload::End(_) => depth -= 1,
            wasmparser::Payload::ComponentImportSection(section) if depth == 1 => {
                for import in section {
                    let import = import.unwrap();
                    // A type import equal to a type of another import (how
                    // a world's `use` is encoded) needs nothing linked.
                    if !matches!(import.ty, ComponentTypeRef::Type(TypeBounds::Eq(_))) {
                        imports.push(import.name.name.to_owned());
                    }
                }
            }
            _ => {}
        }
    }
    imports
}

#[test]
fn a_plugin_links_exactly_the_interfaces_its_component_imports() {
    let bytes = std::fs::read(guest("transform")).unwrap();
    let plugin = load(&sandbox(), "transform");
    let imported = imports_in(&bytes);
    assert!(imported.iter().any(|name| name.starts_with("husk:worker/types@0.1.")), "{imported:?}");
    assert_eq!(plugin.imports(), imported);
    let provided: Vec<&str> = husk::plugin::provided_imports().collect();
    for import in plugin.imports() {
        let name = import.split_once('@').unwrap().0;
        assert!(provided.contains(&name), "{import} is not one husk provides");
    }
    assert!(plugin.imports().len() < provided.len(), "{:?}", plugin.imports());
}

/// An operation that imports only `husk:worker/log`: it logs one line and
/// returns empty output.
const LOG_ONLY: &str = r#"(component
    (import "husk:worker/log@0.1.0" (instance $log
        (type $l (enum "trace" "debug" "info" "warn" "error"))
        (export "level" (type $level (eq $l)))
        (export "log" (func (param "level" $level) (param "message" string)))))
    (core module $memory (memory (export "memory") 1))
    (core instance $memory (instantiate $memory))
    (alias core export $memory "memory" (core memory $mem))
    (alias export $log "log" (func $log))
    (core func $log (canon lower (func $log) (memory $mem)))
    (core module $m
        (import "host" "log" (func $log (param i32 i32 i32)))
        (import "host" "memory" (memory 1))
        (data (i32.const 64) "hello from wat")
        (func (export "execute") (param i32 i32 i32 i32 i32 i32 i32) (result i32)
            (call $log (i32.const 2) (i32.const 64) (i32.const 14))
            i32.const 16)
        (func (export "realloc") (param i32 i32 i32 i32) (result i32) i32.const 1024))
    (core instance $i (instantiate $m
        (with "host" (instance (export "log" (func $log)) (export "memory" (memory $mem))))))
    (type $job (record (field "id" string) (field "topic" string) (field "attempt" u32) (field "input" (list u8))))
    (type $fault (record (field "code" string) (field "body" (list u8))))
    (export $job-export "job" (type $job))
    (export $fault-export "fault" (type $fault))
    (func $execute (param "job" $job-export) (result (result (list u8) (error $fault-export)))
        (canon lift (core func $i "execute") (memory $mem) (realloc (core func $i "realloc"))))
    (export "execute" (func $execute)))"#;

#[test]
fn a_component_importing_only_log_links_only_log() {
    let sandbox = sandbox();
    let plugin = sandbox.load_bytes(LOG_ONLY.as_bytes(), World::Operation, "log-only").unwrap();
    assert_eq!(plugin.imports(), ["husk:worker/log@0.1.0"]);
    let logs = GuestLogs::default();
    let execution = logs.capture(|| run(&sandbox, &plugin, json!({})));
    assert_eq!(execution.ending, Ending::Returned(Vec::new()));
    assert_eq!(logs.messages(), ["hello from wat"]);
}

#[test]
fn an_interface_of_a_package_husk_does_not_provide_is_refused_with_its_name() {
    let wat = r#"(component (import "wasi:keyvalue/types@0.2.0" (instance
        (export "fields" (type (sub resource)))
        (type $method (variant (case "get") (case "other" string)))
        (export "method" (type (eq $method)))
        (export "now" (func (result u64))))))"#;
    let error = load_bytes(wat.as_bytes(), World::Operation).unwrap_err();
    assert!(
        matches!(&error, PluginError::Imports { import, .. } if import == "wasi:keyvalue/types@0.2.0"),
        "{error:?}"
    );
    assert!(error.to_string().contains("`wasi:keyvalue/types@0.2.0`, which husk does not provide"), "{error}");
}

/// A component importing `wasi:cli/environment` at `version` (with `@`, or
/// empty for none), with `get-arguments` returning `result`.
fn environment_importer(version: &str, result: &str) -> String {
    format!(
        r#"(component (import "wasi:cli/environment{version}" (instance
            (export "get-arguments" (func (result {result}))))))"#
    )
}

#[test]
fn an_interface_at_a_version_husk_does_not_provide_is_refused_with_its_name() {
    for version in ["@0.3.0", "@1.2.0", "@0.2.0-rc-2023-11-10", ""] {
        let import = format!("wasi:cli/environment{version}");
        let error =
            load_bytes(environment_importer(version, "(list string)").as_bytes(), World::Operation).unwrap_err();
        assert!(matches!(&error, PluginError::Imports { import: named, .. } if *named == import), "{error:?}");
        let message = error.to_string();
        assert!(message.contains(&format!("`{import}`")), "{message}");
        assert!(message.contains("wasi:cli/environment at 0.2.x"), "{message}");
    }

    // At any 0.2.x it links (and is then refused for not exporting
    // `execute`, which comes after).
    for version in ["@0.2.0", "@0.2.3", "@0.2.99"] {
        let error =
            load_bytes(environment_importer(version, "(list string)").as_bytes(), World::Operation).unwrap_err();
        assert!(matches!(&error, PluginError::WrongWorld { .. }), "{version}: {error}");
    }
}

#[test]
fn an_interface_with_a_type_husk_does_not_provide_is_refused_with_its_name() {
    let error = load_bytes(environment_importer("@0.2.0", "u32").as_bytes(), World::Operation).unwrap_err();
    assert!(
        matches!(&error, PluginError::Imports { import, .. } if import == "wasi:cli/environment@0.2.0"),
        "{error:?}"
    );
    assert!(error.to_string().contains("get-arguments"), "{error}");
}

#[test]
fn core_modules_and_other_files_are_not_components() {
    let empty_core_module = b"\0asm\x01\0\0\0";
    assert!(matches!(load_bytes(empty_core_module, World::Operation), Err(PluginError::CoreModule { .. })));
    assert!(matches!(load_bytes(b"[package]\nname = 'x'\n", World::Operation), Err(PluginError::NotWasm { .. })));
    let truncated = &std::fs::read(guest("transform")).unwrap()[..200];
    assert!(matches!(load_bytes(truncated, World::Operation), Err(PluginError::Invalid { .. })));
    let missing = sandbox().load("/no/such/plugin.wasm".as_ref(), World::Operation).unwrap_err();
    assert!(matches!(&missing, PluginError::Read { .. }) && missing.to_string().contains("/no/such/plugin.wasm"));
}

#[test]
fn second_load_comes_from_the_compile_cache() {
    let dir = tempfile::tempdir().unwrap();
    let config = || test_config().with_cache_dir(Some(dir.path().to_owned()));
    let first = Sandbox::new(Engine::new(config()).unwrap()).unwrap();
    let compiled = first.load(&guest("transform"), World::Operation).unwrap();
    assert_eq!(compiled.code_source(), CodeSource::Compiled);
    let entry = first.engine().cache().unwrap().path_for(&std::fs::read(guest("transform")).unwrap());
    assert!(entry.exists());

    // A new engine (a restarted process) with the same configuration.
    let second = Sandbox::new(Engine::new(config()).unwrap()).unwrap();
    let cached = second.load(&guest("transform"), World::Operation).unwrap();
    assert_eq!(cached.code_source(), CodeSource::Cache);
    assert_eq!(cached.digest(), compiled.digest());
    assert_eq!(output(&run(&second, &cached, json!({ "name": "cached" })))["greeting"], "hello, cached");

    // A corrupt entry is replaced, not trusted.
    std::fs::write(&entry, b"not machine code").unwrap();
    let recompiled = second.load(&guest("transform"), World::Operation).unwrap();
    assert_eq!(recompiled.code_source(), CodeSource::Compiled);
    assert_eq!(output(&run(&second, &recompiled, json!({ "name": "again" })))["greeting"], "hello, again");
}
