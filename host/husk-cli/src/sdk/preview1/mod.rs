//! husk's WASI preview 1 adapter (`adapter.wat`, its WASI 0.2 imports in
//! `adapter.wit`): what a core module importing `wasi_snapshot_preview1`
//! — Go's `GOOS=wasip1` runtime — is linked with when [`super::wrap`]
//! makes a component of it. Unlike the standard reactor adapter it never
//! allocates (see the header of `adapter.wat` for why and for what a guest
//! gets through it).

use wit_bindgen_core::wit_parser::Resolve;
use wit_component::StringEncoding;

/// The module name preview 1 functions are imported from.
pub const MODULE: &str = "wasi_snapshot_preview1";

const WAT: &str = include_str!("adapter.wat");
const WIT: &str = include_str!("adapter.wit");

/// The adapter module, with the component type of its imports embedded
/// (as `ComponentEncoder::adapter` takes it).
///
/// # Panics
///
/// Never for the sources in the crate; their tests build it.
pub fn adapter() -> Vec<u8> {
    let mut module = wat::parse_str(WAT).expect("adapter.wat parses");
    let mut resolve = Resolve::default();
    let package = resolve.push_str("adapter.wit", WIT).expect("adapter.wit parses");
    let world = resolve.select_world(&[package], Some("adapter")).expect("adapter.wit has world `adapter`");
    wit_component::embed_component_metadata(&mut module, &resolve, world, StringEncoding::UTF8)
        .expect("the adapter's imports are encodable");
    module
}

/// Whether the core module imports anything from [`MODULE`].
pub fn imported_by(core: &[u8]) -> bool {
    wasmparser::Parser::new(0).parse_all(core).any(|payload| match payload {
        Ok(wasmparser::Payload::ImportSection(imports)) => {
            imports.into_imports().any(|import| import.is_ok_and(|import| import.module == MODULE))
        }
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_adapter_builds_and_imports_only_wasi_0_2_and_the_memory() {
        let adapter = adapter();
        let mut modules = Vec::new();
        for payload in wasmparser::Parser::new(0).parse_all(&adapter) {
            if let wasmparser::Payload::ImportSection(imports) = payload.unwrap() {
                for import in imports.into_imports() {
                    modules.push(import.unwrap().module.to_owned());
                }
            }
        }
        assert!(modules.iter().all(|m| m == "env" || m.starts_with("wasi:") && m.ends_with("@0.2.0")), "{modules:?}");
        assert!(!imported_by(&adapter), "the adapter exports preview 1, it does not import it");
    }
}
