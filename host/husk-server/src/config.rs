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

use husk::capability::{AllowedHost, ConfigGrant, Grants, HttpGrant, Secret};
use husk::classify::Rule;
use husk::engine::EngineConfig;
use husk::host::{MapperSpec, OperatorFile, PluginSource, Topic};
use husk::retry::RetryPolicySpec;
use husk::sandbox::Limits;
use husk::store::{JobStore, MemoryStore, StoreError};
use husk_postgres::{PostgresConfig, PostgresStore};
use husk_sqlite::{Durability, SqliteStore};

use crate::tokens::TokenRef;

/// The default SQLite file, relative to the config file's directory.
pub const DEFAULT_STORE: &str = "husk-data/husk.db";

/// The default address of the HTTP API.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";

/// `[retention]`: how long ended jobs (outcome, history, idempotency key)
/// are kept. Open incidents are kept until retried or discarded.
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
    /// An error-mapper component, or `"self"` when the plugin exports
    /// `classify` itself.
    #[serde(default)]
    pub mapper: Option<PathBuf>,
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
            for (i, token) in tenant.tokens.iter().enumerate() {
                TokenRef::parse(token)
                    .map_err(|e| KeyError::new(format!("tenants.{name}.tokens[{i}]"), e.to_string()))?;
            }
            if tenant.max_concurrent == Some(0) {
                return Err(KeyError::new(format!("tenants.{name}.max_concurrent"), "must be at least 1"));
            }
        }
        for (name, topic) in &self.topics {
            self.check_ceilings(name, topic)?;
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

    /// The topics, ready for [`husk::host::HostBuilder::topic`], their
    /// secrets read.
    ///
    /// # Errors
    ///
    /// [`KeyError`] naming a secret that cannot be read (an unset
    /// environment variable, a missing or world-readable file).
    pub fn topics(&self, base: &Path) -> Result<Vec<Topic>, KeyError> {
        self.topics.iter().map(|(name, topic)| topic.to_topic(name, base, self.allow_precompiled)).collect()
    }
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
    fn allowed(&self, key: &str) -> Result<Vec<AllowedHost>, KeyError> {
        parse_hosts(&self.allowed_hosts, &format!("{key}.allowed_hosts"))
    }

    /// What the topic grants its jobs (`base`: the config file's
    /// directory, for secret files).
    fn grants(&self, name: &str, base: &Path) -> Result<Grants, KeyError> {
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

    fn to_topic(&self, name: &str, base: &Path, allow_precompiled: bool) -> Result<Topic, KeyError> {
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
fn parse_hosts(hosts: &[String], key: &str) -> Result<Vec<AllowedHost>, KeyError> {
    hosts
        .iter()
        .enumerate()
        .map(|(i, entry)| AllowedHost::parse(entry).map_err(|e| KeyError::new(format!("{key}[{i}]"), e.to_string())))
        .collect()
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
}
