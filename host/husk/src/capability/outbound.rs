//! Outbound HTTP (`wasi:http/outgoing-handler`), granted per topic by an
//! allowlist, and bounded by the job.
//!
//! Every request is checked before any connection: its scheme, host and
//! port must match an entry of the topic's allowlist, else the guest gets
//! `HTTP-request-denied` and husk logs the topic, the job and the host (not
//! the path or query). The host is resolved here, and the connection made
//! to an address that was checked: one that is not globally reachable
//! (loopback, private, link-local — the metadata service among them — and
//! every other range the IANA special-purpose registries mark so) or that
//! is one of the host's own interface addresses (read at the check) only
//! when the entry names the host itself (not by a wildcard) — so DNS cannot
//! point an allowed name at an internal service or at husk itself, between
//! a check and a connect or otherwise. Connect, first-byte and between-bytes timeouts are the
//! smaller of the guest's request options and the topic's `http_timeout`;
//! when the job's deadline comes first, the request is dropped with the
//! instance (`husk.timeout`); the response bodies of one job
//! together may be at most `max_response` bytes, and a job may make at most
//! `max_requests` requests (denied ones count).
//!
//! A retried call is safe: every request carries `Idempotency-Key:
//! husk-<job id>-<n>`, `n` its ordinal within the attempt — the same key on
//! every attempt of the job — unless the guest set the header itself.
//!
//! The connection code follows `wasmtime_wasi_http::default_send_request`,
//! which connects by host name and so cannot be given a checked address.

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue};
use http::uri::Scheme;
use http_body::{Body, Frame};
use http_body_util::BodyExt;
use tokio::net::TcpStream;
use wasmtime_wasi_http::io::TokioIo;
use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpHooks};

use super::allowed::is_prohibited;
use super::http::{HttpGrant, Resolver};

/// How long past the job's deadline a request's own timer fires when the
/// deadline comes first (the job is killed by then).
const DEADLINE_BACKSTOP: Duration = Duration::from_secs(1);

/// The TLS client configuration of every `https` request: the webpki
/// roots (Mozilla's), no client certificate.
static TLS: std::sync::LazyLock<Arc<rustls::ClientConfig>> = std::sync::LazyLock::new(|| {
    let roots = rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.into() };
    // ring named explicitly: the process-wide default provider would be
    // ambiguous if another crate of the binary enabled aws-lc-rs.
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("ring supports rustls's default protocol versions");
    Arc::new(builder.with_root_certificates(roots).with_no_client_auth())
});

/// The header that makes a retried call safe.
const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// One job's outbound HTTP: its grant (none: every request denied), whom to
/// name in logs, the requests it sent, the response bytes it may still read.
pub(crate) struct HttpHooks {
    grant: Option<Arc<HttpGrant>>,
    topic: String,
    job_id: String,
    deadline_at: Instant,
    /// Requests the job made (denied ones too).
    made: u32,
    /// Requests it sent: the ordinal in the idempotency key.
    sent: u32,
    response_budget: Arc<AtomicU64>,
}

impl HttpHooks {
    pub(crate) fn new(grant: Option<Arc<HttpGrant>>, topic: &str, job_id: &str, deadline_at: Instant) -> Self {
        let budget = grant.as_ref().map_or(0, |g| g.max_response);
        Self {
            grant,
            topic: topic.to_owned(),
            job_id: job_id.to_owned(),
            deadline_at,
            made: 0,
            sent: 0,
            response_budget: Arc::new(AtomicU64::new(budget)),
        }
    }
}

type Sent = Result<(http::Response<WasiBody>, Box<dyn Future<Output = Result<(), Error>> + Send>), Error>;

/// Refuses `request` with `error`. What the guest still writes of the body
/// is drained in the background (until it finishes the body or its instance
/// is dropped): a guest writing the body while it waits for the response (as
/// `wstd` does) would otherwise see its body's stream break and report that
/// instead of the error; and one waiting for the response before it
/// finishes the body gets the error at once.
fn fail(request: http::Request<WasiBody>, error: Error) -> Box<dyn Future<Output = Sent> + Send> {
    Box::new(refuse(request, error))
}

