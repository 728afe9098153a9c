//! The turns' rules, on the CPU: a rayon thread holding a turn neither splits work over
//! rayon's threads nor runs other rayon work while it waits for a second turn.

use std::sync::Mutex;
use std::sync::atomic::Ordering;

use super::*;

/// A rayon thread holding a turn may not split work over rayon's threads, and the count of
/// turns held follows the guards.
#[test]
fn a_rayon_thread_holding_a_turn_may_not_fork() {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .expect("pool");
    let (first, second) = (Mutex::new(()), Mutex::new(()));
    pool.install(|| {
        assert!(may_fork(), "a rayon thread holding nothing may fork");
        let outer = lock_shared_with_rayon(&first);
        assert!(!may_fork(), "a rayon thread holding a turn forked");
        let inner = lock_shared_with_rayon(&second);
        drop(outer);
        assert!(!may_fork(), "a rayon thread holding the second turn forked");
        drop(inner);
        assert!(may_fork(), "the turns were counted as still held");
    });
    let _held = lock_shared_with_rayon(&first);
    assert!(may_fork(), "a thread outside rayon may always fork");
}

/// A rayon thread that holds a turn and waits for a second one does not run other rayon
/// work meanwhile: work that wanted the first turn would wait, nested in that thread's own
/// wait, for ever (the deadlock `tests/threads.rs` met with rayon tasks sorting beside a long
/// sort). Here the second turn is held elsewhere for a while, a job that wants the first one
/// sits in the waiting thread's queue, and the pool's other thread is kept busy; the whole
/// must finish.
#[test]
fn a_rayon_thread_waiting_with_a_turn_runs_no_other_work() {
    use std::sync::atomic::AtomicUsize;
    use std::sync::{Arc, Barrier};
    use std::time::Duration;
    let (finished, outcome) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .expect("pool");
        let first = Arc::new(Mutex::new(()));
        let second = Arc::new(Mutex::new(()));
        let ran = Arc::new(AtomicUsize::new(0));
        // The second turn is held outside the pool for 200 ms.
        let holding = Arc::new(Barrier::new(2));
        let outside = {
            let (second, holding) = (Arc::clone(&second), Arc::clone(&holding));
            std::thread::spawn(move || {
                let _held = lock_shared_with_rayon(&second);
                holding.wait();
                std::thread::sleep(Duration::from_millis(200));
            })
        };
        holding.wait();
        // One pool thread is kept busy for 400 ms.
        let busy = Arc::new(Barrier::new(2));
        {
            let busy = Arc::clone(&busy);
            pool.spawn(move || {
                busy.wait();
                std::thread::sleep(Duration::from_millis(400));
            });
        }
        busy.wait();
        pool.install(|| {
            let _outer = lock_shared_with_rayon(&first);
            let (first, ran) = (Arc::clone(&first), Arc::clone(&ran));
            rayon::spawn(move || {
                let _turn = lock_shared_with_rayon(&first);
                ran.fetch_add(1, Ordering::SeqCst);
            });
            let _inner = lock_shared_with_rayon(&second);
        });
        outside.join().expect("the outside thread");
        // The queued job gets its turn once the first is released.
        while ran.load(Ordering::SeqCst) == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        let _ = finished.send(());
    });
    assert!(
        outcome.recv_timeout(Duration::from_secs(20)).is_ok(),
        "a rayon thread waiting for a turn while holding another ran work that waited for it"
    );
}

/// Dropping an `Awake` stops its spinning: rayon's threads are free again long before the
/// bound it was given, and a bound alone ends the spinning too.
#[test]
fn awake_threads_stop_spinning_when_dropped() {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .expect("pool");
    pool.install(|| {
        let awake = Awake::start(Duration::from_secs(30));
        std::thread::sleep(Duration::from_millis(5));
        drop(awake);
        let start = std::time::Instant::now();
        // Runs on every thread of the pool, so it waits for every spinning thread.
        rayon::broadcast(|_| ());
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the threads kept spinning after the drop"
        );
        let _bounded = Awake::start(Duration::from_millis(20));
        let start = std::time::Instant::now();
        rayon::broadcast(|_| ());
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the bound did not end it"
        );
    });
}
