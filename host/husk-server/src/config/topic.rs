//! `[topics.NAME]`: one topic of `husk.toml`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use husk::capability::{AllowedHost, ConfigGrant, Grants, HttpGrant, Secret};
use husk::classify::Rule;
use husk::host::{MapperSpec, OperatorFile, PluginSource, Topic};
use husk::periodic::{DEFAULT_CATCH_UP, Schedule, ScheduleError};
use husk::permanent::PermanentFaults;
use husk::retry::RetryPolicySpec;
use husk::sandbox::Limits;

use super::KeyError;

/// One topic.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TopicConfig {
    /// The tenant owning the topic (required when tenants are configured;
    /// a topic without one is not reachable through the API).
    #[serde(default)]
    pub tenant: Option<String>,
    /// The component (`.wasm`) of the `operation` world; a `.cwasm` from
    /// `husk compile` only with `allow_precompiled`.
    pub plugin: PathBuf,
    /// Worker threads (default: the CPU count).
    #[serde(default)]
    pub workers: Option<usize>,
    /// Jobs claimed per fetch (default 1).
    #[serde(default)]
    pub fetch_batch: Option<usize>,
    /// Deadline of one run (default `10s`).
    #[serde(default, with = "humantime_serde")]
    pub deadline: Option<Duration>,
    /// Fuel budget of one run (default: unlimited).
    #[serde(default)]
    pub fuel: Option<u64>,
    /// Memory cap of one instance (default `64MiB`).
    #[serde(default)]
    pub memory: Option<bytesize::ByteSize>,
    /// How long a claimed job stays locked (default: deadline × batch +
    /// 30s). A lock that expires costs an attempt.
    #[serde(default, with = "humantime_serde")]
    pub lock_duration: Option<Duration>,
    /// The topic's retry policy (default: the engine-wide one).
    #[serde(default)]
    pub retry: Option<RetryPolicySpec>,
    /// Fault codes (or prefixes ending in `*`) the topic never retries,
    /// replacing the engine-wide `permanent_faults`.
    #[serde(default)]
    pub permanent_faults: Option<Vec<String>>,
    /// An error-mapper component, or `"self"` when the plugin exports
    /// `classify` itself.
    #[serde(default)]
    pub mapper: Option<PathBuf>,
    /// Periodic jobs: a cron line (minute hour day month weekday, with an
    /// optional leading seconds field); each tick makes one job of `input`,
    /// once across every process sharing the store.
    #[serde(default)]
    pub schedule: Option<String>,
    /// The input of each periodic job (any TOML value, sent as JSON;
    /// default `{}`).
    #[serde(default)]
    pub input: Option<toml::Value>,
    /// The schedule's time zone, an IANA name (default `UTC`).
    #[serde(default)]
    pub timezone: Option<String>,
    /// How far back a starting process enqueues the ticks missed while no
    /// process ran (default `1m`).
    #[serde(default, with = "humantime_serde")]
    pub catch_up: Option<Duration>,
    /// Declarative classification rules (instead of `mapper`).
    #[serde(default)]
    pub mapper_rules: Option<Vec<Rule>>,
    /// Deadline of one run of the Wasm error mapper (default `100ms`).
    #[serde(default, with = "humantime_serde")]
    pub mapper_deadline: Option<Duration>,
    /// Hosts the topic's jobs may call over `wasi:http`:
    /// `scheme://host[:port]`, a leading `*.` for any subdomain (default:
    /// none, and a component importing `wasi:http` is refused).
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    /// Longest connect, first-byte or between-bytes wait of one outbound
    /// request (default `30s`; never past the job's deadline).
    #[serde(default, with = "humantime_serde")]
    pub http_timeout: Option<Duration>,
    /// Most bytes of response bodies one job reads (default `16MiB`).
    #[serde(default)]
    pub max_http_response: Option<bytesize::ByteSize>,
    /// Most outbound requests of one job (default 64).
    #[serde(default)]
    pub max_http_requests: Option<u32>,
    /// Config values the topic's jobs read through `wasi:config/store`.
    #[serde(default)]
    pub config: BTreeMap<String, String>,
    /// Secrets read the same way, each `env:VAR` or `file:PATH`, read at
    /// start and on each deploy; husk never writes their values, and
    /// replaces them with `***` in what a job logs or faults with.
    #[serde(default)]
    pub secrets: BTreeMap<String, String>,
}

impl TopicConfig {
    /// The limits each job of the topic runs with (defaults filled in).
    pub fn limits(&self) -> Limits {
        let defaults = Limits::default();
        let (deadline, memory) = (defaults.deadline, defaults.memory);
        defaults
            .with_deadline(self.deadline.unwrap_or(deadline))
            .with_fuel(self.fuel)
            .with_memory(self.memory.map_or(memory, |m| m.as_u64()))
    }

    /// The topic's `allowed_hosts`, parsed; `key` is the topic's.
    pub(super) fn allowed(&self, key: &str) -> Result<Vec<AllowedHost>, KeyError> {
        parse_hosts(&self.allowed_hosts, &format!("{key}.allowed_hosts"))
    }

