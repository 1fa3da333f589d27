//! Metrics in the Prometheus text format (`GET /metrics`): jobs by topic
//! and outcome, retries, kills by reason, fuel used, job latency, queue
//! depth, the current plugin version of each topic, and what the cleaner
//! pruned. Counters are fed by
//! the worker threads ([`AttemptObserver`]) and the outcome sink; gauges
//! are read from the host when scraped.

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use husk::host::Host;
use husk::outcome::{OutcomeSink, TerminalOutcome};
use husk::worker::{AttemptObserver, Handled};

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TopicLabel {
    topic: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    topic: String,
    outcome: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KillLabels {
    topic: String,
    reason: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DepthLabels {
    topic: String,
    state: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct VersionLabels {
    topic: String,
    version: String,
}

/// Latency buckets in seconds: 1 ms to ~65 s.
fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 17))
}

/// husk's metrics. One per process; share it as an `Arc`.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    jobs: Family<OutcomeLabels, Counter>,
    attempts: Family<TopicLabel, Counter>,
    retries: Family<TopicLabel, Counter>,
    kills: Family<KillLabels, Counter>,
    /// The last hour, minute by minute, for the dashboard.
    recent: crate::recent::Recent,
    fuel: Family<TopicLabel, Counter>,
    latency: Family<TopicLabel, Histogram, fn() -> Histogram>,
    depth: Family<DepthLabels, Gauge>,
    versions: Family<VersionLabels, Gauge>,
    pruned: Family<TableLabel, Gauge>,
    oldest: Gauge,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TableLabel {
    table: String,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Empty metrics, registered.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("husk");
        let metrics = Self {
            registry: Registry::default(),
            jobs: Family::default(),
            attempts: Family::default(),
            retries: Family::default(),
            kills: Family::default(),
            recent: crate::recent::Recent::new(),
            fuel: Family::default(),
            latency: Family::new_with_constructor(latency_histogram),
            depth: Family::default(),
            versions: Family::default(),
            pruned: Family::default(),
            oldest: Gauge::default(),
        };
        registry.register("jobs", "Jobs ended, by topic and terminal outcome", metrics.jobs.clone());
        registry.register("attempts", "Attempts run, by topic", metrics.attempts.clone());
        registry.register("retries", "Technical faults re-armed for a retry, by topic", metrics.retries.clone());
        registry.register("kills", "Attempts killed at a limit or trapped, by topic and reason", metrics.kills.clone());
        registry.register("fuel_used", "Fuel consumed by attempts, by topic (when metered)", metrics.fuel.clone());
        registry.register(
            "job_latency_seconds",
            "Time from enqueue to terminal outcome, by topic",
            metrics.latency.clone(),
        );
        registry.register(
            "queue_depth",
            "Live jobs by topic and state (queued, gated, running)",
            metrics.depth.clone(),
        );
        registry.register("plugin_version", "1 for each topic's current plugin version", metrics.versions.clone());
        registry.register(
            "pruned_rows",
            "Rows this process's cleaner pruned since it started, by table (outcomes, keys)",
            metrics.pruned.clone(),
        );
        registry.register(
            "oldest_outcome_age_seconds",
            "Age of the oldest outcome the store keeps (0 when none)",
            metrics.oldest.clone(),
        );
        Self { registry, ..metrics }
    }

    /// The last hour of outcomes and kills this process saw.
    pub fn recent(&self) -> &crate::recent::Recent {
        &self.recent
    }

    /// The text exposition, with gauges refreshed from `host`.
    pub fn render(&self, host: &Host) -> String {
        let snapshot = host.snapshot();
        for (topic, depth) in &snapshot.depths {
            for (state, n) in [("queued", depth.queued), ("gated", depth.gated), ("running", depth.running)] {
                let labels = DepthLabels { topic: topic.clone(), state: state.to_owned() };
                self.depth.get_or_create(&labels).set(i64::try_from(n).unwrap_or(i64::MAX));
            }
        }
        for (table, n) in [("outcomes", snapshot.totals.pruned_outcomes), ("keys", snapshot.totals.pruned_keys)] {
            self.pruned
                .get_or_create(&TableLabel { table: table.to_owned() })
                .set(i64::try_from(n).unwrap_or(i64::MAX));
        }
        let age = snapshot.oldest_outcome.and_then(|at| snapshot.taken_at.duration_since(at).ok());
        self.oldest.set(age.map_or(0, |a| i64::try_from(a.as_secs()).unwrap_or(i64::MAX)));
        self.versions.clear();
        for topic in host.topics() {
            if let Some(current) = host.current_version(topic.name()) {
                let labels = VersionLabels { topic: topic.name().to_owned(), version: current.version };
                self.versions.get_or_create(&labels).set(1);
            }
        }
        let mut text = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.registry);
        text
    }

    fn topic(topic: &str) -> TopicLabel {
        TopicLabel { topic: topic.to_owned() }
    }
}

impl AttemptObserver for Metrics {
    fn attempted(&self, topic: &str, handled: &Handled) {
        self.attempts.get_or_create(&Self::topic(topic)).inc();
        if let Some(reason) = handled.killed() {
            self.kills.get_or_create(&KillLabels { topic: topic.to_owned(), reason: reason.to_owned() }).inc();
            self.recent.kill(topic, reason, std::time::SystemTime::now());
        }
        if let Some(fuel) = handled.fuel_consumed {
            self.fuel.get_or_create(&Self::topic(topic)).inc_by(fuel);
        }
    }

    fn retried(&self, topic: &str) {
        self.retries.get_or_create(&Self::topic(topic)).inc();
    }
}

impl OutcomeSink for Metrics {
    fn deliver(&self, outcome: &TerminalOutcome) {
        let labels = OutcomeLabels { topic: outcome.topic.clone(), outcome: outcome.outcome.kind().to_owned() };
        self.jobs.get_or_create(&labels).inc();
        self.recent.outcome(&outcome.topic, outcome.outcome.kind(), outcome.finished_at);
        let latency = outcome.finished_at.duration_since(outcome.enqueued_at).unwrap_or(Duration::ZERO);
        self.latency.get_or_create(&Self::topic(&outcome.topic)).observe(latency.as_secs_f64());
    }
}
