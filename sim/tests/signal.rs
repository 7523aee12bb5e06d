//! Concurrency tests of the virtual device's signals, multi-signal waits and
//! async-handler thread, through the public API of `hsa_runtime64::signal`
//! (`hsa_signal_*` in `hsa/hsa.h`, `hsa_amd_signal_*` in `hsa/hsa_ext_amd.h`).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Barrier, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use hsa_runtime64::signal::{
    wait_any, AsyncHandlerThread, Condition, MemoryOrder, Notifier, Signal,
    ASYNC_HANDLER_THREAD_NAME,
};

const LONG: Duration = Duration::from_secs(20);

/// Waits (with a generous limit, so a bug fails instead of hanging) until
/// `s` satisfies `cond value`; returns the value seen.
fn wait_for(s: &Signal, cond: Condition, value: i64) -> i64 {
    let v = s.wait(cond, value, Some(LONG), true);
    assert!(
        cond.holds(v, value),
        "timed out waiting for {cond:?} {value}, last {v}"
    );
    v
}

#[test]
fn one_store_wakes_many_waiters_on_several_threads() {
    let s = Signal::new(1);
    let start = Arc::new(Barrier::new(9));
    let waiters: Vec<_> = (0..8)
        .map(|i| {
            let s = Arc::clone(&s);
            let start = Arc::clone(&start);
            thread::spawn(move || {
                start.wait();
                // Alternate BLOCKED and ACTIVE waits.
                s.wait(Condition::Eq, 0, Some(LONG), i % 2 == 0)
            })
        })
        .collect();
    start.wait();
    thread::sleep(Duration::from_millis(30)); // let them all go to sleep
    assert!(
        waiters.iter().all(|w| !w.is_finished()),
        "a waiter returned before the store"
    );
    s.store(0, MemoryOrder::Release);
    for w in waiters {
        assert_eq!(w.join().unwrap(), 0);
    }
}

#[test]
fn waiters_on_different_conditions_return_the_right_values() {
    let s = Signal::new(5);
    let spawn = |cond: Condition, cmp: i64| {
        let s = Arc::clone(&s);
        thread::spawn(move || s.wait(cond, cmp, Some(LONG), true))
    };
    let eq7 = spawn(Condition::Eq, 7);
    let ne5 = spawn(Condition::Ne, 5);
    let lt3 = spawn(Condition::Lt, 3);
    let gte10 = spawn(Condition::Gte, 10);
    thread::sleep(Duration::from_millis(20));
    assert!(!eq7.is_finished() && !ne5.is_finished() && !lt3.is_finished() && !gte10.is_finished());

    s.store(7, MemoryOrder::Release); // 7 == 7, 7 != 5; not < 3, not >= 10
    assert_eq!(eq7.join().unwrap(), 7);
    assert_eq!(ne5.join().unwrap(), 7);
    thread::sleep(Duration::from_millis(20));
    assert!(
        !lt3.is_finished() && !gte10.is_finished(),
        "woken waiter returned unsatisfied"
    );

    s.subtract(5, MemoryOrder::Release); // 2 < 3
    assert_eq!(lt3.join().unwrap(), 2);
    thread::sleep(Duration::from_millis(10));
    assert!(!gte10.is_finished());

    s.add(8, MemoryOrder::AcqRel); // 10 >= 10
    assert_eq!(gte10.join().unwrap(), 10);
}

#[test]
fn every_value_operation_wakes_a_blocked_waiter() {
    type Op = fn(&Signal);
    // (initial value, operation, expected value after it: host arithmetic)
    let cases: [(i64, Op, i64); 8] = [
        (1, |s| s.store(9, MemoryOrder::Relaxed), 9),
        (1, |s| s.silent_store(9, MemoryOrder::Release), 9),
        (
            1,
            |s| {
                s.exchange(9, MemoryOrder::AcqRel);
            },
            9,
        ),
        (
            1,
            |s| {
                s.cas(1, 9, MemoryOrder::AcqRel);
            },
            9,
        ),
        (1, |s| s.add(8, MemoryOrder::Release), 9),
        (13, |s| s.and(0b1011, MemoryOrder::Release), 9),
        (8, |s| s.or(1, MemoryOrder::Release), 9),
        (12, |s| s.xor(5, MemoryOrder::Release), 9),
    ];
    for (initial, op, expected) in cases {
        let s = Signal::new(initial);
        let s2 = Arc::clone(&s);
        let w = thread::spawn(move || s2.wait(Condition::Ne, initial, Some(LONG), true));
        thread::sleep(Duration::from_millis(5));
        op(&s);
        assert_eq!(w.join().unwrap(), expected);
    }
}

