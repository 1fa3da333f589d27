//! Topics and their plugin versions as the API tells them.

use serde::Serialize;
use utoipa::ToSchema;

use husk::store::Depth as StoredDepth;
use husk::versions::{Origin, VersionInfo};

use super::time;

/// A topic's live jobs.
#[derive(Debug, Serialize, ToSchema)]
pub struct Depth {
    /// Waiting for a worker.
    pub queued: u64,
    /// Waiting for their time: `scheduled` or `retrying`.
    pub waiting: u64,
    /// Held by workers.
    pub running: u64,
}

impl From<StoredDepth> for Depth {
    fn from(d: StoredDepth) -> Self {
        Self { queued: d.queued, waiting: d.gated, running: d.running }
    }
}

/// A topic of the tenant's.
#[derive(Debug, Serialize, ToSchema)]
pub struct Topic {
    /// Its name.
    pub topic: String,
    /// Its current plugin version (absent for a topic run by native code).
    pub version: Option<String>,
    /// Its live jobs, as last counted.
    pub depth: Depth,
    /// Its open incidents, as last counted.
    pub open_incidents: u64,
    /// Whether its jobs are held (enqueues still land).
    pub paused: bool,
}

/// The tenant's topics.
#[derive(Debug, Serialize, ToSchema)]
pub struct TopicList {
    /// The topics.
    pub topics: Vec<Topic>,
}

/// How a version became current.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum VersionOrigin {
    /// The config file, at start.
    Config,
    /// A deploy.
    Deploy,
    /// `husk serve --watch` saw its file change.
    Watch,
    /// A rollback (recorded so only by husk before schema 6, whose
    /// rollbacks re-stamped the version).
    Rollback,
}

/// A plugin version of a topic.
#[derive(Debug, Serialize, ToSchema)]
pub struct Version {
    /// The component's SHA-256 (hex).
    pub version: String,
    /// When it was deployed (last, if deployed again).
    #[schema(value_type = String, format = DateTime)]
    pub deployed_at: String,
    /// How it was deployed.
    pub origin: VersionOrigin,
    /// The tenant who deployed it (absent for the config file and
    /// `--watch`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deployed_by: Option<String>,
    /// Whether new jobs run on it.
    pub current: bool,
    /// On the current version, when a rollback made it current.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub rolled_back_at: Option<String>,
    /// The tenant who rolled back to it, when a tenant did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rolled_back_by: Option<String>,
}

impl From<VersionInfo> for Version {
    fn from(v: VersionInfo) -> Self {
        let origin = match v.origin {
            Origin::Config => VersionOrigin::Config,
            Origin::Deploy => VersionOrigin::Deploy,
            Origin::Watch => VersionOrigin::Watch,
            Origin::Rollback => VersionOrigin::Rollback,
        };
        Self {
            version: v.version,
            deployed_at: time(v.deployed_at),
            origin,
            deployed_by: v.deployed_by,
            current: v.current,
            rolled_back_at: v.rolled_back.as_ref().map(|r| time(r.at)),
            rolled_back_by: v.rolled_back.and_then(|r| r.by),
        }
    }
}

/// A topic's kept versions.
#[derive(Debug, Serialize, ToSchema)]
pub struct VersionList {
    /// The topic.
    pub topic: String,
    /// Its versions, newest first.
    pub versions: Vec<Version>,
}

/// A pause or resume.
#[derive(Debug, Serialize, ToSchema)]
pub struct Paused {
    /// The topic.
    pub topic: String,
    /// Whether it is paused now.
    pub paused: bool,
    /// False when it already was.
    pub changed: bool,
}

/// The answer of `/healthz`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    /// `ok`.
    pub status: String,
}
