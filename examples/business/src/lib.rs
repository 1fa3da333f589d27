//! `business` — an operation whose failures are business outcomes.
//!
//! Input `{"account": "acme", "amount": 120, "balance": 100}`:
//! - `amount > balance` → fault `payment.declined`, body
//!   `{"reason": "insufficient-funds", ...}`;
//! - account `"frozen"` → fault `account.frozen`, body `{"status": "frozen"}`;
//! - otherwise `{"charged": amount, "balance": balance - amount}`.
//!
//! It is also its own error mapper (world `plugin`, exported with
//! `export_plugin!`): `payment.declined` is a business error named by the
//! body's `reason`, `account.frozen` a business status, anything else
//! technical. The separate `mapper` example classifies the same faults.

use husk_guest::{Classification, ErrorMapper, Fault, Job, Operation, Output};
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

impl ErrorMapper for Business {
    fn classify(fault: Fault) -> Classification {
        match fault.code.as_str() {
            "payment.declined" => {
                let reason =
                    fault.body_json::<serde_json::Value>().and_then(|body| body["reason"].as_str().map(str::to_owned));
                Classification::business_error(reason.unwrap_or_else(|| "declined".into()), "the payment was declined")
            }
            "account.frozen" => Classification::BusinessStatus("frozen".into()),
            code => Classification::Technical(format!("technical fault {code}")),
        }
    }
}

husk_guest::export_plugin!(Business);
