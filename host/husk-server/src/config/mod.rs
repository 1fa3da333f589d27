//! `husk.toml`: the one file an operator writes to run `husk serve`. Every
//! key and its default is documented in the repository's `husk.toml`.
//!
//! Paths in the file (plugins, mappers, the SQLite store, the cache) are
//! relative to the file's directory. A bad file fails at start with one
//! line naming the file, the key and the reason.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use husk::capability::Secret;
use husk::engine::EngineConfig;
use husk::host::Topic;
use husk::retry::RetryPolicySpec;
use husk::store::{JobStore, MemoryStore, StoreError};
use husk_postgres::{PostgresConfig, PostgresStore};
use husk_sqlite::{Durability, SqliteStore};

use crate::tokens::TokenRef;

mod topic;

pub use topic::TopicConfig;
use topic::parse_hosts;

/// The default SQLite file, relative to the config file's directory.
pub const DEFAULT_STORE: &str = "husk-data/husk.db";

/// The default address of the HTTP API.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";

/// `[retention]`: how long ended jobs (outcome, history, input, idempotency
/// key) are kept. Open incidents are kept until retried or discarded.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetentionConfig {
    /// Whether the cleaner runs (default `true`).
    #[serde(default)]
    pub enabled: Option<bool>,
    /// Completed jobs (default `24h`).
    #[serde(default, with = "humantime_serde")]
    pub completed: Option<Duration>,
    /// Business errors and statuses, and cancelled jobs (default `7days`).
    #[serde(default, with = "humantime_serde")]
    pub business: Option<Duration>,
    /// Failed jobs that are no longer open incidents (default `7days`).
    #[serde(default, with = "humantime_serde")]
    pub failed: Option<Duration>,
    /// How often the cleaner runs (default `1m`).
    #[serde(default, with = "humantime_serde")]
    pub every: Option<Duration>,
    /// Topics whose jobs' inputs are dropped when the jobs end (personal
    /// data, say), not kept with their outcomes; an open incident keeps
    /// its input until retried or discarded (default: none).
    #[serde(default)]
    pub drop_inputs: Vec<String>,
}

impl RetentionConfig {
    /// The retention, or `None` when the cleaner is off.
    pub fn retention(&self) -> Option<husk::store::Retention> {
        let default = husk::store::Retention::default();
        self.enabled.unwrap_or(true).then(|| husk::store::Retention {
            completed: self.completed.unwrap_or(default.completed),
            business: self.business.unwrap_or(default.business),
            failed: self.failed.unwrap_or(default.failed),
        })
    }
}

/// The whole file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Dashboard tokens of operators, who see every tenant's topics and
    /// jobs (same forms as a tenant's `tokens`; the API does not take them).
    #[serde(default)]
    pub operator_tokens: Vec<String>,
    /// Where jobs live: a SQLite file path (default `husk-data/husk.db`),
    /// `postgres://…`, or `memory` (nothing survives a restart).
    #[serde(default)]
    pub store: Option<String>,
    /// SQLite commit durability: `normal` (survives a crash of husk) or
    /// `full` (also a power loss).
    #[serde(default)]
    pub sqlite_sync: SqliteSync,
    /// PostgreSQL: connections per process (default 16).
    #[serde(default)]
    pub postgres_pool: Option<u32>,
    /// PostgreSQL: the schema of husk's tables (default: the connection's).
    #[serde(default)]
    pub postgres_schema: Option<String>,
    /// Epoch tick: the granularity of deadlines (default `10ms`).
    #[serde(default, with = "humantime_serde")]
    pub epoch_tick: Option<Duration>,
    /// How long a shutdown lets running jobs finish (default `10s`).
    #[serde(default, with = "humantime_serde")]
    pub shutdown_grace: Option<Duration>,
    /// Plugin versions the store keeps per topic, for rollbacks (default
    /// 16, at least 1).
    #[serde(default)]
    pub kept_versions: Option<usize>,
    /// How long ended jobs are kept before the cleaner prunes them.
    #[serde(default)]
    pub retention: RetentionConfig,
    /// The compile cache directory (default: as `husk run`).
    #[serde(default)]
    pub cache_dir: Option<PathBuf>,
    /// Whether topics' `plugin` and `mapper` files may be machine code
    /// precompiled by `husk compile` (`.cwasm`), which runs with husk's
    /// rights (default `false`: components only). Set it only when those
    /// files are the operator's own, writable by no one else.
    #[serde(default)]
    pub allow_precompiled: bool,
    /// The engine-wide retry policy (default: 3 attempts, exponential
    /// 1s..60s with jitter).
    #[serde(default)]
    pub retry: Option<RetryPolicySpec>,
    /// Fault codes (or prefixes ending in `*`) never retried: such a job
    /// ends at once, an incident (default: `http.http-request-denied`,
    /// `invalid-input`; a list replaces them).
    #[serde(default)]
    pub permanent_faults: Option<Vec<String>>,
    /// The HTTP API's address (default `127.0.0.1:8080`; `--listen`
    /// overrides it).
    #[serde(default)]
    pub listen: Option<String>,
    /// The largest request body the API takes for a job's input (default
    /// `1MiB`); a deploy's component may be up to `max_plugin_size`.
    #[serde(default)]
    pub max_input_size: Option<bytesize::ByteSize>,
    /// The largest component a deploy takes (default `64MiB`).
    #[serde(default)]
    pub max_plugin_size: Option<bytesize::ByteSize>,
    /// The largest body of a batch enqueue, all its jobs (default
    /// `16MiB`; each input still within `max_input_size`).
    #[serde(default)]
    pub max_batch_size: Option<bytesize::ByteSize>,
    /// Tenants by name: who may call the API, and their quotas.
    #[serde(default)]
    pub tenants: BTreeMap<String, TenantConfig>,
    /// Topics by name.
    #[serde(default)]
    pub topics: BTreeMap<String, TopicConfig>,
}

