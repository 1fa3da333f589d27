//! Shared test helpers: guest paths, engines and sandboxes, and a tracing
//! layer that captures what guests log.

use std::path::{Path, PathBuf};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};

use husk::engine::{Engine, EngineConfig};
use husk::fault::Fault;
use husk::plugin::{Plugin, World};
use husk::sandbox::{Ending, Execution, Job, Limits, Sandbox};
use serde_json::Value;
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context, SubscriberExt};

/// The path of an example guest's component, e.g. `guest("transform")`.
pub fn guest(name: &str) -> PathBuf {
    PathBuf::from(env!("HUSK_GUEST_DIR")).join(format!("{}.wasm", name.replace('-', "_")))
}

/// An engine config for tests: a small pool, no cache.
pub fn test_config() -> EngineConfig {
    EngineConfig::default().with_max_instances(8)
}

/// An engine config sharing one compile cache across the tests of a run
/// (and later runs in the same checkout): the Python, JavaScript and Go
/// components take seconds each to compile, and several tests load each.
/// It lives in the target dir: those components are not byte-for-byte
/// reproducible (two builds of the Python `transform` differ), so a clean
/// clone's would miss a cache kept elsewhere, which would only grow.
pub fn cached_config() -> EngineConfig {
    let cache = husk_cli::cli::default_cache_dir().unwrap_or_else(|| {
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/guests/compile-cache")
    });
    test_config().with_cache_dir(Some(cache))
}

/// A sandbox whose engine ticks by itself every 10 ms.
pub fn sandbox() -> Sandbox {
    Sandbox::new(Engine::new(test_config()).unwrap()).unwrap()
}

/// A sandbox whose epoch only moves when the test calls
/// `engine().increment_epoch()`.
pub fn manual_sandbox() -> Sandbox {
    Sandbox::new(Engine::new(test_config().with_epoch_tick(None)).unwrap()).unwrap()
}

/// A sandbox with fuel metering on.
pub fn fuel_sandbox() -> Sandbox {
    Sandbox::new(Engine::new(test_config().with_fuel(true)).unwrap()).unwrap()
}

/// The error mapper's deadline in tests that need its answer: the 100 ms
/// default is ample for every language's mapper on an idle machine (see the
/// languages bench), but a cold Python or JavaScript mapper can pass it on a
/// loaded one (wall time, not CPU time), and a mapper past it turns the
/// fault technical.
pub const MAPPER_DEADLINE: std::time::Duration = std::time::Duration::from_secs(10);

/// The error mapper's limits for tests of what a mapper returns: no fuel, and
/// [`MAPPER_DEADLINE`].
pub fn mapper_limits() -> Limits {
    Limits::error_mapper().with_fuel(None).with_deadline(MAPPER_DEADLINE)
}

/// Loads an example guest as `world`.
pub fn load_as(sandbox: &Sandbox, name: &str, world: World) -> Plugin {
    sandbox.load(&guest(name), world).unwrap_or_else(|e| panic!("loading {name}: {e}"))
}

/// Loads an example guest as an operation.
pub fn load(sandbox: &Sandbox, name: &str) -> Plugin {
    load_as(sandbox, name, World::Operation)
}

/// A job with JSON `input`.
pub fn job(attempt: u32, input: Value) -> Job {
    Job { id: format!("job-{attempt}"), topic: "test".into(), attempt, input: input.to_string().into_bytes() }
}

/// Runs one job with `limits`.
pub fn run_with(sandbox: &Sandbox, plugin: &Plugin, input: Value, limits: &Limits) -> Execution {
    sandbox.execute(plugin, &job(1, input), limits, None).unwrap()
}

/// Runs one job with default limits.
pub fn run(sandbox: &Sandbox, plugin: &Plugin, input: Value) -> Execution {
    run_with(sandbox, plugin, input, &Limits::default())
}

/// The JSON output of a completed execution; panics on any other ending.
pub fn output(execution: &Execution) -> Value {
    match &execution.ending {
        Ending::Returned(bytes) => serde_json::from_slice(bytes).unwrap(),
        other => panic!("expected a completed job, got {other:?}"),
    }
}

/// The raw fault of a failed execution (guest fault or kill) and its JSON
/// body; panics on any other ending.
pub fn fault(execution: &Execution) -> (Fault, Value) {
    match execution.raw_result() {
        Some(Err(fault)) => {
            let body = fault.body_value();
            (fault, body)
        }
        other => panic!("expected a fault, got {other:?}"),
    }
}

