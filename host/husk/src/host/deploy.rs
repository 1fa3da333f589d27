//! Deploying a new version of a topic's plugin, rolling back, and the
//! versions loaded.

use crate::capability::SecretError;
use crate::engine::content_digest;
use crate::plugin::{PluginError, World};
use crate::store::{StoreError, StoredVersion, VersionToKeep};
use crate::versions::{Origin, Stamp, VersionInfo};

use super::stored::{self, Swappable, kept_in};
use super::topic::{MapperSpec, PluginSource};
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
    /// The store failed recording or reading the versions; nothing changed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Host {
    pub(super) fn runtime(&self, topic: &str) -> Result<&TopicRuntime, DeployError> {
        self.runtimes.iter().find(|r| r.topic.name == topic).ok_or_else(|| DeployError::UnknownTopic(topic.to_owned()))
    }

    fn swappable(&self, topic: &str) -> Result<&Swappable, DeployError> {
        self.runtime(topic)?.swappable.as_ref().ok_or_else(|| DeployError::NotWasm(topic.to_owned()))
    }

    /// Deploys a new version of `topic`'s plugin: compiles and validates it
    /// on the calling thread (never a worker's), records it in the store as
    /// the topic's current version (every process sharing the store follows
    /// within [`FOLLOW_EVERY`](super::FOLLOW_EVERY); a restart starts on it),
    /// then swaps it in atomically. Jobs already fetched finish on the
    /// version they were fetched with; the next fetch runs the new one. A
    /// version that fails to load is refused and the current one stays.
    ///
    /// # Errors
    ///
    /// [`DeployError`]; nothing changed then.
    pub fn deploy(&self, topic: &str, source: &PluginSource, origin: Origin) -> Result<VersionInfo, DeployError> {
        self.deploy_by(topic, source, origin, None)
    }

    /// [`Host::deploy`], recording who deployed (a tenant).
    ///
    /// # Errors
    ///
    /// As [`Host::deploy`].
    pub fn deploy_by(
        &self,
        topic: &str,
        source: &PluginSource,
        origin: Origin,
        by: Option<&str>,
    ) -> Result<VersionInfo, DeployError> {
        let swappable = self.swappable(topic)?;
        let invalid = |error| DeployError::Invalid { topic: topic.to_owned(), error };
        let (bytes, name) = source.bytes().map_err(invalid)?;
        // Secrets are read again on a deploy (a rotated secret file takes
        // effect); one that cannot be read refuses the deploy.
        let grants =
            swappable.topic.grants.reread().map_err(|error| DeployError::Secret { topic: topic.to_owned(), error })?;
        // A version already loaded is reused as it is: deploying it again
        // neither compiles it nor drops the loaded copy (dropping a module
        // makes wasmtime reclaim its warm pool slots, which running jobs
        // would compete with).
        let digest = content_digest(&bytes);
        let loaded = swappable.log.lock().find(&digest);
        let plugin = match loaded {
            Some(plugin) => plugin,
            None => source.load_bytes(&self.sandbox, &bytes, World::Operation, &name, &grants).map_err(invalid)?,
        };
        if matches!(swappable.topic.mapper, Some(MapperSpec::SamePlugin)) && !plugin.is_error_mapper() {
            return Err(DeployError::MissingClassify(topic.to_owned()));
        }
        let stamp = Stamp { origin, by: by.map(str::to_owned), at: self.dispatcher.clock().now() };
        // The store first, under the log's lock: a process that follows
        // the store never sees this process's order of swaps reversed.
        let mut log = swappable.log.lock();
        if let Some(store) = kept_in(self.dispatcher.store().as_ref(), &swappable.topic) {
            let version = StoredVersion { digest, stamp: stamp.clone() };
            let keep = self.kept_versions;
            store.put_version(&VersionToKeep { topic, version: &version, component: &bytes, config: false, keep })?;
        }
        Ok(swappable.swap_in(&self.sandbox, &self.dispatcher, &mut log, plugin, Some(grants), stamp))
    }

    /// Makes the version deployed before the current one current again, or
    /// the kept version `to` (a digest or a prefix of one). A rollback does
    /// not change the order of deploys: a second one goes further back.
    /// Versions kept in the store count, also those this process never
    /// loaded (they are compiled first).
    ///
    /// # Errors
    ///
    /// [`DeployError::NoRollback`] when there is no such version.
    pub fn rollback(&self, topic: &str, to: Option<&str>) -> Result<VersionInfo, DeployError> {
        self.rollback_by(topic, to, None)
    }

    /// [`Host::rollback`], recording who rolled back (a tenant).
    ///
    /// # Errors
    ///
    /// As [`Host::rollback`].
    pub fn rollback_by(&self, topic: &str, to: Option<&str>, by: Option<&str>) -> Result<VersionInfo, DeployError> {
        let swappable = self.swappable(topic)?;
        let store = kept_in(self.dispatcher.store().as_ref(), &swappable.topic);
        let (kept, pointer) = match store {
            Some(store) => (store.kept_versions(topic)?, store.current_version(topic)?),
            None => (Vec::new(), None),
        };
        let no_rollback = || {
            let reason = match to {
                Some(v) => format!("no kept version `{v}` other than the current one"),
                None => "no earlier version to roll back to".to_owned(),
            };
            DeployError::NoRollback { topic: topic.to_owned(), reason }
        };
        let mut log = swappable.log.lock();
        let (digest, plugin) = if kept.is_empty() {
            let plugin = log.rollback_target(to).ok_or_else(no_rollback)?;
            (plugin.digest().to_owned(), Some(plugin))
        } else {
            // The store's order: the newest deploy first.
            let current = pointer.map(|p| p.current);
            let is_current = |digest: &str| current.as_deref() == Some(digest);
            let target = match to {
                Some(version) => kept.iter().find(|v| !is_current(&v.digest) && v.digest.starts_with(version)),
                None => kept.iter().skip_while(|v| !is_current(&v.digest)).nth(1),
            };
            let digest = target.ok_or_else(no_rollback)?.digest.clone();
            let plugin = log.find(&digest);
            (digest, plugin)
        };
        let plugin = match (plugin, store) {
            (Some(plugin), _) => plugin,
            (None, None) => return Err(no_rollback()),
            (None, Some(store)) => {
                let component = store.version_component(topic, &digest)?.ok_or_else(no_rollback)?;
                let name = format!("version {} of `{topic}` from the store", stored::short(&digest));
                stored::load(&self.sandbox, &swappable.topic, component, name)
                    .map_err(|error| DeployError::Invalid { topic: topic.to_owned(), error })?
            }
        };
        let stamp = Stamp { origin: Origin::Rollback, by: by.map(str::to_owned), at: self.dispatcher.clock().now() };
        if let Some(store) = store
            && !store.set_current_version(topic, &StoredVersion { digest, stamp: stamp.clone() })?
        {
            return Err(no_rollback());
        }
        Ok(swappable.swap_in(&self.sandbox, &self.dispatcher, &mut log, plugin, None, stamp))
    }

    /// The version of `topic`'s plugin this process's new fetches run on;
    /// `None` for an unknown or native topic.
    pub fn current_version(&self, topic: &str) -> Option<VersionInfo> {
        Some(self.swappable(topic).ok()?.log.lock().current_info())
    }

    /// The versions of `topic`'s plugin, newest (the current one) first:
    /// those kept in the store, or, for a topic that keeps none there,
    /// those loaded in this process.
    ///
    /// # Errors
    ///
    /// [`DeployError`] for an unknown or native topic, or a store failure.
    pub fn versions(&self, topic: &str) -> Result<Vec<VersionInfo>, DeployError> {
        let swappable = self.swappable(topic)?;
        if let Some(store) = kept_in(self.dispatcher.store().as_ref(), &swappable.topic) {
            let kept = store.kept_versions(topic)?;
            if !kept.is_empty() {
                let pointer = store.current_version(topic)?;
                let info = |v: StoredVersion| {
                    let current = pointer.as_ref().filter(|p| p.current == v.digest);
                    VersionInfo {
                        version: v.digest,
                        deployed_at: v.stamp.at,
                        origin: v.stamp.origin,
                        deployed_by: v.stamp.by,
                        current: current.is_some(),
                        rolled_back: current.and_then(|p| p.rolled_back.clone()),
                    }
                };
                return Ok(kept.into_iter().map(info).collect());
            }
        }
        Ok(swappable.log.lock().list())
    }
}
