//! Dashboard sessions: a random id in an `HttpOnly`, `SameSite=Strict`
//! cookie names a server-side session (who signed in, its CSRF token). The
//! token a user signed in with is never kept, and never in a URL.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use axum::http::HeaderMap;
use axum::http::header::COOKIE;
use parking_lot::Mutex;

use crate::tokens::Principal;

/// The session cookie's name.
pub(super) const COOKIE_NAME: &str = "husk_session";

/// How long a session lasts after sign-in.
const LIFETIME: Duration = Duration::from_secs(12 * 3600);

/// Most sessions kept at once; past it the oldest goes.
const MAX_SESSIONS: usize = 10_000;

/// One signed-in user.
#[derive(Debug, Clone)]
pub(crate) struct Session {
    /// Who signed in.
    pub(crate) principal: Principal,
    /// The token every state-changing form of this session carries.
    pub(crate) csrf: String,
    /// Open incidents of the topics it sees, as last counted (set per
    /// request, for the navigation).
    pub(crate) open_incidents: u64,
    expires: Instant,
}

/// The sessions of this process (a restart signs everyone out).
#[derive(Debug, Default)]
pub(crate) struct Sessions {
    by_id: Mutex<HashMap<String, Session>>,
}

impl Sessions {
    /// Opens a session for `principal`: its id (the cookie's value).
    pub(crate) fn open(&self, principal: Principal) -> std::io::Result<String> {
        let (id, csrf) = (random_token()?, random_token()?);
        let now = Instant::now();
        let mut sessions = self.by_id.lock();
        sessions.retain(|_, s| s.expires > now);
        if sessions.len() >= MAX_SESSIONS
            && let Some(oldest) = sessions.iter().min_by_key(|(_, s)| s.expires).map(|(id, _)| id.clone())
        {
            sessions.remove(&oldest);
        }
        sessions.insert(id.clone(), Session { principal, csrf, open_incidents: 0, expires: now + LIFETIME });
        Ok(id)
    }

    /// The live session the request's cookie names.
    pub(crate) fn of(&self, headers: &HeaderMap) -> Option<Session> {
        let id = session_id(headers)?;
        let sessions = self.by_id.lock();
        sessions.get(&id).filter(|s| s.expires > Instant::now()).cloned()
    }

    /// Ends the session the request's cookie names.
    pub(crate) fn close(&self, headers: &HeaderMap) {
        if let Some(id) = session_id(headers) {
            self.by_id.lock().remove(&id);
        }
    }
}

/// The session id in the request's cookies.
fn session_id(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(cookie::Cookie::split_parse)
        .filter_map(Result::ok)
        .find(|c| c.name() == COOKIE_NAME)
        .map(|c| c.value().to_owned())
}

/// The `Set-Cookie` value of a session (`id`), or of its removal (`None`).
pub(super) fn set_cookie(id: Option<&str>) -> String {
    let mut cookie = cookie::Cookie::build((COOKIE_NAME, id.unwrap_or_default().to_owned()))
        .path("/ui")
        .http_only(true)
        .same_site(cookie::SameSite::Strict);
    if id.is_none() {
        cookie = cookie.max_age(cookie::time::Duration::ZERO);
    }
    cookie.build().to_string()
}

/// 256 random bits from the OS, in hex.
fn random_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Whether `given` is the session's CSRF token (compared in constant time).
pub(crate) fn csrf_matches(session: &Session, given: &str) -> bool {
    let (a, b) = (session.csrf.as_bytes(), given.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |diff, (x, y)| diff | (x ^ y)) == 0
}
