//! `mapper` — an error mapper classifying by code and by a JSON body field.
//!
//! - code `payment.declined` → business error, code taken from the body's
//!   `/reason` field (e.g. `insufficient-funds`);
//! - any fault whose body has a string `/status` → business status;
//! - codes starting with `validation.` → technical, not retryable;
//! - everything else (including the host's `husk.*` codes) → technical, so
//!   the retry policy decides.

use husk_guest::{Classification, ErrorMapper, Fault};
use serde_json::Value;

struct Mapper;

impl ErrorMapper for Mapper {
    fn classify(fault: Fault) -> Classification {
        if fault.code == "payment.declined" {
            let reason = match fault.body_field("/reason") {
                Some(Value::String(reason)) => reason,
                _ => "declined".to_string(),
            };
            return Classification::business_error(reason, "the payment was declined");
        }
        if let Some(Value::String(status)) = fault.body_field("/status") {
            return Classification::BusinessStatus(status);
        }
        if fault.code.starts_with("validation.") {
            return Classification::TechnicalNonRetryable(format!("invalid request: {}", fault.code));
        }
        Classification::Technical(format!("technical fault {}", fault.code))
    }
}

husk_guest::export_error_mapper!(Mapper);
