//! Hostile: `bad-mapper` is an error mapper that misbehaves on purpose.
//! By the fault's code:
//!
//! - `spin`: loops forever;
//! - `sleep`: logs `sleeping`, then sleeps through WASI for an hour
//!   (blocked in a host call);
//! - `panic`: panics;
//! - `huge`: returns a classification with one field of `bytes` bytes (from
//!   the JSON body `{"field": "code"|"message"|"status"|"diagnostic",
//!   "bytes": N}`);
//! - anything else: technical, saying what it saw.
//!
//! The host must cut it off and fall back to a technical classification,
//! never leave the job stuck or store what it returns past its caps.

use husk_guest::{BusinessError, Classification, ErrorMapper, Fault};

struct BadMapper;

impl ErrorMapper for BadMapper {
    fn classify(fault: Fault) -> Classification {
        match fault.code.as_str() {
            "spin" => {
                let mut n: u64 = 0;
                loop {
                    n = std::hint::black_box(n.wrapping_add(1));
                }
            }
            "sleep" => {
                husk_guest::info!("sleeping");
                std::thread::sleep(std::time::Duration::from_secs(3600));
                Classification::Technical("bad-mapper woke up".into())
            }
            "panic" => panic!("mapper gave up on {}", fault.code),
            "huge" => huge(&fault),
            code => Classification::Technical(format!("bad-mapper saw {code}")),
        }
    }
}

/// A classification with one field of the size the fault's body asks for.
fn huge(fault: &Fault) -> Classification {
    let bytes = fault.body_field("/bytes").and_then(|b| b.as_u64()).unwrap_or(10_000_000) as usize;
    let field = fault.body_field("/field");
    let big = "x".repeat(bytes);
    match field.as_ref().and_then(|f| f.as_str()) {
        Some("code") => Classification::BusinessError(BusinessError { code: big, message: "huge code".into() }),
        Some("status") => Classification::BusinessStatus(big),
        Some("diagnostic") => Classification::Technical(big),
        _ => Classification::BusinessError(BusinessError { code: "huge".into(), message: big }),
    }
}

husk_guest::export_error_mapper!(BadMapper);
