//! Embedding husk in an engine: build a host with a topic, enqueue jobs,
//! and receive their terminal outcomes through the engine's own sink.
//!
//! `cargo run --example embed`

use std::sync::Arc;
use std::sync::mpsc::{Sender, channel};
use std::time::Duration;

use husk_host::outcome::{OutcomeSink, TerminalOutcome};
use husk_host::retry::RetryPolicySpec;
use husk_host::{Host, PluginSource, Topic};

/// The engine's sink: terminal outcomes only, one per job.
struct EngineSink(std::sync::Mutex<Sender<TerminalOutcome>>);

impl OutcomeSink for EngineSink {
    fn deliver(&self, outcome: &TerminalOutcome) {
        let _ = self.0.lock().unwrap().send(outcome.clone());
    }
}

fn main() -> anyhow::Result<()> {
    let guests = std::path::Path::new(env!("HUSK_GUEST_DIR"));
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
