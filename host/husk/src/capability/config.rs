//! Config values and secrets a topic's jobs read through
//! `wasi:config/store`. Secrets are values like any other to the guest, but
//! husk never writes them itself, and replaces them with `***` in what the
//! guest logs and in the faults it returns.

use std::collections::BTreeMap;
use std::path::PathBuf;

use wasmtime_wasi_config::WasiConfigVariables;

use super::Redactor;

/// The largest secret file husk reads.
const MAX_SECRET_FILE: u64 = 64 << 10;

/// Where a secret's value comes from: an environment variable of husk's
/// process (`env:VAR`) or a file (`file:PATH`, not readable by every user;
/// one trailing newline is dropped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Secret {
    /// `env:VAR`.
    Env(String),
    /// `file:PATH`.
    File(PathBuf),
}

impl Secret {
    /// Parses `env:VAR` or `file:PATH`.
    ///
    /// # Errors
    ///
    /// A message saying what is expected, for anything else.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text.split_once(':') {
            Some(("env", var)) if !var.is_empty() => Ok(Secret::Env(var.to_owned())),
            Some(("file", path)) if !path.is_empty() => Ok(Secret::File(PathBuf::from(path))),
            _ => {
                Err("a secret is `env:VARIABLE` or `file:PATH` (the value itself is never written in husk.toml)"
                    .to_owned())
            }
        }
    }

    /// Reads the value.
    fn resolve(&self) -> Result<String, String> {
        match self {
            Secret::Env(var) => std::env::var(var).map_err(|e| match e {
                std::env::VarError::NotPresent => format!("the environment variable `{var}` is not set"),
                std::env::VarError::NotUnicode(_) => format!("the environment variable `{var}` is not UTF-8"),
            }),
            Secret::File(path) => {
                let shown = path.display();
                let metadata = std::fs::metadata(path).map_err(|e| format!("cannot read `{shown}`: {e}"))?;
                // Not a device, a FIFO or a directory: reading one could
                // block the start, or never end.
                if !metadata.is_file() {
                    return Err(format!("`{shown}` is not a regular file"));
                }
                if metadata.len() > MAX_SECRET_FILE {
                    return Err(format!("`{shown}` is over {MAX_SECRET_FILE} bytes, too large for a secret"));
                }
                #[cfg(unix)]
                {
                    use std::os::unix::fs::PermissionsExt as _;
                    if metadata.permissions().mode() & 0o004 != 0 {
                        return Err(format!(
                            "`{shown}` is readable by every user; make it private (chmod o-r) before husk reads a secret from it"
                        ));
                    }
                }
                #[cfg(not(unix))]
                let _ = metadata;
                let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read `{shown}`: {e}"))?;
                let text = text.strip_suffix('\n').unwrap_or(&text);
                Ok(text.strip_suffix('\r').unwrap_or(text).to_owned())
            }
        }
    }
}

/// A secret that could not be read: its key and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("secret `{key}`: {reason}")]
pub struct SecretError {
    /// The config key.
    pub key: String,
    /// Why.
    pub reason: String,
}

/// A topic's config: plain values and secrets, by key. A key it does not
/// hold reads as `none`.
#[derive(Default)]
pub struct ConfigGrant {
    values: BTreeMap<String, String>,
    sources: BTreeMap<String, Secret>,
    variables: WasiConfigVariables,
    secrets: Vec<String>,
}

impl std::fmt::Debug for ConfigGrant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The values stay out of debug output.
        f.debug_struct("ConfigGrant")
            .field("values", &self.values.keys().collect::<Vec<_>>())
            .field("secrets", &self.sources)
            .finish_non_exhaustive()
    }
}

impl ConfigGrant {
    /// Plain `values` and `secrets` by key, the secrets read now.
    ///
    /// # Errors
    ///
    /// [`SecretError`] naming the first secret that cannot be read (an
    /// unset variable, a missing or world-readable file), or a key both a
    /// value and a secret.
    pub fn new(values: BTreeMap<String, String>, secrets: BTreeMap<String, Secret>) -> Result<Self, SecretError> {
        if let Some(key) = secrets.keys().find(|key| values.contains_key(*key)) {
            return Err(SecretError { key: key.clone(), reason: "is both a config value and a secret".to_owned() });
        }
        let mut variables = WasiConfigVariables::new();
        let mut redacted = Vec::new();
        for (key, value) in &values {
            variables.insert(key.clone(), value.clone());
        }
        for (key, source) in &secrets {
            let value = source.resolve().map_err(|reason| SecretError { key: key.clone(), reason })?;
            if !value.is_empty() {
                redacted.push(value.clone());
            }
            variables.insert(key.clone(), value);
        }
        Ok(Self { values, sources: secrets, variables, secrets: redacted })
    }

    /// The same config with its secrets read again (on a deploy: a rotated
    /// secret file takes effect).
    ///
    /// # Errors
    ///
    /// As [`ConfigGrant::new`].
    pub fn reread(&self) -> Result<Self, SecretError> {
        Self::new(self.values.clone(), self.sources.clone())
    }

    /// Whether it holds no secrets.
    pub(crate) fn sources_empty(&self) -> bool {
        self.sources.is_empty()
    }

    /// The variables `wasi:config/store` reads.
    pub(crate) fn variables(&self) -> &WasiConfigVariables {
        &self.variables
    }

    /// What replaces this config's secrets in text.
    pub fn redactor(&self) -> Redactor {
        Redactor::new(self.secrets.iter().map(String::as_str))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::{ConfigGrant, Secret};

    #[test]
    fn secrets_are_read_from_private_files_and_the_environment() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("key");
        std::fs::write(&file, "s3cr3t-from-file\n").unwrap();
        let private = |mode| {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
        };
        private(0o600);
        let secrets = BTreeMap::from([("key".to_owned(), Secret::File(file.clone()))]);
        let grant = ConfigGrant::new(BTreeMap::new(), secrets.clone()).unwrap();
        assert_eq!(grant.secrets, ["s3cr3t-from-file"]);
        assert_eq!(grant.redactor().redact("token s3cr3t-from-file!"), "token ***!");
        private(0o644);
        let refused = ConfigGrant::new(BTreeMap::new(), secrets).unwrap_err();
        assert_eq!(refused.key, "key");
        assert!(refused.reason.contains("readable by every user"), "{}", refused.reason);
        let unset = BTreeMap::from([("api".to_owned(), Secret::Env("HUSK_TEST_SURELY_UNSET_VARIABLE".into()))]);
        let refused = ConfigGrant::new(BTreeMap::new(), unset).unwrap_err();
        assert_eq!(refused.key, "api");
        assert!(refused.reason.contains("HUSK_TEST_SURELY_UNSET_VARIABLE"), "{}", refused.reason);
        for (path, why) in [("/dev/zero", "not a regular file"), ("/tmp", "not a regular file")] {
            let source = BTreeMap::from([("k".to_owned(), Secret::File(path.into()))]);
            let refused = ConfigGrant::new(BTreeMap::new(), source).unwrap_err();
            assert!(refused.reason.contains(why), "{path}: {}", refused.reason);
        }
        private(0o600);
        std::fs::write(&file, vec![b'x'; 65 << 10]).unwrap();
        let big = BTreeMap::from([("k".to_owned(), Secret::File(file.clone()))]);
        assert!(ConfigGrant::new(BTreeMap::new(), big).unwrap_err().reason.contains("too large"));
        assert!(Secret::parse("plain-value").is_err());
        assert_eq!(Secret::parse("env:X"), Ok(Secret::Env("X".into())));
    }
}
