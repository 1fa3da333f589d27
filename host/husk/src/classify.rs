//! Classification: what a raw fault means. An [`ErrorMapper`] is a Wasm
//! component (the `error-mapper` world, run in the sandbox with its own
//! small limits) or declarative [`Rule`]s from config. Without a mapper every
//! fault is technical. Host-reserved codes (`husk.*`) go through the mapper
//! like any other fault.

use serde::{Deserialize, Serialize};

use crate::bindings;
use crate::fault::Fault;
use crate::plugin::Plugin;
use crate::sandbox::{Ending, Limits, Sandbox};

/// What a fault means.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Classification {
    /// A technical fault: the retry policy decides whether to run again.
    Technical {
        /// Diagnostic for operators.
        diagnostic: String,
    },
    /// A technical fault that must not be retried: the job fails at once.
    TechnicalNonRetryable {
        /// Diagnostic for operators.
        diagnostic: String,
    },
    /// A business error: terminal, delivered, never retried.
    BusinessError {
        /// Error code for the job's owner.
        code: String,
        /// Human-readable message.
        message: String,
    },
    /// A business status: terminal, delivered, never retried.
    BusinessStatus {
        /// The status.
        value: String,
    },
}

impl Classification {
    /// A technical classification with `diagnostic`.
    pub fn technical(diagnostic: impl Into<String>) -> Self {
        Self::Technical { diagnostic: diagnostic.into() }
    }
}

impl From<bindings::Classification> for Classification {
    fn from(c: bindings::Classification) -> Self {
        match c {
            bindings::Classification::Technical(diagnostic) => Self::Technical { diagnostic },
            bindings::Classification::TechnicalNonRetryable(diagnostic) => Self::TechnicalNonRetryable { diagnostic },
            bindings::Classification::BusinessError(e) => Self::BusinessError { code: e.code, message: e.message },
            bindings::Classification::BusinessStatus(value) => Self::BusinessStatus { value },
        }
    }
}

/// Classifies the faults of a topic.
#[derive(Debug, Clone)]
pub enum ErrorMapper {
    /// A Wasm component exporting `classify`, run with `limits`.
    Wasm {
        /// The sandbox to run it in.
        sandbox: Sandbox,
        /// The mapper component.
        plugin: Plugin,
        /// Its limits (see [`Limits::error_mapper`]).
        limits: Limits,
    },
    /// Declarative rules; the first that matches decides.
    Rules(Rules),
}

impl ErrorMapper {
    /// Classifies `fault`. Never fails and never hangs: a Wasm mapper that
    /// traps, runs out of fuel or passes its deadline yields a technical
    /// classification saying so.
    pub fn classify(&self, fault: &Fault) -> Classification {
        match self {
            ErrorMapper::Rules(rules) => rules.classify(fault),
            ErrorMapper::Wasm { sandbox, plugin, limits } => match sandbox.classify(plugin, fault, limits) {
                Ok(execution) => match execution.ending {
                    Ending::Returned(classification) => classification.into(),
                    Ending::Killed(kill) => Classification::technical(format!(
                        "error mapper failed on fault {} ({}): {kill}",
                        fault.code,
                        kill.code()
                    )),
                    Ending::Fault(_) | Ending::Cancelled => {
                        Classification::technical(format!("error mapper gave no classification for {}", fault.code))
                    }
                },
                Err(error) => Classification::technical(format!("error mapper unusable: {error}")),
            },
        }
    }
}

/// Classifies a fault with an optional mapper: no mapper means technical.
pub fn classify(mapper: Option<&ErrorMapper>, fault: &Fault) -> Classification {
    match mapper {
        Some(mapper) => mapper.classify(fault),
        None => Classification::technical(format!("fault {}", fault.code)),
    }
}

/// What a matching [`Rule`] classifies a fault as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RuleKind {
    /// [`Classification::BusinessError`].
    BusinessError,
    /// [`Classification::BusinessStatus`].
    BusinessStatus,
    /// [`Classification::Technical`].
    Technical,
    /// [`Classification::TechnicalNonRetryable`].
    TechnicalNonRetryable,
}