async fn refuse(request: http::Request<WasiBody>, error: Error) -> Sent {
    drain_later(request.into_body());
    Err(error)
}

/// Drains `body` on a task of its own.
fn drain_later(body: WasiBody) {
    wasmtime_wasi::runtime::with_ambient_tokio_runtime(|| drop(tokio::spawn(drain(body))));
}

/// Reads `body` to its end (or its first error), keeping none of it.
async fn drain(mut body: WasiBody) {
    while let Some(Ok(_)) = body.frame().await {}
}

/// A request body whose unread rest is drained when hyper drops it (after
/// the response came, or the connection ended): a guest writing it then
/// sees its writes succeed, and its response (or error) next. The draining
/// ends when the guest finishes the body or its instance is dropped.
struct Drained(Option<WasiBody>);

impl Body for Drained {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        match self.0.as_mut() {
            Some(body) => Pin::new(body).poll_frame(cx),
            None => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.0.as_ref().is_none_or(Body::is_end_stream)
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.0.as_ref().map(Body::size_hint).unwrap_or_default()
    }
}

impl Drop for Drained {
    fn drop(&mut self) {
        if let Some(body) = self.0.take().filter(|body| !body.is_end_stream()) {
            drain_later(body);
        }
    }
}

impl WasiHttpHooks for HttpHooks {
    fn send_request(
        &mut self,
        mut request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        _fut: Box<dyn Future<Output = Result<(), Error>> + Send>,
    ) -> Box<dyn Future<Output = Sent> + Send> {
        let Some(grant) = self.grant.clone() else { return fail(request, Error::HttpRequestDenied) };
        let https = request.uri().scheme() == Some(&Scheme::HTTPS);
        let Some(host) = request.uri().host().map(|h| h.trim_start_matches('[').trim_end_matches(']').to_owned())
        else {
            return fail(request, Error::HttpRequestUriInvalid);
        };
        let port = request.uri().port_u16().unwrap_or(if https { 443 } else { 80 });
        // Every request counts, denied ones too: a job can make (and have
        // logged) at most `max_requests` of them, then one line more.
        self.made = self.made.saturating_add(1);
        if self.made > grant.max_requests {
            if self.made == grant.max_requests + 1 {
                tracing::warn!(topic = %self.topic, job_id = %self.job_id, max = grant.max_requests, "outbound request denied: the job's max_http_requests is spent");
            }
            return fail(request, Error::HttpRequestDenied);
        }
        if !grant.allowed.iter().any(|entry| entry.matches(https, &host, port)) {
            tracing::warn!(topic = %self.topic, job_id = %self.job_id, %host, port, "outbound request denied: not in the topic's allowed_hosts");
            return fail(request, Error::HttpRequestDenied);
        }
        self.sent += 1;
        if !request.headers().contains_key(IDEMPOTENCY_KEY)
            && let Ok(key) = HeaderValue::from_str(&format!("husk-{}-{}", self.job_id, self.sent))
        {
            request.headers_mut().insert(HeaderName::from_static(IDEMPOTENCY_KEY), key);
        }
        let explicit = grant.allowed.iter().any(|entry| entry.matches(https, &host, port) && entry.names(&host));
        // A wait that would outlast the job is left to the job's deadline:
        // the instance is dropped with the request (`husk.timeout`), and
        // the timer, a little later, is only a backstop.
        let left = self.deadline_at.saturating_duration_since(Instant::now());
        let bound = |asked: Option<Duration>| {
            let bound = asked.map_or(grant.timeout, |a| a.min(grant.timeout));
            if bound < left { bound } else { left + DEADLINE_BACKSTOP }
        };
        let timeouts = Timeouts {
            connect: bound(options.and_then(|o| o.connect_timeout)),
            first_byte: bound(options.and_then(|o| o.first_byte_timeout)),
            between_bytes: bound(options.and_then(|o| o.between_bytes_timeout)),
        };
        let destination = Destination { https, host, port, explicit, resolver: grant.resolver.clone() };
        let budget = self.response_budget.clone();
        Box::new(async move { send(request, destination, timeouts, budget).await })
    }
}