/// Everything guests logged through `tracing`, captured by [`GuestLogs`].
#[derive(Clone, Default)]
pub struct GuestLogs {
    messages: Arc<Mutex<Vec<String>>>,
    notify: Option<Arc<Mutex<Sender<String>>>>,
}

impl GuestLogs {
    /// A capture that also sends each guest message to `notify`.
    pub fn notifying(notify: Sender<String>) -> Self {
        Self { notify: Some(Arc::new(Mutex::new(notify))), ..Self::default() }
    }

    /// Runs `f` with this capture as the thread's subscriber.
    pub fn capture<R>(&self, f: impl FnOnce() -> R) -> R {
        let subscriber = tracing_subscriber::registry().with(self.clone());
        tracing::subscriber::with_default(subscriber, f)
    }

    /// The messages guests wrote (not the host's own notes about them).
    pub fn messages(&self) -> Vec<String> {
        self.messages.lock().unwrap().clone()
    }
}

struct MessageVisitor(String);

impl Visit for MessageVisitor {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for GuestLogs {
    fn on_event(&self, event: &tracing::Event<'_>, _cx: Context<'_, S>) {
        if event.metadata().target() != husk::sandbox::GUEST_TARGET {
            return;
        }
        let mut visitor = MessageVisitor(String::new());
        event.record(&mut visitor);
        if visitor.0.starts_with("guest log cap reached") {
            return;
        }
        if let Some(notify) = &self.notify {
            let _ = notify.lock().unwrap().send(visitor.0.clone());
        }
        self.messages.lock().unwrap().push(visitor.0);
    }
}

/// A language husk guests are written in, beside Rust: its example guests
/// are built by `scripts/build-guests <language>` into
/// `target/guests/<language>/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    /// Rust, through `husk-guest` (built by host/husk-cli/build.rs).
    Rust,
    /// Python, through componentize-py.
    Python,
    /// JavaScript, through componentize-js.
    Js,
    /// C, through clang and `husk sdk`.
    C,
    /// Go, through `go build` and `husk sdk` (with husk's preview 1 adapter).
    Go,
}

impl Language {
    pub const ALL: [Language; 5] = [Language::Rust, Language::Python, Language::Js, Language::C, Language::Go];

    pub fn name(self) -> &'static str {
        match self {
            Language::Rust => "rust",
            Language::Python => "python",
            Language::Js => "js",
            Language::C => "c",
            Language::Go => "go",
        }
    }

    /// Whether this language's toolchain is installed, as the build saw it
    /// (the cfgs husk-cli's build script sets; see `scripts/build-guests`).
    /// Rust's always is.
    pub fn installed(self) -> bool {
        match self {
            Language::Rust => true,
            Language::Python => cfg!(husk_guests_python),
            Language::Js => cfg!(husk_guests_js),
            Language::C => cfg!(husk_guests_c),
            Language::Go => cfg!(husk_guests_go),
        }
    }

    /// The component of the example `name` (transform, flaky, business,
    /// runaway, mapper, fetch — not in C —, config) in this language, building the language's examples
    /// first (once per test run); `None` when its toolchain is not
    /// installed (the tests that need it are ignored, saying so). An
    /// installed toolchain that fails to build them fails the test.
    pub fn guest(self, name: &str) -> Option<PathBuf> {
        use std::sync::OnceLock;
        static BUILT: [OnceLock<Result<PathBuf, String>>; 4] =
            [OnceLock::new(), OnceLock::new(), OnceLock::new(), OnceLock::new()];
        let slot = match self {
            Language::Rust => return Some(guest(if name == "runaway" { "spin" } else { name })),
            Language::Python => &BUILT[0],
            Language::Js => &BUILT[1],
            Language::C => &BUILT[2],
            Language::Go => &BUILT[3],
        };
        if !self.installed() {
            return None;
        }
        match slot.get_or_init(|| build_guests(self)) {
            Ok(dir) => Some(dir.join(format!("{name}.wasm"))),
            Err(reason) => panic!("the {} guests cannot be built: {reason}", self.name()),
        }
    }
}

fn build_guests(language: Language) -> Result<PathBuf, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2).unwrap().to_path_buf();
    let output = std::process::Command::new(root.join("scripts/build-guests"))
        .arg(language.name())
        .env("HUSK", env!("CARGO_BIN_EXE_husk"))
        .output()
        .map_err(|e| format!("cannot run scripts/build-guests: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "`scripts/build-guests {}` failed:\n{}{}",
            language.name(),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(root.join("target/guests").join(language.name()))
}