#[test]
fn timeout_returns_the_current_value_after_the_timeout() {
    let s = Signal::new(3);
    for blocked in [true, false] {
        let timeout = Duration::from_millis(40);
        let t0 = Instant::now();
        let v = s.wait(Condition::Eq, 0, Some(timeout), blocked);
        let took = t0.elapsed();
        assert_eq!(v, 3);
        assert!(took >= timeout, "returned after {took:?}");
        println!("wait with a {timeout:?} timeout (blocked={blocked}) returned after {took:?}");
    }
    // A zero timeout is a single check.
    assert_eq!(s.wait(Condition::Eq, 0, Some(Duration::ZERO), true), 3);
    // A condition that already holds returns at once.
    assert_eq!(s.wait(Condition::Gte, 3, Some(Duration::ZERO), true), 3);
}

#[test]
fn destroy_wakes_a_waiter_and_later_waits_return_zero() {
    let s = Signal::new(5);
    let s2 = Arc::clone(&s);
    let w = thread::spawn(move || s2.wait(Condition::Eq, 1, None, true));
    thread::sleep(Duration::from_millis(20));
    assert!(!w.is_finished());
    s.mark_destroyed();
    assert!(s.is_destroyed());
    assert_eq!(w.join().unwrap(), 0);
    // The value is 5, yet waits on a destroyed signal report 0.
    assert_eq!(s.wait(Condition::Eq, 5, None, true), 0);
    assert_eq!(s.wait(Condition::Eq, 1, None, false), 0);
}

#[test]
fn wait_any_returns_the_lowest_satisfied_index() {
    let sigs: Vec<_> = [1, 0, 0, 4].into_iter().map(Signal::new).collect();
    let conds = [Condition::Eq; 4];
    // Pairs 1 and 2 both hold; the lowest index wins.
    assert_eq!(
        wait_any(&sigs, &conds, &[0, 0, 0, 0], None, true),
        Some((1, 0))
    );
    // Mixed conditions: only pair 3 (4 >= 4) holds.
    let mixed = [Condition::Lt, Condition::Ne, Condition::Gte, Condition::Gte];
    assert_eq!(
        wait_any(&sigs, &mixed, &[1, 0, 1, 4], None, true),
        Some((3, 4))
    );
    // Nothing holds: timeout.
    let t0 = Instant::now();
    let timeout = Duration::from_millis(30);
    assert_eq!(
        wait_any(&sigs, &conds, &[7, 7, 7, 7], Some(timeout), true),
        None
    );
    assert!(t0.elapsed() >= timeout);
    // Empty set.
    assert_eq!(wait_any(&[], &[], &[], None, true), None);
}

#[test]
fn wait_any_sleeps_until_one_signal_changes() {
    for blocked in [true, false] {
        let sigs: Vec<_> = (0..4).map(|_| Signal::new(1)).collect();
        let sigs2 = sigs.clone();
        let w = thread::spawn(move || {
            wait_any(&sigs2, &[Condition::Eq; 4], &[0; 4], Some(LONG), blocked)
        });
        thread::sleep(Duration::from_millis(20));
        assert!(!w.is_finished());
        sigs[2].subtract(1, MemoryOrder::Release);
        assert_eq!(w.join().unwrap(), Some((2, 0)));
    }
}

#[test]
fn wait_any_returns_none_when_a_signal_is_destroyed() {
    let sigs: Vec<_> = (0..3).map(|_| Signal::new(1)).collect();
    let sigs2 = sigs.clone();
    let w = thread::spawn(move || wait_any(&sigs2, &[Condition::Eq; 3], &[0; 3], None, true));
    thread::sleep(Duration::from_millis(20));
    assert!(!w.is_finished());
    sigs[1].mark_destroyed();
    assert_eq!(w.join().unwrap(), None);
}

