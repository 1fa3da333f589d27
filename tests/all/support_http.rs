//! A small HTTP/1.1 server on 127.0.0.1 for guests to call: it records each
//! request (path and `Idempotency-Key`) and answers by path:
//!
//! - `/ok`: 200 `ok`;
//! - `/fail-until/<n>`: 503 until the request's idempotency key has been
//!   seen `n` times, then 200 with the key;
//! - `/hang`: reads the request and never answers (the connection stays
//!   open until the server is dropped);
//! - `/big/<kib>`: 200 with a body of `<kib>` KiB, written until the peer
//!   stops reading;
//! - anything else: 404.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};

/// One request the server read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// Its path (with the query).
    pub path: String,
    /// Its `Idempotency-Key` header, if any.
    pub key: Option<String>,
}

#[derive(Default)]
struct State {
    seen: Mutex<Vec<Seen>>,
    by_key: Mutex<HashMap<String, u32>>,
    body_bytes: AtomicU64,
    hanging: Mutex<Vec<TcpStream>>,
    notify: Mutex<Option<Sender<String>>>,
    stop: AtomicBool,
}

/// The server; stops accepting when dropped.
pub struct TestServer {
    address: SocketAddr,
    state: Arc<State>,
}

impl TestServer {
    /// Starts one on an unused port of 127.0.0.1.
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let state = Arc::new(State::default());
        let accepting = state.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if accepting.stop.load(Ordering::Acquire) {
                    return;
                }
                let Ok(stream) = stream else { continue };
                let state = accepting.clone();
                std::thread::spawn(move || serve(stream, &state));
            }
        });
        Self { address, state }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn origin(&self) -> String {
        format!("http://{}", self.address)
    }

    /// Its port.
    pub fn port(&self) -> u16 {
        self.address.port()
    }

    /// `origin` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.origin())
    }

    /// The requests read so far, in order.
    pub fn seen(&self) -> Vec<Seen> {
        self.state.seen.lock().unwrap().clone()
    }

    /// How many body bytes `/big` wrote.
    pub fn body_bytes(&self) -> u64 {
        self.state.body_bytes.load(Ordering::Acquire)
    }

    /// Sends each request's path to `notify` once it is read.
    pub fn notify(&self, notify: Sender<String>) {
        *self.state.notify.lock().unwrap() = Some(notify);
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.state.stop.store(true, Ordering::Release);
        self.state.hanging.lock().unwrap().clear();
        // Wakes the accept loop so it sees the stop.
        let _ = TcpStream::connect(self.address);
    }
}

fn serve(stream: TcpStream, state: &State) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let path = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let (mut key, mut length, mut chunked) = (None, 0usize, false);
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 || header.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            match name.trim().to_ascii_lowercase().as_str() {
                "idempotency-key" => key = Some(value.trim().to_owned()),
                "content-length" => length = value.trim().parse().unwrap_or(0),
                "transfer-encoding" => chunked = value.trim().eq_ignore_ascii_case("chunked"),
                _ => {}
            }
        }
    }
    // The whole body is read before answering, as servers do.
    if chunked {
        loop {
            let mut size = String::new();
            if reader.read_line(&mut size).unwrap_or(0) == 0 {
                return;
            }
            let size = usize::from_str_radix(size.trim().split(';').next().unwrap_or("0"), 16).unwrap_or(0);
            let mut chunk = vec![0; size + 2];
            if reader.read_exact(&mut chunk).is_err() {
                return;
            }
            if size == 0 {
                break;
            }
        }
    } else {
        let mut body = vec![0; length];
        let _ = reader.read_exact(&mut body);
    }
    state.seen.lock().unwrap().push(Seen { path: path.clone(), key: key.clone() });
    if let Some(notify) = state.notify.lock().unwrap().as_ref() {
        let _ = notify.send(path.clone());
    }
    let mut stream = stream;
    if path == "/hang" {
        state.hanging.lock().unwrap().push(stream);
        return;
    }
    if let Some(kib) = path.strip_prefix("/big/") {
        let total = kib.parse::<u64>().unwrap_or(1) << 10;
        let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {total}\r\nConnection: close\r\n\r\n");
        if stream.write_all(head.as_bytes()).is_err() {
            return;
        }
        let chunk = vec![b'x'; 64 << 10];
        let mut written = 0;
        while written < total {
            let n = chunk.len().min((total - written) as usize);
            if stream.write_all(&chunk[..n]).is_err() {
                break;
            }
            written += n as u64;
            state.body_bytes.fetch_add(n as u64, Ordering::AcqRel);
        }
        return;
    }
    let (status, text) = if path == "/ok" {
        ("200 OK", "ok".to_owned())
    } else if let Some(n) = path.strip_prefix("/fail-until/") {
        let n: u32 = n.split('?').next().unwrap_or(n).parse().unwrap_or(1);
        let key = key.unwrap_or_default();
        let count = {
            let mut by_key = state.by_key.lock().unwrap();
            let count = by_key.entry(key.clone()).or_default();
            *count += 1;
            *count
        };
        if count < n { ("503 Service Unavailable", "down".to_owned()) } else { ("200 OK", key) }
    } else {
        ("404 Not Found", "no such path".to_owned())
    };
    let response = format!("HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}", text.len());
    let _ = stream.write_all(response.as_bytes());
}
