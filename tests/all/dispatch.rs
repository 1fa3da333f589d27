//! The dispatcher's semantics on every store backend: the conformance
//! suite husk exports (`husk::conformance`: the queue and the
//! dispatcher on it, then each capability a store supports), one test per
//! check and backend.

mod memory {
    husk::store_conformance!(crate::rig::memory, supports: [queries, incidents, pauses, pruning, versions]);
}

mod sqlite {
    husk::store_conformance!(crate::rig::sqlite, supports: [queries, incidents, pauses, pruning, versions]);
}

mod postgres {
    husk::store_conformance!(
        [cfg_attr(not(husk_postgres), ignore = "no PostgreSQL test server: run scripts/postgres start")]
        crate::rig::postgres,
        supports: [queries, incidents, pauses, pruning, versions, shared]
    );
}

/// A store with the queue alone passes the queue's and the dispatcher's
/// checks: none of them needs more.
mod core_only {
    husk::store_conformance!(crate::rig::core_only);
}

#[test]
fn classification_converts_from_the_contract() {
    let c: husk::classify::Classification = husk::contract::Classification::BusinessStatus("s".into()).into();
    assert_eq!(c, husk::classify::Classification::BusinessStatus { value: "s".into() });
}