/// SQLite commit durability.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SqliteSync {
    /// [`Durability::Normal`].
    #[default]
    Normal,
    /// [`Durability::Full`].
    Full,
}

/// One tenant: its API tokens and its quotas. A quota left out is
/// unlimited.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TenantConfig {
    /// API tokens, never in clear: `sha256:<64 hex digits>` (the SHA-256 of
    /// the token) or `env:VAR` (the token is in the environment variable
    /// `VAR` when husk starts).
    #[serde(default)]
    pub tokens: Vec<String>,
    /// Dashboard tokens that may look at the tenant's topics and jobs but
    /// change nothing (same forms as `tokens`; the API does not take them).
    #[serde(default)]
    pub read_tokens: Vec<String>,
    /// Most jobs of the tenant's topics running at once, across its topics.
    #[serde(default)]
    pub max_concurrent: Option<usize>,
    /// Most live (queued, gated or running) jobs across its topics; an
    /// enqueue past it is refused with 429.
    #[serde(default)]
    pub max_queued: Option<u64>,
    /// Ceiling of a topic's `memory`.
    #[serde(default)]
    pub max_memory: Option<bytesize::ByteSize>,
    /// Ceiling of a topic's `fuel` (a topic without a fuel budget is then
    /// refused).
    #[serde(default)]
    pub max_fuel: Option<u64>,
    /// Ceiling of a topic's `deadline`.
    #[serde(default, with = "humantime_serde")]
    pub max_deadline: Option<Duration>,
    /// Ceiling of its topics' `allowed_hosts`: each entry of a topic must
    /// be within one of these (absent: no ceiling; empty: no outbound HTTP
    /// for any of its topics).
    #[serde(default)]
    pub allowed_hosts: Option<Vec<String>>,
}

/// What is wrong in a config text: the key (a dotted path such as
/// `topics.a.workers`; empty for the text as a whole) and why, on one line
/// (with the line number when the TOML parser knows it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyError {
    /// The key.
    pub key: String,
    /// Why.
    pub reason: String,
}

impl KeyError {
    fn new(key: impl Into<String>, reason: impl Into<String>) -> Self {
        Self { key: key.into(), reason: reason.into() }
    }
}

impl std::fmt::Display for KeyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.key.is_empty() { f.write_str(&self.reason) } else { write!(f, "{}: {}", self.key, self.reason) }
    }
}

impl std::error::Error for KeyError {}

/// Why a config file was refused: one line naming the file, the key and
/// the reason.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file cannot be read.
    #[error("{}: cannot read: {source}", file.display())]
    Read {
        /// The file.
        file: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A key is wrong.
    #[error("{}: {error}", file.display())]
    Invalid {
        /// The file.
        file: PathBuf,
        /// The key and why.
        error: KeyError,
    },
}

