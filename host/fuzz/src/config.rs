//! `husk.toml` parsing: any text is either refused with an error or read
//! into a config whose derived settings (topics, limits, engine, store
//! kind) can be computed — never a panic.

use std::path::Path;

use husk_server::config::Config;

/// Reads `data` (its longest UTF-8 prefix, as libFuzzer's `&str` input)
/// as `husk.toml`; panics only through a panic of husk's own.
pub(crate) fn check(data: &[u8]) {
    let text = match std::str::from_utf8(data) {
        Ok(text) => text,
        Err(e) => std::str::from_utf8(&data[..e.valid_up_to()]).unwrap(),
    };
    let Ok(config) = Config::parse(text) else { return };
    let base = Path::new("/nonexistent");
    // Secrets are read here (an unset variable or a missing file: an error).
    for topic in config.topics(base).into_iter().flatten() {
        let _ = topic.name();
    }
    for topic in config.topics.values() {
        let _ = topic.limits();
    }
    let _ = config.engine(base, None);
    let _ = (config.listen(), config.max_input_size(), config.max_plugin_size(), config.shutdown_grace());
}
