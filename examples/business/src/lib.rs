//! `business` — an operation whose failures are business outcomes.
//!
//! Input `{"account": "acme", "amount": 120, "balance": 100}`:
//! - `amount > balance` → fault `payment.declined`, body
//!   `{"reason": "insufficient-funds", ...}`;
//! - account `"frozen"` → fault `account.frozen`, body `{"status": "frozen"}`;
//! - otherwise `{"charged": amount, "balance": balance - amount}`.
//!
//! The `mapper` example classifies these faults as a business error and a
//! business status; without a mapper they would be technical faults.

use husk_guest::{Fault, Job, Operation, Output};
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize)]
struct Payment {
    account: String,
    amount: u64,
    balance: u64,
}

struct Business;

impl Operation for Business {
    fn execute(job: Job) -> Result<Output, Fault> {
        let payment: Payment = job.input_json()?;
        if payment.account == "frozen" {
            return Err(Fault::new("account.frozen", &json!({ "status": "frozen" })));
        }
        if payment.amount > payment.balance {
            return Err(Fault::new(
                "payment.declined",
                &json!({
                    "reason": "insufficient-funds",
                    "amount": payment.amount,
                    "balance": payment.balance,
                }),
            ));
        }
        Output::json(&json!({
            "charged": payment.amount,
            "balance": payment.balance - payment.amount,
        }))
    }
}

husk_guest::export_operation!(Business);
