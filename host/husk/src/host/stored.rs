//! Plugin versions kept in the store: which version a topic starts on, the
//! swap every deploy, rollback and follow shares, and following the
//! versions other processes sharing the store make current.
//!
//! The store is the truth: a deploy or rollback writes it first and swaps
//! this process's handler after; a restart starts on the store's current
//! version; every other process sharing the store sees the new pointer at
//! its next look ([`FOLLOW_EVERY`]) and swaps too. Jobs already fetched
//! finish on the version they were fetched with, as for any swap.
//!
//! Topics whose config names a precompiled `.cwasm` (`allow_precompiled`)
//! keep nothing in the store: machine code is loaded only from the
//! operator's file, never from a table other users may write.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use crate::capability::Grants;
use crate::dispatch::Dispatcher;
use crate::engine::content_digest;
use crate::plugin::{Plugin, PluginError, World};
use crate::sandbox::Sandbox;
use crate::store::{JobStore, StoreError, StoredVersion, TopicVersion, VersionToKeep, Versions};
use crate::versions::{Origin, Stamp, VersionInfo, VersionLog};
use crate::worker::WasmHandler;

use super::services::Service;
use super::topic::{MapperSpec, PluginSource, Runner, Topic, wasm_mapper};

/// How often a process looks for versions other processes made current:
/// a deploy or rollback reaches every process within this (plus the time
/// to compile a version it has not loaded yet).
pub const FOLLOW_EVERY: Duration = Duration::from_millis(250);

/// Where `topic` keeps its versions: the store, when it keeps
/// [`Versions`] and the topic's plugin is a component (see the module
/// docs); `None`: in this process only.
pub(super) fn kept_in<'a>(store: &'a dyn JobStore, topic: &Topic) -> Option<&'a dyn Versions> {
    let component = matches!(&topic.runner, Runner::Wasm(source) if !matches!(source, PluginSource::Operator(_)));
    store.supports().versions.filter(|_| component)
}

/// Why a topic could not start on its version.
#[derive(Debug)]
pub(super) enum StartError {
    Plugin(PluginError),
    Store(StoreError),
}

/// Loads the version `topic` starts on: the store's current one, unless
/// the store has none or the config file changed since it was recorded —
/// then the config file's, recorded as current (an explicit, logged deploy
/// when it replaces another version).
pub(super) fn start_version(
    sandbox: &Sandbox,
    store: &dyn JobStore,
    topic: &Topic,
    source: &PluginSource,
    pointer: Option<&TopicVersion>,
    keep: usize,
    now: std::time::SystemTime,
) -> Result<(Plugin, Stamp), StartError> {
    let config_stamp = Stamp { origin: Origin::Config, by: None, at: now };
    let Some(store) = kept_in(store, topic) else {
        let plugin = source.load(sandbox, World::Operation, &topic.grants).map_err(StartError::Plugin)?;
        return Ok((plugin, config_stamp));
    };
    let (bytes, name) = source.bytes().map_err(StartError::Plugin)?;
    let digest = content_digest(&bytes);
    if let Some(pointer) = pointer.filter(|p| p.config.as_deref() == Some(digest.as_str()) && p.current != digest) {
        // The config file is the one recorded: the store's current version
        // (a deploy or rollback since) is what runs.
        let stored = store.kept_versions(&topic.name).map_err(StartError::Store)?;
        let current = stored.into_iter().find(|v| v.digest == pointer.current);
        let component = store.version_component(&topic.name, &pointer.current).map_err(StartError::Store)?;
        if let (Some(current), Some(component)) = (current, component) {
            let name = format!("version {} of `{}` from the store", short(&current.digest), topic.name);
            let plugin = load(sandbox, topic, component, name).map_err(StartError::Plugin)?;
            tracing::info!(
                topic = %topic.name,
                version = %current.digest,
                origin = current.stamp.origin.as_str(),
                "starting on the store's current plugin version, not the config file's"
            );
            return Ok((plugin, current.stamp));
        }
        tracing::warn!(topic = %topic.name, version = %pointer.current, "the store's current version is gone: starting on the config file's");
    }
    let plugin =
        source.load_bytes(sandbox, &bytes, World::Operation, &name, &topic.grants).map_err(StartError::Plugin)?;
    if pointer.is_none_or(|p| p.current != digest || p.config.as_deref() != Some(digest.as_str())) {
        if let Some(pointer) = pointer.filter(|p| p.current != digest) {
            tracing::info!(
                topic = %topic.name,
                version = %digest,
                previous = %pointer.current,
                "the config file's plugin changed since it was recorded: deployed as the current version"
            );
        }
        let version = StoredVersion { digest, stamp: config_stamp.clone() };
        let put = VersionToKeep { topic: &topic.name, version: &version, component: &bytes, config: true, keep };
        store.put_version(&put).map_err(StartError::Store)?;
    }
    Ok((plugin, config_stamp))
}

