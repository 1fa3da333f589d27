//! The small HTTP service `husk demo`'s `calls` topic calls, on 127.0.0.1:
//! `GET /charge/<n>` answers 200 `charged <n>`, but a share of first calls
//! fail with 503 (every 5th job) or hang without answering (every 40th),
//! as a flaky payment provider would. It records the `Idempotency-Key` of
//! every call, by path.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;

/// What the service saw.
#[derive(Debug, Default)]
pub struct Calls {
    /// The keys of the calls to each path, in order.
    pub keys: HashMap<String, Vec<Option<String>>>,
    /// Calls answered 503.
    pub failed: u64,
    /// Calls left hanging.
    pub hung: u64,
}

impl Calls {
    /// Jobs (paths) called more than once, and how many of those carried
    /// the same key on every call.
    pub fn retried_with_same_key(&self) -> (usize, usize) {
        let retried: Vec<_> = self.keys.values().filter(|keys| keys.len() > 1).collect();
        let same = retried.iter().filter(|keys| keys[0].is_some() && keys.iter().all(|k| *k == keys[0])).count();
        (retried.len(), same)
    }
}

/// The running service; stops accepting when dropped.
pub struct Service {
    address: SocketAddr,
    calls: Arc<Mutex<Calls>>,
    hanging: Arc<Mutex<Vec<TcpStream>>>,
    stop: Arc<AtomicBool>,
}

impl Service {
    /// Starts it on a free port of 127.0.0.1.
    ///
    /// # Errors
    ///
    /// When no port can be bound.
    pub fn start() -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let service = Self {
            address: listener.local_addr()?,
            calls: Arc::default(),
            hanging: Arc::default(),
            stop: Arc::default(),
        };
        let (calls, hanging, stop) = (service.calls.clone(), service.hanging.clone(), service.stop.clone());
        std::thread::Builder::new().name("demo-service".into()).spawn(move || {
            for stream in listener.incoming() {
                if stop.load(Ordering::Acquire) {
                    return;
                }
                let Ok(stream) = stream else { continue };
                let (calls, hanging) = (calls.clone(), hanging.clone());
                std::thread::spawn(move || answer(stream, &calls, &hanging));
            }
        })?;
        Ok(service)
    }

    /// `http://127.0.0.1:<port>`.
    pub fn origin(&self) -> String {
        format!("http://{}", self.address)
    }

    /// What it saw so far.
    pub fn calls(&self) -> parking_lot::MutexGuard<'_, Calls> {
        self.calls.lock()
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        self.hanging.lock().clear();
        let _ = TcpStream::connect(self.address);
    }
}

fn answer(stream: TcpStream, calls: &Mutex<Calls>, hanging: &Mutex<Vec<TcpStream>>) {
    let Ok(read) = stream.try_clone() else { return };
    let mut reader = BufReader::new(read);
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let path = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let mut key = None;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 || header.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.trim().eq_ignore_ascii_case("idempotency-key")
        {
            key = Some(value.trim().to_owned());
        }
    }
    let n: u64 = path.strip_prefix("/charge/").and_then(|n| n.parse().ok()).unwrap_or(0);
    let first = {
        let mut calls = calls.lock();
        let keys = calls.keys.entry(path).or_default();
        keys.push(key);
        keys.len() == 1
    };
    let mut stream = stream;
    if first && n % 40 == 7 {
        calls.lock().hung += 1;
        hanging.lock().push(stream);
        return;
    }
    let (status, body) = if first && n.is_multiple_of(5) {
        calls.lock().failed += 1;
        ("503 Service Unavailable", "try again".to_owned())
    } else {
        ("200 OK", format!("charged {n}"))
    };
    let response = format!("HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
    let _ = stream.write_all(response.as_bytes());
}
