//! How the server waits for the device, in one place for its two poll
//! loops (the service thread between requests, [`crate::Port`] inside a
//! transaction): spin with the CPU's pause hint for [`SPIN_FOR`], the time a
//! device takes between the steps of a busy phase; then sleep [`NAP`]
//! between polls up to [`NAP_FOR`]; then sleep a sixteenth of the time
//! waited so far between polls, from [`SLEEP_MIN`] up to [`SLEEP_MAX`], so
//! a device that computes for long (a kernel that does not call the host,
//! a `strlen` of a long string in the middle of a printf) costs the host
//! under 1% of a core, and a wait is lengthened by at most a sixteenth.
//!
//! Why sleep and never `sched_yield`: the virtual device runs its waves on
//! as many host threads as there are cores, and they spin while they wait
//! for the server, so the server always competes with them for a core. A
//! thread that yields to them gets its core back only after a scheduler
//! slice (milliseconds, per packet); a thread that sleeps wakes with the
//! scheduler's credit for the time it slept and takes a core back at once.
//! Measured with `cargo xtask loader-bench`'s printf program (64 × 256
//! threads, 4 lines each, medians of alternating runs, virtual device of
//! f8bec19) on a quiet 16-core machine: on 2 of its cores, 49k lines/s
//! with the yields of before against 251k with this schedule (LLVM 19's
//! server, which spins, 29k); on all 16, 225k against 316k (LLVM's 340k).
//! [`Service`](crate::Service) sets its thread's timer slack to
//! [`TIMER_SLACK_NS`] so that a nap is as short as asked (the default slack
//! of 50 µs would make each one several times as long).

use std::time::Duration;

/// How long a poll loop spins before it starts napping.
pub(crate) const SPIN_FOR: Duration = Duration::from_micros(50);

/// The sleep between polls up to [`NAP_FOR`].
pub(crate) const NAP: Duration = Duration::from_micros(10);

/// How long a poll loop naps between polls before its sleeps lengthen.
pub(crate) const NAP_FOR: Duration = Duration::from_millis(2);

/// The shortest sleep between polls after [`NAP_FOR`].
pub(crate) const SLEEP_MIN: Duration = Duration::from_micros(100);

/// The longest sleep between polls (reached after 128 ms of waiting): the
/// most latency a long wait adds to the device's next step, and 125
/// wake-ups a second. A wake-up and its scan of the ports cost 20-40 µs of
/// CPU on a loaded 2-core virtual machine (mostly the context switch):
/// 1,000 a second (1 ms) came to 2% of a core, 250 (4 ms) to 0.55-1.0%.
pub(crate) const SLEEP_MAX: Duration = Duration::from_millis(8);

/// Timer slack of the service thread, in nanoseconds (`PR_SET_TIMERSLACK`).
pub(crate) const TIMER_SLACK_NS: u64 = 1_000;

/// Polls a spinning loop makes between two looks at the clock.
pub(crate) const SPINS_PER_CHECK: u32 = 64;

/// One pause of a poll loop that has waited `waited` so far: a burst of
/// [`SPINS_PER_CHECK`] pause hints, a nap, or a sleep of `waited / 16`
/// within [`SLEEP_MIN`, `SLEEP_MAX`].
pub(crate) fn pause(waited: Duration) {
    if waited < SPIN_FOR {
        for _ in 0..SPINS_PER_CHECK {
            std::hint::spin_loop();
        }
    } else if waited < NAP_FOR {
        std::thread::sleep(NAP);
    } else {
        std::thread::sleep((waited / 16).clamp(SLEEP_MIN, SLEEP_MAX));
    }
}

/// Makes the calling thread's sleeps as short as asked: sets its timer
/// slack to [`TIMER_SLACK_NS`] (Linux `prctl(PR_SET_TIMERSLACK)`; a
/// failure leaves the default, which only lengthens the naps).
pub(crate) fn tighten_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes one integer argument and changes
    // only the calling thread's timer slack.
    let _ = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, TIMER_SLACK_NS as libc::c_ulong) };
}
