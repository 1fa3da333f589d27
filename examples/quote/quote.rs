//! The `quote` operation shared by its two versions: prices an amount in a
//! currency. Input `{"amount": 120, "currency": "EUR"}`; output
//! `{"version": "v1", "amount": 120, "currency": "EUR", "eur": 120.0}`.
//!
//! Version 1 has a bug: it only knows EUR, and any other currency fails with
//! the technical fault `quote.rates-unavailable` on every attempt, so the
//! job retries and ends an incident. Version 2 knows the rates.

use husk_guest::{Fault, Job, Output};
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize)]
struct Input {
    amount: f64,
    currency: String,
}

/// Prices the job's input; `version` is `"v1"` or `"v2"`.
pub(crate) fn quote(job: &Job, version: &str) -> Result<Output, Fault> {
    let input: Input = job.input_json()?;
    let rate = match (version, input.currency.as_str()) {
        (_, "EUR") => 1.0,
        ("v2", "USD") => 0.92,
        ("v2", "GBP") => 1.17,
        _ => {
            husk_guest::warn!("attempt {}: no rate for {}", job.attempt, input.currency);
            return Err(Fault::new(
                "quote.rates-unavailable",
                &json!({ "currency": input.currency, "attempt": job.attempt }),
            ));
        }
    };
    Output::json(&json!({
        "version": version,
        "amount": input.amount,
        "currency": input.currency,
        "eur": input.amount * rate,
    }))
}
