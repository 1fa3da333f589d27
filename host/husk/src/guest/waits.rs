//! The host calls a guest can wait in, bounded by its job's deadline and
//! cancel.
//!
//! A guest waits only in `wasi:io/poll` (`poll`, `pollable.block`: a sleep
//! is a clock's pollable) and in the `blocking-*` operations and drops of
//! `wasi:io/streams`. husk links its own versions of those two interfaces:
//! each wait runs on the worker thread's runtime against a watchdog that
//! wakes at every epoch tick, and at the first tick at which the job's
//! deadline has passed or its cancel is set, the wait is dropped and the
//! call traps with the same error the epoch callback raises inside
//! WebAssembly — so the job ends `husk.timeout` (or cancelled) whether it
//! was computing or waiting. The other WASI interfaces cannot reach anything
//! to wait on: no directory is preopened and no socket can be made (see
//! `state`).
//!
//! Everything else is wasmtime-wasi's own implementation (the async one,
//! driven here), as its sync bindings drive it, without the bound.

use std::future::Future;

use wasmtime::component::{Resource, ResourceTable};
use wasmtime_wasi::p2::bindings::io::poll as async_poll;
use wasmtime_wasi::p2::bindings::io::streams::{HostInputStream as AsyncInput, HostOutputStream as AsyncOutput};
use wasmtime_wasi::p2::bindings::sync::io::poll::{self, Pollable};
use wasmtime_wasi::p2::bindings::sync::io::streams::{self, InputStream, OutputStream};
use wasmtime_wasi::p2::{StreamError, StreamResult};

use super::stops::{CancelRequested, DeadlinePassed};
use super::{CancelToken, runtime};
use crate::engine::Engine;

/// When a run must stop: at the first epoch tick at which `ticks` have
/// passed since `started_at`, or at which its cancel token is set.
#[derive(Clone)]
pub(crate) struct Bound {
    pub(crate) engine: Engine,
    pub(crate) started_at: u64,
    pub(crate) ticks: u64,
    pub(crate) cancel: Option<CancelToken>,
}

impl Bound {
    /// What stops the run now, if anything: its cancel, or its deadline.
    /// The same check at every tick, whether the guest computes (the epoch
    /// callback) or waits (the watchdog of [`Bound::wait`]).
    pub(crate) fn check(&self) -> Option<wasmtime::Error> {
        if self.cancel.as_ref().is_some_and(CancelToken::is_cancelled) {
            return Some(wasmtime::Error::new(CancelRequested));
        }
        if self.engine.epoch().saturating_sub(self.started_at) >= self.ticks {
            return Some(wasmtime::Error::new(DeadlinePassed { ticks: self.ticks }));
        }
        None
    }

    /// Runs `wait` on this thread's runtime until it ends, or until the
    /// first epoch tick at which the run must stop; then `wait` is dropped
    /// and the error returned makes the host call trap.
    pub(crate) fn wait<T>(&self, wait: impl Future<Output = T>) -> wasmtime::Result<T> {
        let watchdog = async {
            let mut ticks = self.engine.epoch_ticks();
            loop {
                if let Some(stop) = self.check() {
                    return stop;
                }
                if ticks.changed().await.is_err() {
                    // The engine's ticker is gone with the engine, which
                    // this bound holds: cannot happen.
                    std::future::pending::<()>().await;
                }
            }
        };
        runtime::block_on(async {
            // Biased: a wait that is already over never builds the watchdog.
            tokio::select! {
                biased;
                done = wait => Ok(done),
                stop = watchdog => Err(stop),
            }
        })
    }

    /// [`Bound::wait`] for a stream operation: a stop is the stream's trap.
    fn wait_stream<T>(&self, wait: impl Future<Output = StreamResult<T>>) -> StreamResult<T> {
        self.wait(wait).map_err(StreamError::Trap)?
    }
}

/// What the bounded `wasi:io` host functions see of a job's store: its
/// resource table and its bound.
pub(crate) struct BoundedIo<'a> {
    pub(crate) table: &'a mut ResourceTable,
    pub(crate) bound: &'a Bound,
}

impl poll::Host for BoundedIo<'_> {
    fn poll(&mut self, pollables: Vec<Resource<Pollable>>) -> wasmtime::Result<Vec<u32>> {
        self.bound.wait(async_poll::Host::poll(self.table, pollables))?
    }
}

impl poll::HostPollable for BoundedIo<'_> {
    fn ready(&mut self, pollable: Resource<Pollable>) -> wasmtime::Result<bool> {
        self.bound.wait(async_poll::HostPollable::ready(self.table, pollable))?
    }

    fn block(&mut self, pollable: Resource<Pollable>) -> wasmtime::Result<()> {
        self.bound.wait(async_poll::HostPollable::block(self.table, pollable))?
    }

    fn drop(&mut self, pollable: Resource<Pollable>) -> wasmtime::Result<()> {
        async_poll::HostPollable::drop(self.table, pollable)
    }
}

