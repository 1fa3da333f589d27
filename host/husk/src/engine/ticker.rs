//! The epoch ticker: one thread that advances the engine's epoch at a fixed
//! interval, which is what makes epoch deadlines fire.

use std::sync::Arc;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::Duration;

/// A running ticker thread; dropping it stops the thread.
pub(super) struct Ticker {
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Ticker {
    /// Starts advancing `epoch` every `tick`.
    pub(super) fn start(epoch: Arc<super::Epoch>, tick: Duration) -> Self {
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("husk-epoch".into())
            .spawn(move || {
                while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(tick) {
                    epoch.increment();
                }
            })
            .expect("spawning the epoch ticker thread");
        Self { stop: Some(stop), thread: Some(thread) }
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