#[test]
fn chain_of_handlers_each_registering_the_next_from_inside() {
    const N: usize = 40;
    let handlers = Arc::new(AsyncHandlerThread::start().unwrap());
    let sigs: Arc<Vec<Arc<Signal>>> = Arc::new((0..=N).map(|_| Signal::new(1)).collect());
    let order = Arc::new(Mutex::new(Vec::new()));

    // Handler i: records i, registers handler i+1, completes signal i+1.
    // Odd i complete first and register afterwards, so handler i+1 is
    // registered while its condition already holds.
    fn make(
        i: usize,
        handlers: Arc<AsyncHandlerThread>,
        sigs: Arc<Vec<Arc<Signal>>>,
        order: Arc<Mutex<Vec<(usize, String)>>>,
    ) -> Box<dyn FnMut(i64) -> bool + Send> {
        Box::new(move |v| {
            assert_eq!(v, 0);
            let name = thread::current().name().unwrap_or("").to_owned();
            order.lock().unwrap().push((i, name));
            let next = sigs[i + 1].clone();
            if i + 1 < N {
                let h = make(i + 1, handlers.clone(), sigs.clone(), order.clone());
                if i % 2 == 1 {
                    next.subtract(1, MemoryOrder::Release);
                    handlers.register(next.clone(), Condition::Eq, 0, h);
                } else {
                    handlers.register(next.clone(), Condition::Eq, 0, h);
                    next.subtract(1, MemoryOrder::Release);
                }
            } else {
                next.subtract(1, MemoryOrder::Release); // signal N: done
            }
            false
        })
    }

    let first = make(0, handlers.clone(), sigs.clone(), order.clone());
    handlers.register(sigs[0].clone(), Condition::Eq, 0, first);
    thread::sleep(Duration::from_millis(10));
    assert!(
        order.lock().unwrap().is_empty(),
        "handler ran before its signal completed"
    );
    sigs[0].subtract(1, MemoryOrder::Release);

    assert_eq!(wait_for(&sigs[N], Condition::Eq, 0), 0);
    let order = order.lock().unwrap();
    let ids: Vec<usize> = order.iter().map(|(i, _)| *i).collect();
    assert_eq!(ids, (0..N).collect::<Vec<_>>());
    assert!(order
        .iter()
        .all(|(_, name)| name == ASYNC_HANDLER_THREAD_NAME));
    for s in sigs.iter() {
        assert_eq!(s.load(MemoryOrder::Acquire), 0);
    }
}

#[test]
fn handler_that_keeps_watching_fires_until_it_returns_false() {
    let handlers = AsyncHandlerThread::start().unwrap();
    let s = Signal::new(0);
    let done = Signal::new(1);
    let calls = Arc::new(AtomicUsize::new(0));
    let (calls2, done2) = (calls.clone(), done.clone());
    // The condition holds throughout: level-triggered, it fires again each time.
    handlers.register(
        s.clone(),
        Condition::Eq,
        0,
        Box::new(move |_| {
            let n = calls2.fetch_add(1, Ordering::SeqCst) + 1;
            if n == 5 {
                done2.store(0, MemoryOrder::Release);
                return false;
            }
            true
        }),
    );
    wait_for(&done, Condition::Eq, 0);
    thread::sleep(Duration::from_millis(20));
    assert_eq!(calls.load(Ordering::SeqCst), 5);
}

#[test]
fn handler_that_keeps_watching_rearms_when_the_value_comes_back() {
    let handlers = AsyncHandlerThread::start().unwrap();
    let s = Signal::new(0);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (s2, seen2) = (s.clone(), seen.clone());
    handlers.register(
        s.clone(),
        Condition::Gte,
        10,
        Box::new(move |v| {
            seen2.lock().unwrap().push(v);
            s2.store(0, MemoryOrder::Release); // condition no longer holds
            true
        }),
    );
    for v in [10, 11, 25] {
        s.store(3, MemoryOrder::Release); // below the threshold: no call
        s.store(v, MemoryOrder::Release);
        wait_for(&s, Condition::Eq, 0);
    }
    assert_eq!(*seen.lock().unwrap(), vec![10, 11, 25]);
}

#[test]
fn run_async_runs_on_the_handler_thread() {
    let handlers = AsyncHandlerThread::start().unwrap();
    let (tx, rx) = mpsc::channel();
    for i in 0..3 {
        let tx = tx.clone();
        handlers.run_async(Box::new(move || {
            tx.send((i, thread::current().name().map(str::to_owned)))
                .unwrap();
        }));
    }
    let mut got: Vec<_> = (0..3).map(|_| rx.recv_timeout(LONG).unwrap()).collect();
    got.sort();
    for (i, (j, name)) in got.into_iter().enumerate() {
        assert_eq!(i, j);
        assert_eq!(name.as_deref(), Some(ASYNC_HANDLER_THREAD_NAME));
    }
    assert_ne!(thread::current().name(), Some(ASYNC_HANDLER_THREAD_NAME));
}

