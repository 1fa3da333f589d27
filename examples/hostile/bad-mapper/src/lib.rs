//! Hostile: `bad-mapper` is an error mapper that misbehaves on purpose:
//! for a fault with code `spin` it loops forever, for `panic` it panics,
//! otherwise it classifies the fault as technical. The host must cut it off
//! and fall back to a technical classification, never leave the job stuck.

use husk_guest::{Classification, ErrorMapper, Fault};

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
            "panic" => panic!("mapper gave up on {}", fault.code),
            code => Classification::Technical(format!("bad-mapper saw {code}")),
        }
    }
}

husk_guest::export_error_mapper!(BadMapper);
