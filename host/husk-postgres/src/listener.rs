//! The connection that `LISTEN`s for other processes' wakes and cancels.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use postgres::NoTls;
use postgres::fallible_iterator::FallibleIterator;

use husk::store::{JobId, StoreEvents};

use crate::Channels;
use crate::pool::{describe, parse_wake};

/// The connection that `LISTEN`s for other processes' wakes and cancels.
pub(crate) struct Listener {
    pub(crate) stop: Arc<AtomicBool>,
    pub(crate) thread: Option<JoinHandle<()>>,
}

impl Listener {
    pub(crate) fn start(
        config: postgres::Config,
        name: String,
        channels: Channels,
        events: Weak<dyn StoreEvents>,
    ) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("husk-pg-listen".into())
            .spawn(move || {
                let mut failures = 0u32;
                while !flag.load(Ordering::Acquire) && events.strong_count() > 0 {
                    match listen(&config, &channels, &events, &flag) {
                        Ok(()) => return,
                        Err(error) => {
                            failures = (failures + 1).min(5);
                            tracing::warn!(store = %name, %error, "listener lost; reconnecting");
                            // Waiting fetchers still wake at their poll
                            // timeout meanwhile; nothing is lost.
                            std::thread::sleep(Duration::from_millis(100 << failures));
                        }
                    }
                }
            })
            .expect("spawning the PostgreSQL listener thread");
        Self { stop, thread: Some(thread) }
    }
}

/// Listens until `stop` is set or the dispatcher is gone (`Ok`), or the
/// connection fails (`Err`).
pub(crate) fn listen(
    config: &postgres::Config,
    channels: &Channels,
    events: &Weak<dyn StoreEvents>,
    stop: &AtomicBool,
) -> Result<(), String> {
    let mut client = config.connect(NoTls).map_err(|e| describe(&e))?;
    client
        .batch_execute(&format!("LISTEN {}; LISTEN {};", channels.jobs, channels.cancel))
        .map_err(|e| describe(&e))?;
    // Anything enqueued while (re)connecting: look once.
    if let Some(events) = events.upgrade() {
        events.jobs_available();
    }
    loop {
        if stop.load(Ordering::Acquire) {
            return Ok(());
        }
        let note = client.notifications().timeout_iter(Duration::from_millis(200)).next().map_err(|e| describe(&e))?;
        let Some(events) = events.upgrade() else { return Ok(()) };
        let Some(note) = note else {
            // No notification: a timeout, or the server went away.
            if client.is_closed() {
                return Err("connection closed".into());
            }
            continue;
        };
        if note.channel() == channels.cancel {
            if let Ok(id) = note.payload().parse::<u64>() {
                events.cancel_requested(JobId(id));
            }
        } else {
            match parse_wake(note.payload()) {
                (sender, _) if sender == channels.sender => {}
                (_, Some((topic, jobs))) => events.topic_jobs_available(topic, jobs),
                (_, None) => events.jobs_available(),
            }
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
