//! Config values and secrets of the job's topic, read through
//! `wasi:config/store` (`wasi:config@0.2.0-rc.1`).
//!
//! A topic grants them in `husk.toml` (`[topics.<name>.config]` for plain
//! values, `[topics.<name>.secrets]` for secrets); a component that calls
//! these functions imports `wasi:config/store`, and husk loads it only for a
//! topic that grants config. A secret's value reaches the guest like any
//! other value; husk replaces it with `***` in what the guest logs and in
//! the faults it returns.
//!
//! ```no_run
//! let endpoint = husk_guest::config::get("endpoint")?.unwrap_or_default();
//! # Ok::<(), husk_guest::config::ConfigError>(())
//! ```

mod bindings {
    wit_bindgen::generate!({
        inline: r#"
            package wasi:config@0.2.0-rc.1;

            interface store {
                variant error {
                    upstream(string),
                    io(string),
                }
                get: func(key: string) -> result<option<string>, error>;
                get-all: func() -> result<list<tuple<string, string>>, error>;
            }

            world imports {
                import store;
            }
        "#,
        world: "imports",
        runtime_path: "crate::__bindings::rt",
    });
}

use bindings::wasi::config::store;

/// Why the host could not answer (husk's config never fails; another host's
/// might).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "config store: {}", self.0)
    }
}

impl std::error::Error for ConfigError {}

impl From<store::Error> for ConfigError {
    fn from(error: store::Error) -> Self {
        match error {
            store::Error::Upstream(message) | store::Error::Io(message) => ConfigError(message),
        }
    }
}

/// The value of `key`; `None` when the topic has no such key.
///
/// # Errors
///
/// [`ConfigError`] when the host's store fails.
pub fn get(key: &str) -> Result<Option<String>, ConfigError> {
    Ok(store::get(key)?)
}

/// Every key and value the topic grants.
///
/// # Errors
///
/// [`ConfigError`] when the host's store fails.
pub fn get_all() -> Result<Vec<(String, String)>, ConfigError> {
    Ok(store::get_all()?)
}