impl streams::Host for BoundedIo<'_> {
    fn convert_stream_error(&mut self, error: StreamError) -> wasmtime::Result<streams::StreamError> {
        streams::Host::convert_stream_error(self.table, error)
    }
}

impl streams::HostOutputStream for BoundedIo<'_> {
    fn drop(&mut self, stream: Resource<OutputStream>) -> wasmtime::Result<()> {
        self.bound.wait(AsyncOutput::drop(self.table, stream))?
    }

    fn check_write(&mut self, stream: Resource<OutputStream>) -> StreamResult<u64> {
        AsyncOutput::check_write(self.table, stream)
    }

    fn write(&mut self, stream: Resource<OutputStream>, bytes: Vec<u8>) -> StreamResult<()> {
        AsyncOutput::write(self.table, stream, bytes)
    }

    fn blocking_write_and_flush(&mut self, stream: Resource<OutputStream>, bytes: Vec<u8>) -> StreamResult<()> {
        self.bound.wait_stream(AsyncOutput::blocking_write_and_flush(self.table, stream, bytes))
    }

    fn blocking_write_zeroes_and_flush(&mut self, stream: Resource<OutputStream>, len: u64) -> StreamResult<()> {
        self.bound.wait_stream(AsyncOutput::blocking_write_zeroes_and_flush(self.table, stream, len))
    }

    fn subscribe(&mut self, stream: Resource<OutputStream>) -> wasmtime::Result<Resource<Pollable>> {
        AsyncOutput::subscribe(self.table, stream)
    }

    fn write_zeroes(&mut self, stream: Resource<OutputStream>, len: u64) -> StreamResult<()> {
        AsyncOutput::write_zeroes(self.table, stream, len)
    }

    fn flush(&mut self, stream: Resource<OutputStream>) -> StreamResult<()> {
        AsyncOutput::flush(self.table, stream)
    }

    fn blocking_flush(&mut self, stream: Resource<OutputStream>) -> StreamResult<()> {
        self.bound.wait_stream(AsyncOutput::blocking_flush(self.table, stream))
    }

    fn splice(&mut self, dst: Resource<OutputStream>, src: Resource<InputStream>, len: u64) -> StreamResult<u64> {
        AsyncOutput::splice(self.table, dst, src, len)
    }

    fn blocking_splice(
        &mut self,
        dst: Resource<OutputStream>,
        src: Resource<InputStream>,
        len: u64,
    ) -> StreamResult<u64> {
        self.bound.wait_stream(AsyncOutput::blocking_splice(self.table, dst, src, len))
    }
}

impl streams::HostInputStream for BoundedIo<'_> {
    fn drop(&mut self, stream: Resource<InputStream>) -> wasmtime::Result<()> {
        self.bound.wait(AsyncInput::drop(self.table, stream))?
    }

    fn read(&mut self, stream: Resource<InputStream>, len: u64) -> StreamResult<Vec<u8>> {
        AsyncInput::read(self.table, stream, len)
    }

    fn blocking_read(&mut self, stream: Resource<InputStream>, len: u64) -> StreamResult<Vec<u8>> {
        self.bound.wait_stream(AsyncInput::blocking_read(self.table, stream, len))
    }

    fn skip(&mut self, stream: Resource<InputStream>, len: u64) -> StreamResult<u64> {
        AsyncInput::skip(self.table, stream, len)
    }

    fn blocking_skip(&mut self, stream: Resource<InputStream>, len: u64) -> StreamResult<u64> {
        self.bound.wait_stream(AsyncInput::blocking_skip(self.table, stream, len))
    }

    fn subscribe(&mut self, stream: Resource<InputStream>) -> wasmtime::Result<Resource<Pollable>> {
        AsyncInput::subscribe(self.table, stream)
    }
}

#[cfg(test)]
mod tests {
    use super::Bound;
    use crate::engine::{Engine, EngineConfig};
    use crate::guest::{CancelRequested, CancelToken, DeadlinePassed};

    #[test]
    fn a_bound_stops_a_run_at_its_deadline_tick_not_before_and_at_its_cancel() {
        let engine =
            Engine::new(EngineConfig { epoch_tick: None, max_instances: 1, ..EngineConfig::default() }).unwrap();
        engine.increment_epoch();
        let bound = Bound { engine: engine.clone(), started_at: engine.epoch(), ticks: 3, cancel: None };
        for _ in 0..2 {
            assert!(bound.check().is_none());
            engine.increment_epoch();
        }
        assert!(bound.check().is_none(), "two ticks of three: still running");
        engine.increment_epoch();
        assert!(bound.check().is_some_and(|stop| stop.is::<DeadlinePassed>()), "stopped at the third tick");

        let cancel = CancelToken::new();
        let bound = Bound { cancel: Some(cancel.clone()), started_at: engine.epoch(), ..bound };
        assert!(bound.check().is_none());
        cancel.cancel();
        assert!(bound.check().is_some_and(|stop| stop.is::<CancelRequested>()), "stopped by its cancel");
    }
}
