//! A client of a running `husk serve`, for the CLI's `husk enqueue`, `husk
//! jobs`, `husk deploy` and the rest: blocking HTTP (ureq) with the
//! tenant's bearer token; the API's `{error, message}` refusals become
//! [`ClientError::Api`].

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use serde_json::Value;
use ureq::config::Config;
use ureq::http::Uri;
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{DefaultConnector, NextTimeout};

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The server refused the request.
    #[error("{message} (HTTP {status} {error})")]
    Api {
        /// The HTTP status.
        status: u16,
        /// The API's error kind.
        error: String,
        /// Its message.
        message: String,
    },
    /// The server could not be reached, or answered something else than
    /// JSON.
    #[error("{server}: {reason}")]
    Transport {
        /// The server's URL.
        server: String,
        /// Why.
        reason: String,
    },
}

/// ureq's resolver, except that a host written as an IP address is taken as
/// it is. ureq resolves the host before every request, pooled connection or
/// not, and with a timeout set it does so on a new thread: a thread spawned
/// per request, which costs a busy client more than the request itself.
#[derive(Debug, Default)]
struct LiteralFirst(DefaultResolver);

impl Resolver for LiteralFirst {
    fn resolve(&self, uri: &Uri, config: &Config, timeout: NextTimeout) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let ip = uri.host().and_then(|host| host.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>().ok());
        let port = uri.port_u16().or(match uri.scheme_str() {
            Some("http") => Some(80),
            Some("https") => Some(443),
            _ => None,
        });
        match (ip, port) {
            (Some(ip), Some(port)) => {
                let mut addrs = self.empty();
                addrs.push(SocketAddr::new(ip, port));
                Ok(addrs)
            }
            _ => self.0.resolve(uri, config, timeout),
        }
    }
}

/// A connection to one server as one tenant.
#[derive(Debug, Clone)]
pub struct Client {
    agent: ureq::Agent,
    server: String,
    token: Option<String>,
}

impl Client {
    /// A client of `server` (e.g. `http://127.0.0.1:8080`, or `host:port`
    /// for plain HTTP) using `token`.
    pub fn new(server: &str, token: Option<String>) -> Self {
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            // Longer than the longest long-poll the API holds.
            .timeout_global(Some(Duration::from_secs(90)))
            .build();
        let agent = ureq::Agent::with_parts(config, DefaultConnector::default(), LiteralFirst::default());
        let server = server.trim_end_matches('/');
        let server = if server.contains("://") { server.to_owned() } else { format!("http://{server}") };
        Self { agent, server, token }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.server)
    }

    fn transport(&self, reason: impl std::fmt::Display) -> ClientError {
        ClientError::Transport { server: self.server.clone(), reason: reason.to_string() }
    }

    fn auth<B>(&self, request: ureq::RequestBuilder<B>) -> ureq::RequestBuilder<B> {
        match &self.token {
            Some(token) => request.header("Authorization", format!("Bearer {token}")),
            None => request,
        }
    }

    /// `GET path` (with the query already in it).
    ///
    /// # Errors
    ///
    /// [`ClientError`].
    pub fn get(&self, path: &str) -> Result<Value, ClientError> {
        let response = self.auth(self.agent.get(self.url(path))).call().map_err(|e| self.transport(e))?;
        self.read(response)
    }

    /// `POST path` with `body` (`None`: no body) of `content_type`, and
    /// optional extra headers.
    ///
    /// # Errors
    ///
    /// [`ClientError`].
    pub fn post(
        &self,
        path: &str,
        body: Option<(&[u8], &str)>,
        headers: &[(&str, &str)],
    ) -> Result<Value, ClientError> {
        let mut request = self.auth(self.agent.post(self.url(path)));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = match body {
            Some((bytes, content_type)) => request.header("Content-Type", content_type).send(bytes),
            None => request.send_empty(),
        }
        .map_err(|e| self.transport(e))?;
        self.read(response)
    }

    fn read(&self, mut response: ureq::http::Response<ureq::Body>) -> Result<Value, ClientError> {
        let status = response.status().as_u16();
        let text = response.body_mut().with_config().limit(64 << 20).read_to_string().map_err(|e| self.transport(e))?;
        let value: Value = serde_json::from_str(&text).map_err(|_| {
            self.transport(format!("HTTP {status}, not JSON: {}", text.chars().take(200).collect::<String>()))
        })?;
        if (200..300).contains(&status) {
            return Ok(value);
        }
        let field = |name: &str| value.get(name).and_then(Value::as_str).unwrap_or_default().to_owned();
        let mut message = field("message");
        if status == 401 && self.token.is_none() {
            message += ": set HUSK_TOKEN or pass --token";
        }
        Err(ClientError::Api { status, error: field("error"), message })
    }
}