#[test]
fn handlers_run_serially() {
    let handlers = AsyncHandlerThread::start().unwrap();
    let inside = Arc::new(AtomicBool::new(false));
    let overlaps = Arc::new(AtomicUsize::new(0));
    let remaining = Signal::new(16);
    let sigs: Vec<_> = (0..16).map(|_| Signal::new(1)).collect();
    for s in &sigs {
        let (inside, overlaps, remaining) = (inside.clone(), overlaps.clone(), remaining.clone());
        handlers.register(
            s.clone(),
            Condition::Eq,
            0,
            Box::new(move |_| {
                if inside.swap(true, Ordering::SeqCst) {
                    overlaps.fetch_add(1, Ordering::SeqCst);
                }
                thread::sleep(Duration::from_micros(200));
                inside.store(false, Ordering::SeqCst);
                remaining.subtract(1, MemoryOrder::Release);
                false
            }),
        );
    }
    // Complete them from two threads at once.
    let (a, b) = sigs.split_at(8);
    thread::scope(|scope| {
        scope.spawn(|| a.iter().for_each(|s| s.store(0, MemoryOrder::Release)));
        scope.spawn(|| b.iter().for_each(|s| s.store(0, MemoryOrder::Release)));
    });
    wait_for(&remaining, Condition::Eq, 0);
    assert_eq!(overlaps.load(Ordering::SeqCst), 0);
}