impl Config {
    /// Reads and checks `path`.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming the file, the key and the reason.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text =
            std::fs::read_to_string(path).map_err(|source| ConfigError::Read { file: path.to_owned(), source })?;
        Self::parse(&text).map_err(|error| ConfigError::Invalid { file: path.to_owned(), error })
    }

    /// Parses and checks the text of a config file.
    ///
    /// # Errors
    ///
    /// [`KeyError`]: the key, and the reason with its line when known.
    pub fn parse(text: &str) -> Result<Self, KeyError> {
        let deserializer = toml::Deserializer::parse(text).map_err(|e| KeyError::new("", one_line(text, &e)))?;
        let config: Config = serde_path_to_error::deserialize(deserializer).map_err(|e| {
            let path = e.path().to_string();
            let inner = e.into_inner();
            KeyError::new(if path == "." { String::new() } else { path }, one_line(text, &inner))
        })?;
        config.check()?;
        Ok(config)
    }

    fn check(&self) -> Result<(), KeyError> {
        for (name, topic) in &self.topics {
            if topic.mapper.is_some() && topic.mapper_rules.is_some() {
                return Err(KeyError::new(format!("topics.{name}"), "set `mapper` or `mapper_rules`, not both"));
            }
            if topic.mapper_deadline.is_some() && topic.mapper.is_none() {
                let has = if topic.mapper_rules.is_some() { "`mapper_rules`" } else { "no mapper" };
                return Err(KeyError::new(
                    format!("topics.{name}.mapper_deadline"),
                    format!("applies to a Wasm `mapper` only, and this topic has {has}"),
                ));
            }
            if topic.workers == Some(0) {
                return Err(KeyError::new(format!("topics.{name}.workers"), "must be at least 1"));
            }
            if topic.fetch_batch == Some(0) {
                return Err(KeyError::new(format!("topics.{name}.fetch_batch"), "must be at least 1"));
            }
            topic.allowed(&format!("topics.{name}"))?;
            for (key, secret) in &topic.secrets {
                Secret::parse(secret)
                    .map_err(|reason| KeyError::new(format!("topics.{name}.secrets.{key}"), reason))?;
                if topic.config.contains_key(key) {
                    return Err(KeyError::new(
                        format!("topics.{name}.secrets.{key}"),
                        "is also a key of the topic's `config`",
                    ));
                }
            }
            let http_keys = [
                ("http_timeout", topic.http_timeout.is_some()),
                ("max_http_response", topic.max_http_response.is_some()),
                ("max_http_requests", topic.max_http_requests.is_some()),
            ];
            if let Some((key, _)) = http_keys.iter().find(|(_, set)| *set)
                && topic.allowed_hosts.is_empty()
            {
                return Err(KeyError::new(
                    format!("topics.{name}.{key}"),
                    "applies to outbound HTTP, which this topic does not grant (no `allowed_hosts`)",
                ));
            }
        }
        if self.topics.is_empty() {
            return Err(KeyError::new("topics", "no topic configured (add a [topics.<name>] table)"));
        }
        for (name, tenant) in &self.tenants {
            if let Some(hosts) = &tenant.allowed_hosts {
                parse_hosts(hosts, &format!("tenants.{name}.allowed_hosts"))?;
            }
            for (key, tokens) in [("tokens", &tenant.tokens), ("read_tokens", &tenant.read_tokens)] {
                for (i, token) in tokens.iter().enumerate() {
                    TokenRef::parse(token)
                        .map_err(|e| KeyError::new(format!("tenants.{name}.{key}[{i}]"), e.to_string()))?;
                }
            }
            if tenant.max_concurrent == Some(0) {
                return Err(KeyError::new(format!("tenants.{name}.max_concurrent"), "must be at least 1"));
            }
        }
        for (i, token) in self.operator_tokens.iter().enumerate() {
            TokenRef::parse(token).map_err(|e| KeyError::new(format!("operator_tokens[{i}]"), e.to_string()))?;
        }
        for (name, topic) in &self.topics {
            self.check_ceilings(name, topic)?;
        }
        self.permanent_faults()?;
        for (name, topic) in &self.topics {
            if let Some(codes) = &topic.permanent_faults {
                topic::permanent_faults(codes, &format!("topics.{name}.permanent_faults"))?;
            }
            topic.schedule(name)?;
        }
        for (i, topic) in self.retention.drop_inputs.iter().enumerate() {
            if !self.topics.contains_key(topic) {
                return Err(KeyError::new(format!("retention.drop_inputs[{i}]"), format!("no topic `{topic}`")));
            }
        }
        if let Some(listen) = &self.listen {
            listen.parse::<std::net::SocketAddr>().map_err(|e| KeyError::new("listen", format!("`{listen}`: {e}")))?;
        }
        Ok(())
    }

    /// A topic's tenant exists and its limits are within the tenant's
    /// ceilings.
    fn check_ceilings(&self, name: &str, topic: &TopicConfig) -> Result<(), KeyError> {
        let Some(tenant_name) = &topic.tenant else {
            if self.tenants.is_empty() {
                return Ok(());
            }
            return Err(KeyError::new(
                format!("topics.{name}.tenant"),
                "missing (every topic names its tenant when tenants are configured)",
            ));
        };
        let tenant = self.tenants.get(tenant_name).ok_or_else(|| {
            KeyError::new(
                format!("topics.{name}.tenant"),
                format!("no tenant `{tenant_name}` (add [tenants.{tenant_name}])"),
            )
        })?;
        let limits = topic.limits();
        let above = |key: &str, value: String, ceiling: String| {
            Err(KeyError::new(
                format!("topics.{name}.{key}"),
                format!("{value} is above tenant `{tenant_name}`'s ceiling of {ceiling}"),
            ))
        };
        if let Some(max) = tenant.max_memory
            && limits.memory > max.as_u64()
        {
            return above("memory", bytesize::ByteSize(limits.memory).to_string(), max.to_string());
        }
        if let Some(max) = tenant.max_deadline
            && limits.deadline > max
        {
            return above("deadline", format!("{:?}", limits.deadline), format!("{max:?}"));
        }
        if let (Some(max), Some(deadline)) = (tenant.max_deadline, topic.mapper_deadline)
            && deadline > max
        {
            return above("mapper_deadline", format!("{deadline:?}"), format!("{max:?}"));
        }
        match (tenant.max_fuel, limits.fuel) {
            (Some(max), Some(fuel)) if fuel > max => return above("fuel", fuel.to_string(), max.to_string()),
            (Some(max), None) => return above("fuel", "unlimited (not set)".into(), max.to_string()),
            _ => {}
        }
        if let Some(ceiling) = &tenant.allowed_hosts {
            let ceiling = parse_hosts(ceiling, &format!("tenants.{tenant_name}.allowed_hosts"))?;
            let hosts = topic.allowed(&format!("topics.{name}"))?;
            if let Some((i, host)) = hosts.iter().enumerate().find(|(_, host)| !ceiling.iter().any(|c| host.within(c)))
            {
                return Err(KeyError::new(
                    format!("topics.{name}.allowed_hosts[{i}]"),
                    format!(
                        "`{}` is not within tenant `{tenant_name}`'s `allowed_hosts` ({})",
                        topic.allowed_hosts[i],
                        if ceiling.is_empty() { "none".to_owned() } else { format!("{host} is not in it") }
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The API's address: `listen`, else [`DEFAULT_LISTEN`].
    pub fn listen(&self) -> &str {
        self.listen.as_deref().unwrap_or(DEFAULT_LISTEN)
    }

    /// The largest job input the API takes.
    pub fn max_input_size(&self) -> usize {
        self.max_input_size.map_or(1 << 20, |s| s.as_u64() as usize)
    }

    /// The largest component a deploy takes.
    pub fn max_plugin_size(&self) -> usize {
        self.max_plugin_size.map_or(64 << 20, |s| s.as_u64() as usize)
    }

    /// The largest batch enqueue the API takes.
    pub fn max_batch_size(&self) -> usize {
        self.max_batch_size.map_or(16 << 20, |s| s.as_u64() as usize)
    }

    /// The store the file names, opened (migrations applied). `base` is
    /// the config file's directory.
    ///
    /// # Errors
    ///
    /// The store's one-line [`StoreError`].
    pub fn open_store(&self, base: &Path) -> Result<Arc<dyn JobStore>, StoreError> {
        let store = self.store.as_deref().unwrap_or(DEFAULT_STORE);
        if store == "memory" {
            return Ok(Arc::new(MemoryStore::new()));
        }
        if store.starts_with("postgres://") || store.starts_with("postgresql://") {
            let mut config = PostgresConfig::new(store);
            config.schema = self.postgres_schema.clone();
            if let Some(pool) = self.postgres_pool {
                config.pool_size = pool;
            }
            return Ok(Arc::new(PostgresStore::open(&config)?));
        }
        let path = base.join(store.strip_prefix("sqlite:").unwrap_or(store));
        let durability = match self.sqlite_sync {
            SqliteSync::Normal => Durability::Normal,
            SqliteSync::Full => Durability::Full,
        };
        Ok(Arc::new(SqliteStore::open(&path, durability)?))
    }

    /// The engine configuration.
    pub fn engine(&self, base: &Path, default_cache: Option<PathBuf>) -> EngineConfig {
        EngineConfig::default()
            .with_epoch_tick(Some(self.epoch_tick.unwrap_or(Duration::from_millis(10))))
            .with_cache_dir(self.cache_dir.as_ref().map(|d| base.join(d)).or(default_cache))
    }

    /// The grace period of a shutdown.
    pub fn shutdown_grace(&self) -> Duration {
        self.shutdown_grace.unwrap_or(Duration::from_secs(10))
    }

    /// The engine-wide `permanent_faults`, when the file sets them.
    ///
    /// # Errors
    ///
    /// [`KeyError`] for a bad entry.
    pub fn permanent_faults(&self) -> Result<Option<husk::permanent::PermanentFaults>, KeyError> {
        self.permanent_faults.as_deref().map(|codes| topic::permanent_faults(codes, "permanent_faults")).transpose()
    }

    /// The topics, ready for [`husk::host::HostBuilder::topic`], their
    /// secrets read.
    ///
    /// # Errors
    ///
    /// [`KeyError`] naming a secret that cannot be read (an unset
    /// environment variable, a missing or world-readable file).
    pub fn topics(&self, base: &Path) -> Result<Vec<Topic>, KeyError> {
        self.topics
            .iter()
            .map(|(name, topic)| {
                let topic = topic.to_topic(name, base, self.allow_precompiled)?;
                Ok(if self.retention.drop_inputs.contains(name) { topic.dropping_inputs() } else { topic })
            })
            .collect()
    }
}

/// A TOML error on one line, with its line number when known.
fn one_line(text: &str, error: &toml::de::Error) -> String {
    let message = error.message().trim().replace('\n', " ");
    match error.span() {
        Some(span) => {
            let line = text[..span.start.min(text.len())].lines().count().max(1);
            format!("{message} (line {line})")
        }
        None => message,
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::Config;

    /// The example config in the repository's root stays valid: every topic
    /// builds (its secrets are commented out, so nothing is read).
    #[test]
    fn the_repositorys_husk_toml_is_valid() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../husk.toml");
        let config = Config::load(&path).unwrap_or_else(|e| panic!("{e}"));
        let topics = config.topics(path.parent().unwrap()).unwrap();
        let fetch = topics.iter().find(|t| t.name() == "fetch").expect("the fetch topic");
        let http = fetch.grants().http.as_ref().expect("fetch grants outbound HTTP");
        assert_eq!((http.allowed.len(), http.max_requests), (2, 64));
        assert!(fetch.grants().config.is_some());
        assert!(topics.iter().find(|t| t.name() == "transform").unwrap().grants().http.is_none());
    }

    /// Every commented-out setting of the example config works where it
    /// sits once uncommented (a top-level key after a `[table]` would land
    /// in that table and fail).
    #[test]
    fn the_repositorys_husk_toml_settings_work_uncommented_where_they_sit() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../husk.toml");
        let text = std::fs::read_to_string(&path).unwrap();
        let token = format!("operator_tokens = [\"sha256:{}\"]", "0".repeat(64));
        let uncommented = text.replace("# operator_tokens = [\"env:HUSK_OPERATOR_TOKEN\"]", &token);
        assert_ne!(uncommented, text, "the operator_tokens line is in the example");
        let config = Config::parse(&uncommented).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(config.operator_tokens.len(), 1);
        // The periodic job's keys, inputs dropped and faults never retried
        // work where they sit too.
        let mut more = uncommented.clone();
        for key in ["schedule", "input", "timezone", "catch_up", "drop_inputs", "permanent_faults"] {
            let commented = format!("\n# {key} = ");
            assert!(more.contains(&commented), "{key} is in the example");
            more = more.replace(&commented, &format!("\n{key} = "));
        }
        let config = Config::parse(&more).unwrap_or_else(|e| panic!("{e}"));
        let schedule = config.topics["transform"].schedule("transform").unwrap().expect("a schedule");
        assert_eq!((schedule.line(), schedule.zone()), ("*/5 * * * *", "Europe/Berlin"));
        assert_eq!(config.retention.drop_inputs, ["transform"]);
    }
}
