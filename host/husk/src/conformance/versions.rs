//! Conformance checks of [`Versions`](crate::store::Versions): kept plugin
//! versions, the current one, rollbacks and the bound on how many are kept.

use std::time::Duration;

use crate::store::{JobStore, StoreError, StoredVersion, TopicVersion, VersionToKeep};
use crate::versions::{Origin, Rollback, Stamp};

use super::Backend;
use super::queue::now;

/// Conformance check: plugin versions are kept with their components, the
/// current pointer moves on a deploy and on a rollback (which keeps the
/// deploy order), the config file's digest is remembered, and only the
/// `keep` most recently deployed versions are kept.
pub fn plugin_versions_are_kept_made_current_and_pruned(backend: &dyn Backend) {
    let fresh = backend.fresh();
    let store = fresh.store();
    let version = |digest: &str, origin: Origin, by: Option<&str>, secs: u64| StoredVersion {
        digest: digest.into(),
        stamp: Stamp { origin, by: by.map(str::to_owned), at: now() + Duration::from_secs(secs) },
    };
    let digests = |store: &dyn JobStore| -> Vec<String> {
        store.versions().unwrap().kept_versions("t").unwrap().into_iter().map(|v| v.digest).collect()
    };
    let pointer = |current: &str, config: &str| TopicVersion {
        topic: "t".into(),
        current: current.into(),
        config: Some(config.into()),
        rolled_back: None,
    };
    assert!(store.versions().unwrap().current_versions().unwrap().is_empty());
    put(store, "t", &version("v1", Origin::Config, None, 1), b"one", true).unwrap();
    assert_eq!(store.versions().unwrap().current_versions().unwrap(), [pointer("v1", "v1")]);
    let v2 = version("v2", Origin::Deploy, Some("tenant-a"), 2);
    store
        .versions()
        .unwrap()
        .put_version(&VersionToKeep { topic: "t", version: &v2, component: b"two", config: false, keep: 3 })
        .unwrap();
    assert_eq!(
        store.versions().unwrap().current_versions().unwrap(),
        [pointer("v2", "v1")],
        "the config's digest stays"
    );
    assert_eq!(store.versions().unwrap().kept_versions("t").unwrap()[0], v2, "origin, deployer and time kept");
    put(store, "t", &version("v3", Origin::Watch, None, 3), b"three", false).unwrap();
    put(store, "t", &version("v4", Origin::Deploy, None, 4), b"four", false).unwrap();
    assert_eq!(digests(store), ["v4", "v3", "v2"], "v1 pruned");
    assert_eq!(store.versions().unwrap().version_component("t", "v1").unwrap(), None);
    assert_eq!(store.versions().unwrap().version_component("t", "v2").unwrap().as_deref(), Some(&b"two"[..]));

    // A rollback moves the pointer only: the deploy order and each
    // version's own stamp stay, so a second rollback goes further back.
    let back = version("v3", Origin::Rollback, Some("tenant-a"), 5);
    assert!(store.versions().unwrap().set_current_version("t", &back).unwrap());
    let rolled_back = |current: &str, by: Option<&str>, secs| TopicVersion {
        rolled_back: Some(Rollback { by: by.map(str::to_owned), at: now() + Duration::from_secs(secs) }),
        ..pointer(current, "v1")
    };
    assert_eq!(store.versions().unwrap().current_versions().unwrap(), [rolled_back("v3", Some("tenant-a"), 5)]);
    assert_eq!(store.versions().unwrap().current_version("t").unwrap(), Some(rolled_back("v3", Some("tenant-a"), 5)));
    assert_eq!(store.versions().unwrap().current_version("u").unwrap(), None);
    assert_eq!(digests(store), ["v4", "v3", "v2"]);
    assert_eq!(store.versions().unwrap().kept_versions("t").unwrap()[1].stamp.origin, Origin::Watch);
    assert!(store.versions().unwrap().set_current_version("t", &version("v2", Origin::Rollback, None, 6)).unwrap());
    assert_eq!(store.versions().unwrap().current_versions().unwrap(), [rolled_back("v2", None, 6)]);
    assert_eq!(digests(store), ["v4", "v3", "v2"]);
    assert_eq!(store.versions().unwrap().kept_versions("t").unwrap()[2], v2, "origin, deployer and time kept");
    assert!(
        !store.versions().unwrap().set_current_version("t", &version("v1", Origin::Rollback, None, 6)).unwrap(),
        "not kept"
    );
    assert!(
        !store.versions().unwrap().set_current_version("u", &version("v2", Origin::Rollback, None, 6)).unwrap(),
        "no such topic"
    );

    // The same version deployed again keeps its component, moves to the
    // front, and is not rolled back to any more.
    put(store, "t", &version("v3", Origin::Config, None, 7), b"three", true).unwrap();
    assert_eq!(store.versions().unwrap().current_versions().unwrap(), [pointer("v3", "v3")]);
    assert_eq!(digests(store), ["v3", "v4", "v2"]);
    assert_eq!(store.versions().unwrap().version_component("t", "v3").unwrap().as_deref(), Some(&b"three"[..]));
    put(store, "u", &version("w1", Origin::Config, None, 8), &[0, 255], true).unwrap();
    assert_eq!(store.versions().unwrap().current_versions().unwrap().len(), 2);
    assert_eq!(digests(store), ["v3", "v4", "v2"], "another topic's versions are its own");
    assert_eq!(store.versions().unwrap().version_component("u", "w1").unwrap().as_deref(), Some(&[0, 255][..]));
}

/// Keeps `version` of `topic` (at most 3 versions a topic).
fn put(
    store: &dyn JobStore,
    topic: &str,
    version: &StoredVersion,
    component: &[u8],
    config: bool,
) -> Result<(), StoreError> {
    store.versions().unwrap().put_version(&VersionToKeep { topic, version, component, config, keep: 3 })
}
