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
    /// A rollback made it current again: the origin of a rollback's
    /// [`Stamp`]. A version's own origin is this only when an older husk,
    /// whose rollbacks re-stamped the version, recorded it.
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
    /// When it was deployed (last, if deployed again).
    #[serde(with = "crate::wire::epoch_millis")]
    pub deployed_at: SystemTime,
    /// How it was deployed.
    pub origin: Origin,
    /// Who deployed it: the tenant of an API deploy; absent for the config
    /// file and `--watch`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deployed_by: Option<String>,
    /// Whether new fetches run on it.
    pub current: bool,
    /// On the current version, when a rollback made it current: who and
    /// when.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rolled_back: Option<Rollback>,
}

/// A rollback that made a version current again: who and when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rollback {
    /// Who rolled back (a tenant), if anyone in particular.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// When.
    #[serde(with = "crate::wire::epoch_millis")]
    pub at: SystemTime,
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
            rolled_back: None,
        }
    }
}

/// A topic's versions. Not synchronized: the host holds it under a mutex,
/// with the swap of the running handler, so the two never disagree.
#[derive(Debug)]
pub struct VersionLog {
    /// Loaded versions in the order they were deployed, oldest first.
    entries: Vec<Entry>,
    /// The current one's index in `entries`.
    current: usize,
    /// The rollback that made the current one current, if one did.
    rolled_back: Option<Rollback>,
}

impl VersionLog {
    /// A log whose current version is `plugin`, from the config.
    pub fn new(plugin: Plugin, now: SystemTime) -> Self {
        Self::starting(plugin, Stamp { origin: Origin::Config, by: None, at: now })
    }

    /// A log whose current version is `plugin`, made current as `stamp`
    /// says (say, a version deployed before a restart).
    pub fn starting(plugin: Plugin, stamp: Stamp) -> Self {
        let mut log = Self { entries: Vec::new(), current: 0, rolled_back: None };
        log.push(plugin, stamp);
        log
    }

    /// The current version.
    pub fn current(&self) -> &Plugin {
        &self.entries[self.current].plugin
    }

    /// The loaded version whose digest is `digest`.
    pub fn find(&self, digest: &str) -> Option<Plugin> {
        self.entries.iter().find(|e| e.plugin.digest() == digest).map(|e| e.plugin.clone())
    }

    /// Makes `plugin` current as `stamp` says. A deploy (any origin but
    /// [`Origin::Rollback`]) makes it the newest, moved there if it was
    /// loaded already; past [`KEPT_VERSIONS`] the oldest is dropped. A
    /// rollback moves the current pointer only, and a second one goes
    /// further back.
    pub fn push(&mut self, plugin: Plugin, stamp: Stamp) {
        if stamp.origin == Origin::Rollback
            && let Some(at) = self.entries.iter().position(|e| e.plugin.digest() == plugin.digest())
        {
            self.current = at;
            self.rolled_back = Some(Rollback { by: stamp.by, at: stamp.at });
            return;
        }
        // A deploy; or a rollback to a version this process never loaded
        // (another process's, followed here): kept as the newest.
        self.rolled_back = (stamp.origin == Origin::Rollback).then(|| Rollback { by: stamp.by.clone(), at: stamp.at });
        self.entries.retain(|e| e.plugin.digest() != plugin.digest());
        self.entries.push(Entry { plugin, stamp });
        self.current = self.entries.len() - 1;
        if self.entries.len() > KEPT_VERSIONS {
            self.entries.remove(0);
            self.current -= 1;
        }
    }

    /// Marks the current version rolled back to, as `rolled_back` says
    /// (a rollback another process made, followed here).
    pub fn set_rolled_back(&mut self, rolled_back: Option<Rollback>) {
        self.rolled_back = rolled_back;
    }

    /// The version to roll back to: `to` if given (a loaded version other
    /// than the current one), else the one deployed before the current
    /// one. `None` when there is none.
    pub fn rollback_target(&self, to: Option<&str>) -> Option<Plugin> {
        let found = match to {
            Some(version) => self
                .entries
                .iter()
                .enumerate()
                .rev()
                .find(|(i, e)| *i != self.current && e.plugin.digest().starts_with(version)),
            None => self.entries[..self.current].iter().enumerate().next_back(),
        };
        found.map(|(_, e)| e.plugin.clone())
    }

    /// Every loaded version, the newest deploy first.
    pub fn list(&self) -> Vec<VersionInfo> {
        let mut list: Vec<VersionInfo> =
            self.entries.iter().enumerate().rev().map(|(i, e)| e.info(i == self.current)).collect();
        if let Some(current) = list.iter_mut().find(|v| v.current) {
            current.rolled_back = self.rolled_back.clone();
        }
        list
    }

    /// The current version.
    pub fn current_info(&self) -> VersionInfo {
        VersionInfo { rolled_back: self.rolled_back.clone(), ..self.entries[self.current].info(true) }
    }
}
