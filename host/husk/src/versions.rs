//! Plugin versions of a topic, for hot swap: every version deployed (kept
//! loaded, so a rollback swaps without compiling), which one is current, and
//! the order they were deployed in (what a rollback goes back along).

use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::plugin::Plugin;

/// Versions kept loaded per topic; the oldest non-current one is dropped
/// past this.
pub const KEPT_VERSIONS: usize = 16;

/// Where a version came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Origin {
    /// The config file, at start.
    Config,
    /// A deploy through the API or the library.
    Deploy,
    /// `husk serve --watch` saw the plugin file change.
    Watch,
    /// A rollback made it current again.
    Rollback,
}

impl Origin {
    /// Its name: `config`, `deploy`, `watch` or `rollback`.
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Config => "config",
            Origin::Deploy => "deploy",
            Origin::Watch => "watch",
            Origin::Rollback => "rollback",
        }
    }

    /// The origin named `name` (see [`Origin::as_str`]).
    pub fn from_name(name: &str) -> Option<Self> {
        [Origin::Config, Origin::Deploy, Origin::Watch, Origin::Rollback].into_iter().find(|o| o.as_str() == name)
    }
}

/// One version as the API lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VersionInfo {
    /// The component's SHA-256 (hex): the version's identity, recorded on
    /// every attempt it runs.
    pub version: String,
    /// When it last became current.
    #[serde(with = "crate::wire::epoch_millis")]
    pub deployed_at: SystemTime,
    /// How it last became current.
    pub origin: Origin,
    /// Who made it current: the tenant of an API deploy or rollback;
    /// absent for the config file and `--watch`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deployed_by: Option<String>,
    /// Whether new fetches run on it.
    pub current: bool,
}

#[derive(Debug)]
struct Entry {
    plugin: Plugin,
    stamp: Stamp,
}

/// How and when a version became current, and by whom.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamp {
    /// How.
    pub origin: Origin,
    /// By whom (a tenant), if anyone in particular.
    pub by: Option<String>,
    /// When.
    pub at: SystemTime,
}

impl Entry {
    fn info(&self, current: bool) -> VersionInfo {
        VersionInfo {
            version: self.plugin.digest().to_owned(),
            deployed_at: self.stamp.at,
            origin: self.stamp.origin,
            deployed_by: self.stamp.by.clone(),
            current,
        }
    }
}

/// A topic's versions. Not synchronized: the host holds it under a mutex,
/// with the swap of the running handler, so the two never disagree.
#[derive(Debug)]
pub struct VersionLog {
    /// Loaded versions, oldest first; the last is current.
    entries: Vec<Entry>,
}

impl VersionLog {
    /// A log whose current version is `plugin`, from the config.
    pub fn new(plugin: Plugin, now: SystemTime) -> Self {
        Self::starting(plugin, Stamp { origin: Origin::Config, by: None, at: now })
    }

    /// A log whose current version is `plugin`, made current as `stamp`
    /// says (say, a version deployed before a restart).
    pub fn starting(plugin: Plugin, stamp: Stamp) -> Self {
        Self { entries: vec![Entry { plugin, stamp }] }
    }

    /// The current version.
    pub fn current(&self) -> &Plugin {
        &self.entries.last().expect("a version log is never empty").plugin
    }

    /// The loaded version whose digest is `digest`.
    pub fn find(&self, digest: &str) -> Option<Plugin> {
        self.entries.iter().find(|e| e.plugin.digest() == digest).map(|e| e.plugin.clone())
    }

    /// Makes `plugin` current. Deploying a version already loaded moves it
    /// to the front; past [`KEPT_VERSIONS`] the oldest is dropped.
    pub fn push(&mut self, plugin: Plugin, stamp: Stamp) {
        // The same version again: moved to the front, not kept twice.
        self.entries.retain(|e| e.plugin.digest() != plugin.digest());
        self.entries.push(Entry { plugin, stamp });
        if self.entries.len() > KEPT_VERSIONS {
            self.entries.remove(0);
        }
    }

    /// The version to roll back to: `to` if given (it must be loaded and
    /// not current), else the one current before the current one. `None`
    /// when there is none.
    pub fn rollback_target(&self, to: Option<&str>) -> Option<Plugin> {
        let before_current = &self.entries[..self.entries.len() - 1];
        match to {
            Some(version) => before_current.iter().rev().find(|e| e.plugin.digest().starts_with(version)),
            None => before_current.last(),
        }
        .map(|e| e.plugin.clone())
    }

    /// Every loaded version, newest (the current one) first.
    pub fn list(&self) -> Vec<VersionInfo> {
        let last = self.entries.len() - 1;
        self.entries.iter().enumerate().rev().map(|(i, e)| e.info(i == last)).collect()
    }

    /// The current version.
    pub fn current_info(&self) -> VersionInfo {
        self.entries.last().expect("a version log is never empty").info(true)
    }
}
