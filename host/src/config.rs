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

use crate::classify::Rule;
use crate::engine::EngineConfig;
use crate::host::{MapperSpec, PluginSource, Topic};
use crate::retry::RetryPolicySpec;
use crate::sandbox::Limits;
use crate::store::{Durability, JobStore, MemoryStore, PostgresConfig, PostgresStore, SqliteStore, StoreError};

/// The default SQLite file, relative to the config file's directory.
pub const DEFAULT_STORE: &str = "husk-data/husk.db";

/// The whole file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
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
    /// The compile cache directory (default: as `husk run`).
    #[serde(default)]
    pub cache_dir: Option<PathBuf>,
    /// The engine-wide retry policy (default: 3 attempts, exponential
    /// 1s..60s with jitter).
    #[serde(default)]
    pub retry: Option<RetryPolicySpec>,
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

/// One topic.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TopicConfig {
    /// The component (`.wasm` or `.cwasm`) of the `operation` world.
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
    /// An error-mapper component, or `"self"` when the plugin exports
    /// `classify` itself.
    #[serde(default)]
    pub mapper: Option<PathBuf>,
    /// Declarative classification rules (instead of `mapper`).
    #[serde(default)]
    pub mapper_rules: Option<Vec<Rule>>,
}

/// Why a config file was refused.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {message}")]
pub struct ConfigError {
    /// The file.
    pub file: PathBuf,
    /// The key and the reason, on one line.
    pub message: String,
}

impl Config {
    /// Reads and checks `path`.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming the file, the key and the reason.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let fail = |message: String| ConfigError { file: path.to_owned(), message };
        let text = std::fs::read_to_string(path).map_err(|e| fail(format!("cannot read: {e}")))?;
        Self::parse(&text).map_err(fail)
    }

    /// Parses and checks the text of a config file.
    ///
    /// # Errors
    ///
    /// `key: reason (line N)` on one line.
    pub fn parse(text: &str) -> Result<Self, String> {
        let deserializer = toml::Deserializer::parse(text).map_err(|e| one_line(text, &e))?;
        let config: Config = serde_path_to_error::deserialize(deserializer).map_err(|e| {
            let path = e.path().to_string();
            let inner = e.into_inner();
            let at = one_line(text, &inner);
            if path.is_empty() || path == "." { at } else { format!("{path}: {at}") }
        })?;
        config.check()?;
        Ok(config)
    }

    fn check(&self) -> Result<(), String> {
        for (name, topic) in &self.topics {
            if topic.mapper.is_some() && topic.mapper_rules.is_some() {
                return Err(format!("topics.{name}: set `mapper` or `mapper_rules`, not both"));
            }
            if topic.workers == Some(0) {
                return Err(format!("topics.{name}.workers: must be at least 1"));
            }
            if topic.fetch_batch == Some(0) {
                return Err(format!("topics.{name}.fetch_batch: must be at least 1"));
            }
        }
        if self.topics.is_empty() {
            return Err("topics: no topic configured (add a [topics.<name>] table)".into());
        }
        Ok(())
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
        let defaults = EngineConfig::default();
        EngineConfig {
            epoch_tick: Some(self.epoch_tick.unwrap_or(Duration::from_millis(10))),
            cache_dir: self.cache_dir.as_ref().map(|d| base.join(d)).or(default_cache),
            ..defaults
        }
    }

    /// The grace period of a shutdown.
    pub fn shutdown_grace(&self) -> Duration {
        self.shutdown_grace.unwrap_or(Duration::from_secs(10))
    }

    /// The topics, ready for [`crate::host::HostBuilder::topic`].
    pub fn topics(&self, base: &Path) -> Vec<Topic> {
        self.topics.iter().map(|(name, topic)| topic.to_topic(name, base)).collect()
    }
}

impl TopicConfig {
    fn to_topic(&self, name: &str, base: &Path) -> Topic {
        let defaults = Limits::default();
        let limits = Limits {
            deadline: self.deadline.unwrap_or(defaults.deadline),
            fuel: self.fuel,
            memory: self.memory.map_or(defaults.memory, |m| m.as_u64()),
            ..defaults
        };
        let mut topic = Topic::wasm(name, PluginSource::Path(base.join(&self.plugin))).with_limits(limits);
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
        match (&self.mapper, &self.mapper_rules) {
            (Some(path), _) if path.as_os_str() == "self" => topic.with_mapper(MapperSpec::SamePlugin),
            (Some(path), _) => topic.with_mapper(MapperSpec::Plugin(PluginSource::Path(base.join(path)))),
            (None, Some(rules)) => topic.with_mapper(MapperSpec::Rules(rules.clone())),
            (None, None) => topic,
        }
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