/// Where a request goes, and whether its entry names the host itself.
struct Destination {
    https: bool,
    host: String,
    port: u16,
    explicit: bool,
    resolver: Option<Resolver>,
}

#[derive(Clone, Copy)]
struct Timeouts {
    connect: Duration,
    first_byte: Duration,
    between_bytes: Duration,
}

/// Resolves the destination, connects to an address it may reach, and sends
/// `request` over HTTP/1.1 (with TLS for `https`).
async fn send(request: http::Request<WasiBody>, to: Destination, timeouts: Timeouts, budget: Arc<AtomicU64>) -> Sent {
    let (mut sender, connection) = match connect(&to, timeouts).await {
        Ok(connected) => connected,
        Err(error) => return refuse(request, error).await,
    };
    // The guest may still be writing the body when the response is in and
    // the connection gone: what is left of it is drained, not refused.
    let mut request = request.map(|body| Drained(Some(body)).boxed_unsync());
    // The request line carries the path only (not a proxy request).
    let path = request.uri().path_and_query().map_or("/", |p| p.as_str()).to_owned();
    *request.uri_mut() = http::Uri::builder().path_and_query(path).build().map_err(|_| Error::HttpRequestUriInvalid)?;
    let mut connection = Some(connection);
    let mut response = std::pin::pin!(tokio::time::timeout(timeouts.first_byte, sender.send_request(request)));
    // Wait for the response head while driving the connection.
    let response = std::future::poll_fn(|cx| {
        let mut head = |cx: &mut Context<'_>| {
            response.as_mut().poll(cx).map(|r| r.map_err(|_| Error::ConnectionReadTimeout)?.map_err(Error::from))
        };
        if let Poll::Ready(result) = head(cx) {
            return Poll::Ready(result);
        }
        let Some(driving) = connection.as_mut() else { return Poll::Pending };
        let result = ready!(Pin::new(driving).poll(cx));
        connection = None;
        match result {
            // The connection ended: the response head is there, or never
            // will be.
            Ok(()) => head(cx),
            Err(error) => Poll::Ready(Err(Error::from(error))),
        }
    })
    .await?;
    let response = response
        .map(|incoming| CappedBody { incoming, idle: timeouts.between_bytes, timer: None, budget }.boxed_unsync());
    let driver: Box<dyn Future<Output = Result<(), Error>> + Send> = Box::new(async move {
        match connection {
            Some(connection) => connection.await.map_err(Error::from),
            None => Ok(()),
        }
    });
    Ok((response, driver))
}

/// Resolves the destination and connects to an address it may reach
/// (TLS for `https`), within the connect timeout.
async fn connect(
    to: &Destination,
    timeouts: Timeouts,
) -> Result<(hyper::client::conn::http1::SendRequest<WasiBody>, Connection), Error> {
    let address = resolve(to, timeouts.connect).await?;
    let tcp = match tokio::time::timeout(timeouts.connect, TcpStream::connect(address)).await {
        Ok(stream) => stream.map_err(Error::Connect)?,
        Err(_) => return Err(Error::ConnectionTimeout),
    };
    if to.https {
        let connector = tokio_rustls::TlsConnector::from(TLS.clone());
        let name =
            rustls::pki_types::ServerName::try_from(to.host.clone()).map_err(|_| Error::HttpRequestUriInvalid)?;
        let tls = tokio::time::timeout(timeouts.connect, connector.connect(name, tcp))
            .await
            .map_err(|_| Error::ConnectionTimeout)?
            .map_err(Error::Tls)?;
        handshake(Box::new(tls), timeouts.connect).await
    } else {
        handshake(Box::new(tcp), timeouts.connect).await
    }
}

