//! Host copies: what a parallel copy costs on this host (a timing, ignored by default), and
//! a copy by a rayon thread that holds a turn.

use std::sync::Mutex;

use crate::host_transfer::*;
use crate::rayon_lock::{lock_shared_with_rayon, may_fork};

/// What a parallel host copy costs beyond its bytes on this host: rayon's threads woken from
/// sleep with nothing to do, and [`par_copy`] of 1-16 MiB started with the threads asleep
/// (after 2 ms idle), and started right after another parallel call, beside one thread's
/// copy with ordinary and with streaming stores. Median of 41 after one untimed. Run with `cargo test --release --lib
/// host_copy_fixed_costs -- --ignored --nocapture`.
#[test]
#[ignore = "a timing of the host"]
fn host_copy_fixed_costs() {
    use std::time::{Duration, Instant};
    let idle = || std::thread::sleep(Duration::from_millis(2));
    let median_us = |f: &mut dyn FnMut() -> Duration| {
        let mut t: Vec<f64> = (0..42).map(|_| f().as_secs_f64() * 1e6).collect();
        t.remove(0);
        t.sort_by(f64::total_cmp);
        t[t.len() / 2]
    };
    let wake = median_us(&mut || {
        idle();
        let start = Instant::now();
        rayon::broadcast(|_| ());
        start.elapsed()
    });
    let again = median_us(&mut || {
        rayon::broadcast(|_| ());
        let start = Instant::now();
        rayon::broadcast(|_| ());
        start.elapsed()
    });
    eprintln!(
        "{} threads: broadcast after 2 ms idle {wake:.1} us, right after another {again:.1} us",
        rayon::current_num_threads()
    );
    eprintln!("MiB   par_copy asleep   par_copy awake   one thread   one thread, streaming   (us)");
    for mib in [1usize, 2, 4, 16] {
        let src: Vec<u8> = (0..mib << 20).map(|i| (i * 7 + 3) as u8).collect();
        let mut dst = vec![1u8; mib << 20];
        let asleep = median_us(&mut || {
            idle();
            let start = Instant::now();
            par_copy(&mut dst, &src, Stores::Streaming);
            start.elapsed()
        });
        let awake = median_us(&mut || {
            rayon::broadcast(|_| ());
            let start = Instant::now();
            par_copy(&mut dst, &src, Stores::Streaming);
            start.elapsed()
        });
        let one = median_us(&mut || {
            idle();
            let start = Instant::now();
            dst.copy_from_slice(&src);
            start.elapsed()
        });
        assert!(dst == src, "{mib} MiB: the copy differs");
        dst.fill(1);
        let streaming = median_us(&mut || {
            idle();
            let start = Instant::now();
            stream_copy::copy_streaming(&mut dst, &src);
            start.elapsed()
        });
        assert!(dst == src, "{mib} MiB: the streaming copy differs");
        eprintln!("{mib:>3} {asleep:>17.1} {awake:>16.1} {one:>12.1} {streaming:>23.1}");
    }
}

/// A copy made by a rayon thread that holds a turn, which may not split it over rayon's
/// threads, is still whole.
#[test]
fn a_copy_made_while_holding_a_turn_is_whole() {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .expect("pool");
    let lock = Mutex::new(());
    pool.install(|| {
        let _held = lock_shared_with_rayon(&lock);
        assert!(!may_fork(), "a rayon thread holding a turn may fork");
        let src: Vec<u8> = (0..(4usize << 20)).map(|i| (i * 13 + 1) as u8).collect();
        let mut dst = vec![0u8; src.len()];
        par_copy(&mut dst, &src, Stores::Streaming);
        assert!(dst == src, "the copy made while holding a turn differs");
    });
}
