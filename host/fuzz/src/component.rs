//! Loading and running components a tenant could deploy: random components
//! from `wasm-smith`, and random core modules (swarm-configured) that export
//! what a world needs, wrapped into `operation` or `error-mapper`
//! components with wit-component. Each is refused at load with an error, or
//! runs to an ending within its limits (fuel, memory, deadline) — never a
//! crash, a hang or a panic of the host.

use std::sync::OnceLock;
use std::time::Duration;

use arbitrary::{Arbitrary, Result, Unstructured};
use husk::engine::{Engine, EngineConfig};
use husk::fault::Fault;
use husk::plugin::World;
use husk::sandbox::{Job, Limits, Sandbox};
use wit_component::{ComponentEncoder, StringEncoding, embed_component_metadata};
use wit_parser::Resolve;

/// One engine and sandbox for every input (as in husk serve), with fuel
/// metering so that no generated code runs for long.
fn sandbox() -> &'static Sandbox {
    static SANDBOX: OnceLock<Sandbox> = OnceLock::new();
    SANDBOX.get_or_init(|| {
        let config = EngineConfig::default().with_fuel(true).with_max_instances(16).with_max_memory(64 << 20);
        Sandbox::new(Engine::new(config).expect("building the engine")).expect("linking")
    })
}

fn limits() -> Limits {
    Limits::default().with_fuel(Some(2_000_000)).with_deadline(Duration::from_secs(2)).with_memory(16 << 20)
}

/// The WIT contract and the worlds' ids.
fn contract() -> &'static (Resolve, wit_parser::WorldId, wit_parser::WorldId) {
    static CONTRACT: OnceLock<(Resolve, wit_parser::WorldId, wit_parser::WorldId)> = OnceLock::new();
    CONTRACT.get_or_init(|| {
        let mut resolve = Resolve::default();
        let package =
            resolve.push_str("worker.wit", include_str!("../../../wit/worker.wit")).expect("the contract parses");
        let operation = resolve.select_world(&[package], Some("operation")).unwrap();
        let mapper = resolve.select_world(&[package], Some("error-mapper")).unwrap();
        (resolve, operation, mapper)
    })
}

/// What a core module must export to be wrapped as `world` (the canonical
/// ABI's flattening of the world's function), and what it may import.
fn shape(world: World) -> (Vec<u8>, Vec<u8>) {
    let export = match world {
        World::Operation => r#"(func (export "execute") (param i32 i32 i32 i32 i32 i32 i32) (result i32) unreachable)"#,
        World::ErrorMapper => r#"(func (export "classify") (param i32 i32 i32 i32) (result i32) unreachable)"#,
    };
    let exports = format!(
        r#"(module (memory (export "memory") 1)
             (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32) unreachable)
             {export})"#
    );
    let imports = r#"(module (import "husk:worker/log@0.1.0" "log" (func (param i32 i32 i32))))"#;
    (wat::parse_str(exports).unwrap(), wat::parse_str(imports).unwrap())
}

/// A core module from `wasm-smith` with a swarm configuration, exporting
/// what `world` needs, wrapped into a component of that world.
fn wrapped(u: &mut Unstructured<'_>, world: World) -> Result<Option<Vec<u8>>> {
    let mut config = wasm_smith::Config::arbitrary(u)?;
    let (exports, imports) = shape(world);
    config.exports = Some(exports);
    config.available_imports = Some(imports);
    // Features wasmtime (as husk configures it) or the component model do
    // not take: a module using them is only ever refused.
    config.gc_enabled = false;
    config.exceptions_enabled = false;
    config.threads_enabled = false;
    config.memory64_enabled = false;
    config.custom_page_sizes_enabled = false;
    config.max_memories = config.max_memories.min(1);
    let module = wasm_smith::Module::new(config, u)?;
    let mut bytes = module.to_bytes();
    let (resolve, operation, mapper) = contract();
    let world_id = if world == World::Operation { *operation } else { *mapper };
    if embed_component_metadata(&mut bytes, resolve, world_id, StringEncoding::UTF8).is_err() {
        return Ok(None);
    }
    let encoded = ComponentEncoder::default().validate(true).module(&bytes).and_then(|e| e.encode());
    Ok(encoded.ok())
}

#[derive(Debug)]
enum Case {
    /// A random component.
    Component(Vec<u8>),
    /// A wrapped module of a world, and what to run it on.
    Wrapped(World, Vec<u8>, Vec<u8>),
}

fn case(u: &mut Unstructured<'_>) -> Result<Option<Case>> {
    Ok(match u.int_in_range(0..=2u8)? {
        0 => {
            let config = wasm_smith::Config::arbitrary(u)?;
            Some(Case::Component(wasm_smith::Component::new(config, u)?.to_bytes()))
        }
        kind => {
            let world = if kind == 1 { World::Operation } else { World::ErrorMapper };
            let input: Vec<u8> = u.arbitrary()?;
            wrapped(u, world)?.map(|component| Case::Wrapped(world, component, input))
        }
    })
}

/// Loads and runs the component `data` makes; panics when the host breaks
/// the promise above.
pub(crate) fn check(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(Some(case)) = case(&mut u) else { return };
    let sandbox = sandbox();
    let (world, bytes, input) = match case {
        Case::Component(bytes) => (World::Operation, bytes, b"{}".to_vec()),
        Case::Wrapped(world, bytes, input) => (world, bytes, input),
    };
    // Refused with an error is a fine ending for a random component.
    let Ok(plugin) = sandbox.load_bytes(&bytes, world, "fuzz") else { return };
    let limits = limits();
    if plugin.is_operation() {
        let job = Job { id: "fuzz".into(), topic: "fuzz".into(), attempt: 1, input: input.clone() };
        let execution = sandbox.execute(&plugin, &job, &limits, None).expect("the sandbox runs the operation");
        assert!(execution.elapsed < Duration::from_secs(30), "ran past every limit: {:?}", execution.elapsed);
    }
    if plugin.is_error_mapper() {
        let fault = Fault::new(String::from_utf8_lossy(&input).into_owned(), input);
        let execution = sandbox.classify(&plugin, &fault, &limits).expect("the sandbox runs the mapper");
        assert!(execution.elapsed < Duration::from_secs(30), "ran past every limit: {:?}", execution.elapsed);
    }
}