/// The first address of the destination a request may reach: any, when its
/// allowlist entry names the host; else only one [`is_prohibited`] allows,
/// against the host's own addresses as they are now.
async fn resolve(to: &Destination, timeout: Duration) -> Result<SocketAddr, Error> {
    let addresses = match &to.resolver {
        Some(Resolver(resolve)) => resolve(&to.host, to.port),
        None => match tokio::time::timeout(timeout, tokio::net::lookup_host((to.host.as_str(), to.port))).await {
            Err(_) => return Err(Error::DnsTimeout),
            Ok(Err(_)) => return Err(Error::DnsError { rcode: None, info_code: None }),
            Ok(Ok(addresses)) => addresses.collect::<Vec<_>>(),
        },
    };
    let Some(&first) = addresses.first() else { return Err(Error::DestinationNotFound) };
    if to.explicit {
        return Ok(first);
    }
    let own = match own_addresses() {
        Ok(own) => own,
        Err(error) => {
            tracing::warn!(host = %to.host, %error, "outbound request denied: the host's own addresses could not be read");
            return Err(Error::DestinationIpProhibited);
        }
    };
    addresses.into_iter().find(|a| !is_prohibited(a.ip(), &own)).ok_or_else(|| {
        tracing::warn!(host = %to.host, address = %first.ip(), "outbound request denied: the host resolves to an address that is not globally reachable or is the host's own, and its allowlist entry does not name it");
        Error::DestinationIpProhibited
    })
}

/// The addresses of the host's own network interfaces, read now (they
/// change: an interface comes up, DHCP renews): what a name resolving to
/// one of them would reach is the host itself.
///
/// # Errors
///
/// The interfaces could not be listed.
pub fn own_addresses() -> std::io::Result<Vec<IpAddr>> {
    Ok(if_addrs::get_if_addrs()?.iter().map(if_addrs::Interface::ip).collect())
}

/// A stream hyper can run HTTP/1.1 over.
trait Stream: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static> Stream for T {}

type Connection = hyper::client::conn::http1::Connection<TokioIo<Box<dyn Stream>>, WasiBody>;

async fn handshake(
    stream: Box<dyn Stream>,
    timeout: Duration,
) -> Result<(hyper::client::conn::http1::SendRequest<WasiBody>, Connection), Error> {
    tokio::time::timeout(timeout, hyper::client::conn::http1::Builder::new().handshake(TokioIo::new(stream)))
        .await
        .map_err(|_| Error::ConnectionTimeout)?
        .map_err(Error::from)
}

/// A response body read within the job's budget of response bytes, each
/// frame within the between-bytes timeout.
struct CappedBody {
    incoming: hyper::body::Incoming,
    idle: Duration,
    timer: Option<Pin<Box<tokio::time::Sleep>>>,
    budget: Arc<AtomicU64>,
}

impl Body for CappedBody {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let this = &mut *self;
        match Pin::new(&mut this.incoming).poll_frame(cx) {
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Ready(Some(Err(error))) => Poll::Ready(Some(Err(Error::from(error)))),
            Poll::Ready(Some(Ok(frame))) => {
                this.timer = None;
                let size = frame.data_ref().map_or(0, |data| data.len() as u64);
                let within =
                    this.budget.fetch_update(Ordering::AcqRel, Ordering::Acquire, |left| left.checked_sub(size));
                if within.is_err() {
                    return Poll::Ready(Some(Err(Error::HttpResponseBodySize(None))));
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Pending => {
                let idle = this.idle;
                // A guest's non-blocking read polls outside any runtime:
                // the timer is made on wasmtime-wasi's when none is current.
                let timer = this.timer.get_or_insert_with(|| {
                    wasmtime_wasi::runtime::with_ambient_tokio_runtime(|| Box::pin(tokio::time::sleep(idle)))
                });
                ready!(timer.as_mut().poll(cx));
                Poll::Ready(Some(Err(Error::ConnectionReadTimeout)))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.incoming.is_end_stream()
    }
}