/// A component's bytes from the store, loaded for `topic`.
pub(super) fn load(sandbox: &Sandbox, topic: &Topic, component: Vec<u8>, name: String) -> Result<Plugin, PluginError> {
    let source = PluginSource::Bytes { bytes: component, name };
    source.load(sandbox, World::Operation, &topic.grants)
}

/// The first 12 hex digits of a digest.
pub(super) fn short(digest: &str) -> &str {
    &digest[..digest.len().min(12)]
}

/// A topic's swappable parts.
#[derive(Clone)]
pub(super) struct Swappable {
    pub(super) topic: Topic,
    pub(super) wasm: Arc<WasmHandler>,
    pub(super) log: Arc<Mutex<VersionLog>>,
}

impl Swappable {
    /// Makes `plugin` current in this process (the log is `log`, locked by
    /// the caller), with `grants` when they were read again.
    pub(super) fn swap_in(
        &self,
        sandbox: &Sandbox,
        dispatcher: &Dispatcher,
        log: &mut VersionLog,
        plugin: Plugin,
        grants: Option<Grants>,
        stamp: Stamp,
    ) -> VersionInfo {
        if matches!(self.topic.mapper, Some(MapperSpec::SamePlugin)) {
            let mapper = wasm_mapper(sandbox, &self.topic, plugin.clone());
            dispatcher.set_topic(&self.topic.name, self.topic.policy(Some(mapper)));
        }
        let previous = match grants {
            Some(grants) => self.wasm.swap_granted(plugin.clone(), grants),
            None => self.wasm.swap(plugin.clone()),
        };
        let origin = stamp.origin;
        log.push(plugin, stamp);
        tracing::info!(
            topic = %self.topic.name,
            version = %log.current().digest(),
            previous = %previous.digest(),
            ?origin,
            "plugin version swapped"
        );
        log.current_info()
    }
}

/// Follows the versions other processes make current.
pub(super) struct Follower {
    pub(super) sandbox: Sandbox,
    pub(super) dispatcher: Arc<Dispatcher>,
    pub(super) topics: Vec<Swappable>,
}

impl Service for Follower {
    const NAME: &'static str = "husk-versions";

    fn pass(&mut self) -> Duration {
        self.look();
        FOLLOW_EVERY
    }
}

impl Follower {
    /// One look: swaps every topic whose current version in the store is
    /// not this process's.
    pub(super) fn look(&self) {
        let Ok(store) = self.dispatcher.store().versions() else { return };
        let pointers = match store.current_versions() {
            Ok(pointers) => pointers,
            Err(error) => {
                tracing::warn!(%error, "reading the current plugin versions failed");
                return;
            }
        };
        for pointer in pointers {
            let Some(topic) = self.topics.iter().find(|t| t.topic.name == pointer.topic) else { continue };
            {
                let mut log = topic.log.lock();
                if log.current().digest() == pointer.current {
                    // The same version, maybe rolled back to since (by
                    // another process, or by this one from an older one).
                    log.set_rolled_back(pointer.rolled_back);
                    continue;
                }
            }
            if let Err(error) = self.follow(topic, &pointer) {
                tracing::warn!(topic = %pointer.topic, version = %pointer.current, %error, "following a plugin version failed");
            }
        }
    }

    fn follow(&self, topic: &Swappable, pointer: &TopicVersion) -> Result<(), String> {
        let digest = pointer.current.as_str();
        let store = self.dispatcher.store().versions().map_err(|e| e.to_string())?;
        let loaded = topic.log.lock().find(digest);
        let plugin = match loaded {
            Some(plugin) => plugin,
            None => {
                let component = store
                    .version_component(&topic.topic.name, digest)
                    .map_err(|e| e.to_string())?
                    .ok_or("its component is no longer kept")?;
                let name = format!("version {} of `{}` from the store", short(digest), topic.topic.name);
                load(&self.sandbox, &topic.topic, component, name).map_err(|e| e.to_string())?
            }
        };
        let stamp = match &pointer.rolled_back {
            Some(rollback) => Stamp { origin: Origin::Rollback, by: rollback.by.clone(), at: rollback.at },
            None => store
                .kept_versions(&topic.topic.name)
                .map_err(|e| e.to_string())?
                .into_iter()
                .find(|v| v.digest == digest)
                .map(|v| v.stamp)
                .ok_or("it is no longer kept")?,
        };
        let mut log = topic.log.lock();
        // Still not current here, and still current in the store (a deploy
        // of this process may have come in between).
        let still = store.current_versions().map_err(|e| e.to_string())?;
        if log.current().digest() == digest || !still.iter().any(|p| p.topic == topic.topic.name && p.current == digest)
        {
            return Ok(());
        }
        topic.swap_in(&self.sandbox, &self.dispatcher, &mut log, plugin, None, stamp);
        Ok(())
    }
}
