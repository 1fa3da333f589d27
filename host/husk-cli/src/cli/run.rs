//! `husk run`: one job on a component, or one fault through an error
//! mapper, printed as JSON.

use std::collections::BTreeMap;
use std::process::ExitCode;

use serde_json::json;

use husk::capability::{ConfigGrant, Grants, HttpGrant};
use husk::engine::{Engine, EngineConfig};
use husk::plugin::{Plugin, World};
use husk::sandbox::{Ending, Execution, Job, Limits, Sandbox};
use husk::wire::body_value;

use super::{EXIT_GUEST_FAULT, EXIT_LIMIT_KILL, EXIT_TRAP, RunArgs, read_input};

pub(super) fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let input = read_input(&args.input)?;
    if let Some(code) = &args.mapper {
        return classify(&args, code, input);
    }
    let limits = Limits::default().with_deadline(args.timeout).with_fuel(args.fuel).with_memory(args.memory.as_u64());
    let config = EngineConfig::default()
        .with_fuel(args.fuel.is_some())
        .with_max_memory(limits.memory.max(EngineConfig::default().max_memory))
        .with_max_instances(4)
        .with_cache_dir(args.cache.dir());
    let sandbox = Sandbox::new(Engine::new(config)?)?;
    // `husk run` links wasi:http and wasi:config for any component: a
    // request to a host not allowed ends in the denial, a key not given
    // reads as none.
    let mut grants =
        Grants::default().with_config(ConfigGrant::new(args.config.iter().cloned().collect(), BTreeMap::new())?);
    grants.http = Some(std::sync::Arc::new(HttpGrant::default().with_allowed(args.allow_hosts.clone())));
    let plugin = load_run_plugin(&sandbox, &args, &grants)?;
    let job = Job { id: "cli-1".into(), topic: args.topic, attempt: args.attempt, input };
    let execution = sandbox.execute_granted(&plugin, &job, &limits, &grants, None)?;
    let (report, code) = report(&execution, &plugin);
    println!("{}", serde_json::to_string_pretty(&report)?);
    Ok(ExitCode::from(code))
}

/// `husk run --mapper CODE`: the fault `CODE` with body `body` through the
/// error mapper component, as a topic's mapper would classify it (an
/// error mapper that fails or overruns its limits classifies it technical).
fn classify(args: &RunArgs, code: &str, body: Vec<u8>) -> anyhow::Result<ExitCode> {
    let limits = Limits::error_mapper();
    let config = EngineConfig::default().with_fuel(true).with_max_instances(4).with_cache_dir(args.cache.dir());
    let sandbox = Sandbox::new(Engine::new(config)?)?;
    let (bytes, name) = husk::plugin::read(&args.component)?;
    let plugin = sandbox.load_granted(&bytes, World::ErrorMapper, &name, &Grants::default())?;
    let digest = plugin.digest().to_owned();
    let mapper = husk::classify::ErrorMapper::Wasm { sandbox, plugin, limits };
    let fault = husk::fault::Fault::new(code, body);
    let classification = mapper.classify(&fault);
    let report = json!({ "fault": fault, "classification": classification, "plugin": digest });
    println!("{}", serde_json::to_string_pretty(&report)?);
    Ok(ExitCode::SUCCESS)
}

/// `husk run`'s component: precompiled code only with `--allow-precompiled`.
#[allow(unsafe_code)]
fn load_run_plugin(sandbox: &Sandbox, args: &RunArgs, grants: &Grants) -> Result<Plugin, husk::plugin::PluginError> {
    let (bytes, name) = husk::plugin::read(&args.component)?;
    if args.allow_precompiled {
        // SAFETY: the user running husk vouched for the file on the command
        // line (`--allow-precompiled`, documented as for their own files).
        unsafe { sandbox.load_trusted_bytes(&bytes, World::Operation, &name, grants) }
    } else {
        sandbox.load_granted(&bytes, World::Operation, &name, grants)
    }
}

fn report(execution: &Execution, plugin: &Plugin) -> (serde_json::Value, u8) {
    let (mut report, code) = match &execution.ending {
        Ending::Returned(output) => (json!({ "outcome": "completed", "output": body_value(output) }), 0),
        Ending::Fault(fault) => (json!({ "outcome": "fault", "fault": fault }), EXIT_GUEST_FAULT),
        Ending::Killed(kill) => {
            // A limit kills; a panic or a bad access is the guest's own trap.
            let (outcome, code) = if kill.is_limit() { ("killed", EXIT_LIMIT_KILL) } else { ("trapped", EXIT_TRAP) };
            (json!({ "outcome": outcome, "fault": kill.to_fault(execution.elapsed) }), code)
        }
        Ending::Cancelled => (json!({ "outcome": "cancelled" }), EXIT_LIMIT_KILL),
    };
    report["stats"] = json!({
        // To the microsecond: no float noise (0.183, not 0.18299200000000002).
        "elapsed_ms": execution.elapsed.as_micros() as f64 / 1e3,
        "fuel_consumed": execution.fuel_consumed,
        "peak_memory_bytes": execution.peak_memory,
        "log": execution.log,
        "plugin": plugin.digest(),
        "code_source": plugin.code_source(),
        "imports": plugin.imports(),
    });
    (report, code)
}