/// One declarative classification rule. A rule matches a fault when its
/// `code` glob (if any) matches the fault's code and its `pointer` (if any)
/// names a field of the JSON body — equal to `equals`, when given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// Glob on the fault code, e.g. `payment.*` or `husk.timeout`.
    #[serde(default)]
    pub code: Option<String>,
    /// JSON pointer (RFC 6901) into the fault body, e.g. `/reason`.
    #[serde(default)]
    pub pointer: Option<String>,
    /// The value the pointed field must have.
    #[serde(default)]
    pub equals: Option<serde_json::Value>,
    /// What the fault is when the rule matches.
    pub classify_as: RuleKind,
    /// Business error code; default: the pointed field when it is a string,
    /// else the fault code.
    #[serde(default)]
    pub error_code: Option<String>,
    /// Business error message or technical diagnostic; default: the fault
    /// code.
    #[serde(default)]
    pub message: Option<String>,
    /// Business status; default: the pointed field when it is a string, else
    /// the fault code.
    #[serde(default)]
    pub status: Option<String>,
}

/// A rule set, compiled once.
#[derive(Debug, Clone)]
pub struct Rules {
    rules: Vec<(Rule, Option<glob::Pattern>)>,
}

/// A rule whose `code` is not a valid glob.
#[derive(Debug, thiserror::Error)]
#[error("rule {index}: invalid code pattern `{pattern}`: {reason}")]
pub struct RuleError {
    /// 0-based position of the rule.
    pub index: usize,
    /// The pattern.
    pub pattern: String,
    /// Why it is invalid.
    pub reason: String,
}

impl Rules {
    /// Compiles `rules`.
    ///
    /// # Errors
    ///
    /// [`RuleError`] for a code pattern that is not a valid glob.
    pub fn new(rules: Vec<Rule>) -> Result<Self, RuleError> {
        let rules = rules
            .into_iter()
            .enumerate()
            .map(|(index, rule)| {
                let pattern = match &rule.code {
                    Some(code) => Some(glob::Pattern::new(code).map_err(|e| RuleError {
                        index,
                        pattern: code.clone(),
                        reason: e.msg.to_string(),
                    })?),
                    None => None,
                };
                Ok((rule, pattern))
            })
            .collect::<Result<_, RuleError>>()?;
        Ok(Self { rules })
    }

    /// Classifies `fault` by the first matching rule; technical when none
    /// matches.
    pub fn classify(&self, fault: &Fault) -> Classification {
        let body: Option<serde_json::Value> = serde_json::from_slice(&fault.body).ok();
        for (rule, pattern) in &self.rules {
            if pattern.as_ref().is_some_and(|p| !p.matches(&fault.code)) {
                continue;
            }
            let field = match &rule.pointer {
                Some(pointer) => match body.as_ref().and_then(|b| b.pointer(pointer)) {
                    Some(field) => Some(field),
                    None => continue,
                },
                None => None,
            };
            if rule.equals.as_ref().is_some_and(|expected| field != Some(expected)) {
                continue;
            }
            let field_text = field.and_then(|f| f.as_str()).map(str::to_owned);
            let text = |explicit: &Option<String>| {
                explicit.clone().or_else(|| field_text.clone()).unwrap_or_else(|| fault.code.clone())
            };
            let message = rule.message.clone().unwrap_or_else(|| format!("fault {}", fault.code));
            return match rule.classify_as {
                RuleKind::BusinessError => Classification::BusinessError { code: text(&rule.error_code), message },
                RuleKind::BusinessStatus => Classification::BusinessStatus { value: text(&rule.status) },
                RuleKind::Technical => Classification::Technical { diagnostic: message },
                RuleKind::TechnicalNonRetryable => Classification::TechnicalNonRetryable { diagnostic: message },
            };
        }
        Classification::technical(format!("no rule matched fault {}", fault.code))
    }
}
