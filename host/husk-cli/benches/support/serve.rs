//! A `husk serve` child process for the benches that drive the real server.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A `husk serve` process, killed when dropped.
pub(crate) struct Server {
    child: Child,
    pub(crate) url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `husk serve` on `config` (written to `dir` as `NAME.toml`, its log
/// beside it) on a free port; returns once it serves.
pub(crate) fn start(dir: &std::path::Path, name: &str, config: &str) -> Server {
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, config).unwrap();
    let log_path = dir.join(format!("{name}.log"));
    let log = std::fs::File::create(&log_path).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_husk"))
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(&path)
        .env("RUST_LOG", "warn,husk_server=info")
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    // Killed and waited for when dropped, also if it never starts.
    let mut server = Server { child, url: String::new() };
    let started = Instant::now();
    loop {
        let text = std::fs::read_to_string(&log_path).unwrap_or_default();
        if let Some((_, rest)) = text.split_once("husk serving on ") {
            server.url = rest.split_whitespace().next().unwrap().to_owned();
            return server;
        }
        assert!(started.elapsed() < Duration::from_secs(120), "husk serve did not start:\n{text}");
        std::thread::sleep(Duration::from_millis(20));
    }
}