    /// What the topic grants its jobs (`base`: the config file's
    /// directory, for secret files).
    pub(super) fn grants(&self, name: &str, base: &Path) -> Result<Grants, KeyError> {
        let mut grants = Grants::default();
        let allowed = self.allowed(&format!("topics.{name}"))?;
        if !allowed.is_empty() {
            let defaults = HttpGrant::default();
            let http = HttpGrant::default()
                .with_allowed(allowed)
                .with_timeout(self.http_timeout.unwrap_or(defaults.timeout))
                .with_max_response(self.max_http_response.map_or(defaults.max_response, |b| b.as_u64()))
                .with_max_requests(self.max_http_requests.unwrap_or(defaults.max_requests));
            grants = grants.with_http(http);
        }
        if !self.config.is_empty() || !self.secrets.is_empty() {
            let mut secrets = BTreeMap::new();
            for (key, text) in &self.secrets {
                let secret = Secret::parse(text)
                    .map_err(|reason| KeyError::new(format!("topics.{name}.secrets.{key}"), reason))?;
                let secret = match secret {
                    Secret::File(path) => Secret::File(base.join(path)),
                    env => env,
                };
                secrets.insert(key.clone(), secret);
            }
            let config = ConfigGrant::new(self.config.clone(), secrets)
                .map_err(|e| KeyError::new(format!("topics.{name}.secrets.{}", e.key), e.reason))?;
            grants = grants.with_config(config);
        }
        Ok(grants)
    }

    pub(super) fn to_topic(&self, name: &str, base: &Path, allow_precompiled: bool) -> Result<Topic, KeyError> {
        let source = |path: &Path| plugin_source(base.join(path), allow_precompiled);
        let mut topic =
            Topic::wasm(name, source(&self.plugin)).with_limits(self.limits()).with_grants(self.grants(name, base)?);
        if let Some(tenant) = &self.tenant {
            topic = topic.with_tenant(tenant);
        }
        if let Some(workers) = self.workers {
            topic = topic.with_workers(workers);
        }
        if let Some(batch) = self.fetch_batch {
            topic = topic.with_fetch_batch(batch);
        }
        if let Some(lock) = self.lock_duration {
            topic = topic.with_lock_duration(lock);
        }
        if let Some(retry) = self.retry {
            topic = topic.with_retry(retry);
        }
        if let Some(codes) = &self.permanent_faults {
            let key = format!("topics.{name}.permanent_faults");
            topic = topic.with_permanent_faults(permanent_faults(codes, &key)?);
        }
        if let Some(schedule) = self.schedule(name)? {
            topic = topic.with_schedule(schedule);
        }
        if let Some(deadline) = self.mapper_deadline {
            topic = topic.with_mapper_deadline(deadline);
        }
        Ok(match (&self.mapper, &self.mapper_rules) {
            (Some(path), _) if path.as_os_str() == "self" => topic.with_mapper(MapperSpec::SamePlugin),
            (Some(path), _) => topic.with_mapper(MapperSpec::Plugin(source(path))),
            (None, Some(rules)) => topic.with_mapper(MapperSpec::Rules(rules.clone())),
            (None, None) => topic,
        })
    }
}

/// A plugin file of the config: a component only, or — when the operator
/// set `allow_precompiled` — also precompiled machine code.
#[allow(unsafe_code)]
fn plugin_source(path: PathBuf, allow_precompiled: bool) -> PluginSource {
    if allow_precompiled {
        // SAFETY: the operator, in their own config file, declared its
        // plugin files their own (`allow_precompiled`); no API call or
        // tenant can name a file here.
        PluginSource::Operator(unsafe { OperatorFile::new(path) })
    } else {
        PluginSource::Path(path)
    }
}

/// `hosts` parsed as allowlist entries; `key` names the list.
pub(super) fn parse_hosts(hosts: &[String], key: &str) -> Result<Vec<AllowedHost>, KeyError> {
    hosts
        .iter()
        .enumerate()
        .map(|(i, entry)| AllowedHost::parse(entry).map_err(|e| KeyError::new(format!("{key}[{i}]"), e.to_string())))
        .collect()
}

/// A `permanent_faults` list (at `key`), checked.
pub(super) fn permanent_faults(codes: &[String], key: &str) -> Result<PermanentFaults, KeyError> {
    PermanentFaults::new(codes.iter().cloned()).map_err(|e| KeyError::new(key, e.to_string()))
}

impl TopicConfig {
    /// The topic's schedule of periodic jobs, if it sets one.
    ///
    /// # Errors
    ///
    /// [`KeyError`] naming the key that is wrong, or a periodic job's key
    /// (`input`, `timezone`, `catch_up`) without a `schedule`.
    pub(super) fn schedule(&self, name: &str) -> Result<Option<Schedule>, KeyError> {
        let key = |key: &str| format!("topics.{name}.{key}");
        let Some(line) = &self.schedule else {
            let orphan = [("input", self.input.is_some()), ("timezone", self.timezone.is_some())]
                .into_iter()
                .chain([("catch_up", self.catch_up.is_some())])
                .find(|(_, set)| *set);
            return match orphan {
                Some((orphan, _)) => Err(KeyError::new(key(orphan), "applies to periodic jobs: set `schedule`")),
                None => Ok(None),
            };
        };
        let input = match &self.input {
            Some(value) => serde_json::to_vec(value).map_err(|e| KeyError::new(key("input"), e.to_string()))?,
            None => b"{}".to_vec(),
        };
        let catch_up = self.catch_up.unwrap_or(DEFAULT_CATCH_UP);
        Schedule::new(line, self.timezone.as_deref(), input, catch_up).map(Some).map_err(|e| {
            let which = match e {
                ScheduleError::TimeZone(_) => "timezone",
                ScheduleError::CatchUp => "catch_up",
                _ => "schedule",
            };
            KeyError::new(key(which), e.to_string())
        })
    }
}