#[test]
fn panicking_handler_does_not_stop_the_thread() {
    let handlers = AsyncHandlerThread::start().unwrap();
    let bad = Signal::new(0);
    handlers.register(
        bad.clone(),
        Condition::Eq,
        0,
        Box::new(|_| panic!("test panic in a handler")),
    );
    handlers.run_async(Box::new(|| panic!("test panic in an async function")));
    let good = Signal::new(1);
    let done = Signal::new(1);
    let done2 = done.clone();
    handlers.register(
        good.clone(),
        Condition::Eq,
        0,
        Box::new(move |_| {
            done2.store(0, MemoryOrder::Release);
            false
        }),
    );
    thread::sleep(Duration::from_millis(10));
    good.store(0, MemoryOrder::Release);
    wait_for(&done, Condition::Eq, 0);
    // The panicking registration was dropped: the signal is ours alone again.
    let t0 = Instant::now();
    while Arc::strong_count(&bad) != 1 {
        assert!(t0.elapsed() < LONG);
        thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn registration_on_destroyed_signal_is_dropped_uncalled() {
    let handlers = AsyncHandlerThread::start().unwrap();
    let s = Signal::new(1);
    let called = Arc::new(AtomicBool::new(false));
    let c2 = called.clone();
    handlers.register(
        s.clone(),
        Condition::Eq,
        0,
        Box::new(move |_| {
            c2.store(true, Ordering::SeqCst);
            true
        }),
    );
    thread::sleep(Duration::from_millis(10));
    s.mark_destroyed();
    let t0 = Instant::now();
    while Arc::strong_count(&s) != 1 {
        assert!(
            t0.elapsed() < LONG,
            "handler thread still holds the destroyed signal"
        );
        thread::sleep(Duration::from_millis(1));
    }
    s.store(0, MemoryOrder::Release);
    thread::sleep(Duration::from_millis(10));
    assert!(!called.load(Ordering::SeqCst));
}

#[test]
fn shutdown_drops_pending_work_and_works_from_inside_a_handler() {
    // From outside: pending registrations are released.
    let handlers = AsyncHandlerThread::start().unwrap();
    let s = Signal::new(1);
    handlers.register(s.clone(), Condition::Eq, 0, Box::new(|_| true));
    handlers.shutdown();
    assert_eq!(Arc::strong_count(&s), 1);
    let ran = Arc::new(AtomicBool::new(false));
    let r2 = ran.clone();
    handlers.run_async(Box::new(move || r2.store(true, Ordering::SeqCst)));
    s.store(0, MemoryOrder::Release);
    thread::sleep(Duration::from_millis(10));
    assert!(!ran.load(Ordering::SeqCst));
    drop(handlers);

    // From inside a function running on the thread: no deadlock, and nothing
    // queued afterwards runs.
    let handlers = Arc::new(AsyncHandlerThread::start().unwrap());
    let stopped = Signal::new(1);
    let (h2, stopped2) = (handlers.clone(), stopped.clone());
    handlers.run_async(Box::new(move || {
        h2.shutdown();
        stopped2.store(0, MemoryOrder::Release);
    }));
    wait_for(&stopped, Condition::Eq, 0);
    let ran = Arc::new(AtomicBool::new(false));
    let r2 = ran.clone();
    handlers.run_async(Box::new(move || r2.store(true, Ordering::SeqCst)));
    thread::sleep(Duration::from_millis(20));
    assert!(!ran.load(Ordering::SeqCst));
}

#[test]
fn notifier_observes_a_signal_without_missing_changes() {
    let s = Signal::new(0);
    let n = Notifier::new();
    s.add_observer(&n);
    let s2 = s.clone();
    const ROUNDS: i64 = 2000;
    let producer = thread::spawn(move || {
        for _ in 0..ROUNDS {
            s2.add(1, MemoryOrder::Release);
        }
    });
    // Consumer using the epoch protocol only; a missed notify would hang
    // (bounded by the timeout, which then fails the assert below).
    let t0 = Instant::now();
    loop {
        let e = n.epoch();
        if s.load(MemoryOrder::Acquire) == ROUNDS {
            break;
        }
        assert!(t0.elapsed() < LONG, "missed a notification");
        n.wait(e, Some(LONG));
    }
    producer.join().unwrap();
    s.remove_observer(&n);
}

#[test]
fn stress_decrements_from_four_threads_end_exactly_at_zero() {
    const THREADS: i64 = 4;
    const PER: i64 = 10_000;
    let s = Signal::new(THREADS * PER);
    let s2 = s.clone();
    let zero = thread::spawn(move || s2.wait(Condition::Eq, 0, Some(LONG), true));
    let s3 = s.clone();
    let half = thread::spawn(move || s3.wait(Condition::Lt, THREADS * PER / 2, Some(LONG), false));
    let n = Notifier::new();
    s.add_observer(&n);
    let workers: Vec<_> = (0..THREADS)
        .map(|_| {
            let s = s.clone();
            thread::spawn(move || {
                for _ in 0..PER {
                    s.subtract(1, MemoryOrder::AcqRel);
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    assert_eq!(zero.join().unwrap(), 0);
    assert!(half.join().unwrap() < THREADS * PER / 2);
    assert_eq!(s.load(MemoryOrder::Acquire), 0);
    s.remove_observer(&n);
}

#[test]
fn print_blocked_wakeup_latency() {
    const ROUNDS: i64 = 200;
    let s = Signal::new(0);
    let (tx, rx) = mpsc::channel();
    let s2 = s.clone();
    let waiter = thread::spawn(move || {
        for i in 1..=ROUNDS {
            let v = s2.wait(Condition::Eq, i, Some(LONG), true);
            tx.send((v, Instant::now())).unwrap();
        }
    });
    let mut lat = Vec::new();
    for i in 1..=ROUNDS {
        thread::sleep(Duration::from_micros(300)); // past the spin phase: asleep
        let t0 = Instant::now();
        s.store(i, MemoryOrder::Release);
        let (v, t1) = rx.recv_timeout(LONG).unwrap();
        assert_eq!(v, i);
        lat.push(t1.saturating_duration_since(t0));
    }
    waiter.join().unwrap();
    lat.sort();
    println!(
        "blocked wait wake-up latency over {ROUNDS} rounds: median {:?}, p90 {:?}, max {:?}",
        lat[lat.len() / 2],
        lat[lat.len() * 9 / 10],
        lat[lat.len() - 1]
    );
}

#[test]
fn print_wait_any_wakeup_latency() {
    const ROUNDS: i64 = 100;
    let sigs: Vec<_> = (0..3).map(|_| Signal::new(0)).collect();
    let (tx, rx) = mpsc::channel();
    let sigs2 = sigs.clone();
    let waiter = thread::spawn(move || {
        for i in 1..=ROUNDS {
            let r = wait_any(&sigs2, &[Condition::Eq; 3], &[i; 3], Some(LONG), true);
            tx.send((r, Instant::now())).unwrap();
        }
    });
    let mut lat = Vec::new();
    for i in 1..=ROUNDS {
        thread::sleep(Duration::from_micros(300));
        let t0 = Instant::now();
        sigs[2].store(i, MemoryOrder::Release);
        let (r, t1) = rx.recv_timeout(LONG).unwrap();
        assert_eq!(r, Some((2, i)));
        lat.push(t1.saturating_duration_since(t0));
    }
    waiter.join().unwrap();
    lat.sort();
    println!("wait_any wake-up latency: median {:?}", lat[lat.len() / 2]);
}
