//! `husk.toml` parsing: any text is either refused with an error or read
//! into a config whose derived settings (topics, limits, engine, store
//! kind) can be computed — never a panic.

#![no_main]

use std::path::Path;

use husk_server::config::Config;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
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
});
