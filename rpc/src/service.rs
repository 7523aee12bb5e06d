//! A thread serving one [`Server`]: asleep (blocked on a condition
//! variable, no CPU) while no kernel that may call the host is in flight,
//! polling the buffer while at least one is.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Instant;

use crate::backoff;
use crate::server::{Outcome, Server};
use crate::Error;

/// Something the device asked for that the owner of the process must act
/// on, or a failure of the server.
#[derive(Debug)]
pub enum Event {
    /// The device called `exit(status)`.
    Exit(i32),
    /// The device called `abort()`.
    Abort,
    /// Serving failed (malformed request, failing heap or callback).
    Error(Error),
}

struct State {
    active: usize,
    shutdown: bool,
    /// A kernel ended: serve what it left pending once more.
    drain: bool,
}

struct Inner {
    state: Mutex<State>,
    wake: Condvar,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The serving thread. Dropping it stops the thread.
pub struct Service {
    inner: Arc<Inner>,
    thread: Option<JoinHandle<Server>>,
}

/// Marks one kernel in flight while alive (see [`Service::kernel_started`]).
pub struct KernelGuard {
    inner: Arc<Inner>,
}

impl Drop for KernelGuard {
    fn drop(&mut self) {
        let mut s = self.inner.lock();
        s.active = s.active.saturating_sub(1);
        s.drain = true;
        drop(s);
        self.inner.wake.notify_all();
    }
}

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service").finish_non_exhaustive()
    }
}

impl Service {
    /// Starts serving `server` on a new thread. `on_event` runs on that
    /// thread for EXIT, ABORT and errors (the loader ends the process there,
    /// as LLVM's server does); serving continues after it returns.
    ///
    /// Errors: the thread could not be spawned.
    pub fn start<F>(mut server: Server, mut on_event: F) -> std::io::Result<Service>
    where
        F: FnMut(Event) + Send + 'static,
    {
        let inner = Arc::new(Inner {
            state: Mutex::new(State {
                active: 0,
                shutdown: false,
                drain: false,
            }),
            wake: Condvar::new(),
        });
        let shared = inner.clone();
        let thread = std::thread::Builder::new()
            .name("rpc-server".into())
            .spawn(move || {
                backoff::tighten_timer_slack();
                let mut idle_since: Option<Instant> = None;
                let mut drain_again = false;
                loop {
                    let (active, shutdown) = {
                        let mut s = shared.lock();
                        while s.active == 0 && !s.shutdown && !s.drain && !drain_again {
                            s = shared.wake.wait(s).unwrap_or_else(PoisonError::into_inner);
                        }
                        s.drain = false;
                        (s.active, s.shutdown)
                    };
                    let served = match server.handle_pending() {
                        Ok(Outcome::Served(n)) => n,
                        Ok(Outcome::Exit(c)) => {
                            on_event(Event::Exit(c));
                            1
                        }
                        Ok(Outcome::Abort) => {
                            on_event(Event::Abort);
                            1
                        }
                        Err(e) => {
                            on_event(Event::Error(e));
                            1
                        }
                    };
                    if shutdown && served == 0 {
                        return server;
                    }
                    // With no kernel in flight, pass again only while
                    // something was served, then sleep at the top.
                    drain_again = active == 0 && served > 0;
                    if active == 0 {
                        continue;
                    }
                    // A kernel is in flight: poll on the schedule of
                    // `backoff` from the last request on (spin, then nap,
                    // then sleep between polls), so a kernel that
                    // computes without calling the host costs almost no
                    // CPU.
                    if served == 0 {
                        let idle = *idle_since.get_or_insert_with(Instant::now);
                        backoff::pause(idle.elapsed());
                    } else {
                        idle_since = None;
                    }
                }
            })?;
        Ok(Service {
            inner,
            thread: Some(thread),
        })
    }

    /// Marks a kernel that may call the host as in flight until the guard
    /// drops; the thread polls while any guard is alive, and serves what is
    /// pending once more after the last one drops.
    pub fn kernel_started(&self) -> KernelGuard {
        self.inner.lock().active += 1;
        self.inner.wake.notify_all();
        KernelGuard {
            inner: self.inner.clone(),
        }
    }

    /// Stops the thread after it has served what is pending, and returns
    /// the server (`None` if the thread panicked).
    pub fn stop(mut self) -> Option<Server> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> Option<Server> {
        self.inner.lock().shutdown = true;
        self.inner.wake.notify_all();
        self.thread.take().and_then(|t| t.join().ok())
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        self.shutdown();
    }
}
