//! The dispatcher's semantics on every store backend: the conformance
//! suite husk exports (`husk::store::conformance`, its dispatcher and store
//! checks), one test per check and backend.

mod memory {
    husk::store_conformance!(crate::rig::memory);
}

mod sqlite {
    husk::store_conformance!(crate::rig::sqlite);
}

mod postgres {
    husk::store_conformance!([cfg_attr(not(husk_postgres), ignore = "no PostgreSQL test server: run scripts/postgres start")] crate::rig::postgres);
}

#[test]
fn classification_converts_from_the_contract() {
    let c: husk::classify::Classification = husk::contract::Classification::BusinessStatus("s".into()).into();
    assert_eq!(c, husk::classify::Classification::BusinessStatus { value: "s".into() });
}
