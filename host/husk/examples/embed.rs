//! Embedding husk in an engine: build a host with a topic, enqueue jobs,
//! and receive their terminal outcomes through the engine's own sink. It
//! depends on the `husk` crate alone, with its in-memory store.
//!
//! `cargo run -p husk --example embed [GUEST_DIR]` — the example guests'
//! components, by default in `target/guests/wasm32-wasip2/release` (a
//! `cargo build` of the workspace builds them there).

use std::sync::Arc;
use std::sync::mpsc::{Sender, channel};
use std::time::Duration;

use husk::outcome::{OutcomeSink, TerminalOutcome};
use husk::retry::RetryPolicySpec;
use husk::{Host, PluginSource, Topic};

/// The engine's sink: terminal outcomes only, one per job.
struct EngineSink(std::sync::Mutex<Sender<TerminalOutcome>>);

impl OutcomeSink for EngineSink {
    fn deliver(&self, outcome: &TerminalOutcome) {
        let _ = self.0.lock().unwrap().send(outcome.clone());
    }
}

fn main() -> anyhow::Result<()> {
    let guests = std::env::args().nth(1).map_or_else(
        || std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/guests/wasm32-wasip2/release"),
        std::path::PathBuf::from,
    );
    anyhow::ensure!(
        guests.join("transform.wasm").exists(),
        "no example guests in {}: build them with `cargo build`, or name their directory",
        guests.display()
    );
    let (tx, outcomes) = channel();
    let host = Host::builder()
        .sink(Arc::new(EngineSink(tx.into())))
        .topic(Topic::wasm("greet", PluginSource::Path(guests.join("transform.wasm"))))
        .topic(
            Topic::wasm("flaky", PluginSource::Path(guests.join("flaky.wasm")))
                .with_retry(RetryPolicySpec::Fixed { max_attempts: 3, delay: Duration::from_millis(10) }),
        )
        .build()?;

    host.enqueue("greet", r#"{"name":"Ada","amount":12.5}"#)?;
    host.enqueue("flaky", r#"{"succeed_on_attempt":2}"#)?;
    host.enqueue("flaky", r#"{"succeed_on_attempt":9}"#)?;

    for outcome in outcomes.iter().take(3) {
        println!(
            "job {} on {} after {} attempt(s): {}",
            outcome.job_id,
            outcome.topic,
            outcome.attempts,
            serde_json::to_string(&outcome.outcome)?
        );
    }
    host.shutdown();
    Ok(())
}
