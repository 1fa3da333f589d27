//! Deploying a new version of a topic's plugin, rolling back, and the
//! versions loaded.

use parking_lot::Mutex;

use crate::capability::{Grants, SecretError};
use crate::dispatch::TopicPolicy;
use crate::engine::content_digest;
use crate::plugin::{Plugin, PluginError, World};
use crate::versions::{Origin, VersionInfo, VersionLog};

use super::topic::{MapperSpec, PluginSource, wasm_mapper};
use super::{Host, TopicRuntime};

/// Why a deploy or a rollback was refused; the current version stays.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DeployError {
    /// No such topic.
    #[error("unknown topic `{0}`")]
    UnknownTopic(String),
    /// The topic runs a native handler.
    #[error("topic `{0}` runs a native handler, not a plugin")]
    NotWasm(String),
    /// The component failed to load or validate.
    #[error("topic `{topic}`: {error}")]
    Invalid {
        /// The topic.
        topic: String,
        /// Why.
        error: PluginError,
    },
    /// The topic classifies with its own plugin, and the new one does not
    /// export `classify`.
    #[error("topic `{0}` classifies faults with its plugin's `classify`, which the new version does not export")]
    MissingClassify(String),
    /// A secret of the topic's config could not be read again.
    #[error("topic `{topic}`: {error}")]
    Secret {
        /// The topic.
        topic: String,
        /// Which secret, and why.
        error: SecretError,
    },
    /// No version to roll back to.
    #[error("topic `{topic}`: {reason}")]
    NoRollback {
        /// The topic.
        topic: String,
        /// Why.
        reason: String,
    },
}

impl Host {
    pub(super) fn runtime(&self, topic: &str) -> Result<&TopicRuntime, DeployError> {
        self.runtimes.iter().find(|r| r.topic.name == topic).ok_or_else(|| DeployError::UnknownTopic(topic.to_owned()))
    }

    fn versions_of(&self, topic: &str) -> Result<(&TopicRuntime, &Mutex<VersionLog>), DeployError> {
        let runtime = self.runtime(topic)?;
        let versions = runtime.versions.as_ref().ok_or_else(|| DeployError::NotWasm(topic.to_owned()))?;
        Ok((runtime, versions))
    }

    /// Deploys a new version of `topic`'s plugin: compiles and validates it
    /// on the calling thread (never a worker's), then swaps it in
    /// atomically. Jobs already fetched finish on the version they were
    /// fetched with; the next fetch runs the new one. A version that fails
    /// to load is refused and the current one stays.
    ///
    /// # Errors
    ///
    /// [`DeployError`]; nothing changed then.
    pub fn deploy(&self, topic: &str, source: &PluginSource, origin: Origin) -> Result<VersionInfo, DeployError> {
        let (runtime, versions) = self.versions_of(topic)?;
        let invalid = |error| DeployError::Invalid { topic: topic.to_owned(), error };
        let (bytes, name) = source.bytes().map_err(invalid)?;
        // Secrets are read again on a deploy (a rotated secret file takes
        // effect); one that cannot be read refuses the deploy.
        let grants =
            runtime.topic.grants.reread().map_err(|error| DeployError::Secret { topic: topic.to_owned(), error })?;
        // A version already loaded is reused as it is: deploying it again
        // neither compiles it nor drops the loaded copy (dropping a module
        // makes wasmtime reclaim its warm pool slots, which running jobs
        // would compete with).
        let loaded = versions.lock().find(&content_digest(&bytes));
        let plugin = match loaded {
            Some(plugin) => plugin,
            None => source.load_bytes(&self.sandbox, &bytes, World::Operation, &name, &grants).map_err(invalid)?,
        };
        if matches!(runtime.topic.mapper, Some(MapperSpec::SamePlugin)) && !plugin.is_error_mapper() {
            return Err(DeployError::MissingClassify(topic.to_owned()));
        }
        Ok(self.make_current(runtime, plugin, Some(grants), origin))
    }

    /// Makes the version deployed before the current one current again, or
    /// the loaded version `to` (a digest or a prefix of one).
    ///
    /// # Errors
    ///
    /// [`DeployError::NoRollback`] when there is no such version.
    pub fn rollback(&self, topic: &str, to: Option<&str>) -> Result<VersionInfo, DeployError> {
        let (runtime, versions) = self.versions_of(topic)?;
        let target = versions.lock().rollback_target(to).ok_or_else(|| {
            let reason = match to {
                Some(v) => format!("no loaded version `{v}` other than the current one"),
                None => "no earlier version to roll back to".to_owned(),
            };
            DeployError::NoRollback { topic: topic.to_owned(), reason }
        })?;
        Ok(self.make_current(runtime, target, None, Origin::Rollback))
    }

    /// The version of `topic`'s plugin new fetches run on; `None` for an
    /// unknown or native topic.
    pub fn current_version(&self, topic: &str) -> Option<VersionInfo> {
        let (_, versions) = self.versions_of(topic).ok()?;
        Some(versions.lock().current_info())
    }

    /// The loaded versions of `topic`'s plugin, newest first.
    ///
    /// # Errors
    ///
    /// [`DeployError`] for an unknown or native topic.
    pub fn versions(&self, topic: &str) -> Result<Vec<VersionInfo>, DeployError> {
        let (_, versions) = self.versions_of(topic)?;
        Ok(versions.lock().list())
    }

    /// Makes `plugin` current, with `grants` when they were read again.
    fn make_current(
        &self,
        runtime: &TopicRuntime,
        plugin: Plugin,
        grants: Option<Grants>,
        origin: Origin,
    ) -> VersionInfo {
        let (Some(versions), Some(wasm)) = (&runtime.versions, &runtime.wasm) else {
            unreachable!("versions_of checked the topic runs Wasm");
        };
        let mut versions = versions.lock();
        if matches!(runtime.topic.mapper, Some(MapperSpec::SamePlugin)) {
            let mapper = wasm_mapper(&self.sandbox, &runtime.topic, plugin.clone());
            self.dispatcher
                .set_topic(&runtime.topic.name, TopicPolicy { retry: runtime.topic.retry, mapper: Some(mapper) });
        }
        let previous = match grants {
            Some(grants) => wasm.swap_granted(plugin.clone(), grants),
            None => wasm.swap(plugin.clone()),
        };
        versions.push(plugin, origin, self.dispatcher.clock().now());
        tracing::info!(
            topic = %runtime.topic.name,
            version = %versions.current().digest(),
            previous = %previous.digest(),
            ?origin,
            "plugin version swapped"
        );
        versions.current_info()
    }
}
