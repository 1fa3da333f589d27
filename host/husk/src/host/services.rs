//! The host's background services — the status snapshot
//! ([`super::snapshot`]), the cleaner ([`super::pruner`]) and the version
//! follower ([`super::stored::Follower`]) — each a [`Service`]: one pass at
//! a time on a thread of its own, started by [`Services::start`] in one
//! place and stopped with the host. A test runs a service's passes itself,
//! without its thread. (The PostgreSQL store's vacuum is the store's own
//! service: `husk-postgres`'s `vacuum`.)

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::Mutex;

/// A background service of the host.
pub(super) trait Service: Send + 'static {
    /// Its thread's name.
    const NAME: &'static str;

    /// One pass; returns how long to wait before the next (a stop wakes
    /// the wait early).
    fn pass(&mut self) -> Duration;
}

/// The running services' threads, and the flag that stops them.
#[derive(Default)]
pub(super) struct Services {
    stopping: Arc<AtomicBool>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Services {
    /// Starts `service` on a thread of its own, passing until [`Services::stop`].
    ///
    /// # Errors
    ///
    /// When the thread cannot be spawned.
    pub(super) fn start<S: Service>(&self, mut service: S) -> io::Result<()> {
        let stopping = self.stopping.clone();
        let thread = std::thread::Builder::new().name(S::NAME.into()).spawn(move || {
            while !stopping.load(Ordering::Acquire) {
                let wait = service.pass();
                // Unparked by `stop`.
                std::thread::park_timeout(wait);
            }
        })?;
        self.threads.lock().push(thread);
        Ok(())
    }

    /// Whether any service was started.
    pub(super) fn started(&self) -> bool {
        !self.threads.lock().is_empty()
    }

    /// Stops every service and joins its thread.
    pub(super) fn stop(&self) {
        self.stopping.store(true, Ordering::Release);
        for thread in std::mem::take(&mut *self.threads.lock()) {
            thread.thread().unpark();
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use super::{Service, Services};

    /// Says each pass, then waits an hour (unless stopped).
    struct Counting(mpsc::Sender<()>);

    impl Service for Counting {
        const NAME: &'static str = "counting";

        fn pass(&mut self) -> Duration {
            let _ = self.0.send(());
            Duration::from_secs(3600)
        }
    }

    #[test]
    fn a_service_passes_at_once_and_a_stop_ends_its_wait() {
        let services = Services::default();
        let (passed, passes) = mpsc::channel();
        services.start(Counting(passed)).unwrap();
        assert!(services.started());
        passes.recv().unwrap();
        // Joins the thread in the middle of its hour's wait: `stop` wakes it.
        services.stop();
        assert!(!services.started());
        assert!(passes.try_recv().is_err(), "no pass after the stop");
    }
}
