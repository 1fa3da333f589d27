//! The runtime a guest's waits run on (see `waits`): one current-thread
//! tokio runtime per thread, made on the thread's first wait and kept for
//! the next ones. Its time driver serves the guest's WASI clocks; the
//! engine's epoch ticks wake a wait's watchdog from the ticker thread.

use std::future::Future;
use std::task::{Context, Poll, Waker};

/// The target of the trace event a wait logs when it blocks: from then
/// until the wait ends, no WebAssembly runs on its thread, so nothing but
/// the wait's watchdog can stop the job (the epoch deadline inside
/// WebAssembly cannot). The blocking tests wait for it before ticking the
/// epoch, so that they test the watchdog alone.
const BLOCKS_TARGET: &str = "husk::waits";

thread_local! {
    static RUNTIME: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("building a current-thread tokio runtime");
}

/// Runs `future` to its end on this thread's runtime.
///
/// Most waits are over at once (a write to stdout, a poll of a ready
/// pollable): the first poll is made in the runtime's context (a sleep needs
/// its timers) but without entering its scheduler. Only a future still
/// pending after it is driven by `block_on`, which polls it again with a
/// real waker; it is then that a trace event with target `husk::waits`
/// says the wait blocks.
///
/// # Panics
///
/// When called from inside an async runtime (tokio refuses to block a
/// thread that drives one).
pub(super) fn block_on<F: Future>(future: F) -> F::Output {
    RUNTIME.with(|runtime| {
        let mut future = std::pin::pin!(future);
        {
            let _context = runtime.enter();
            let mut cx = Context::from_waker(Waker::noop());
            if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
                return output;
            }
        }
        tracing::trace!(target: BLOCKS_TARGET, "a guest's host call blocks");
        runtime.block_on(future)
    })
}
