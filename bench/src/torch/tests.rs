//! Tests of the torch peer's protocol and process handling.

use super::*;

/// Fails unless `python3` (3.8 or later) runs here: the tests that start the script need
/// it (not torch), and `scripts/setup.sh`, which every test run starts with, needs it too,
/// so a machine without it is not one these tests are meant to pass on.
fn require_python() {
    let ok = Command::new("python3")
        .arg("-c")
        .arg("import sys; sys.exit(0 if sys.version_info >= (3, 8) else 1)")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "python3 (3.8 or later) is needed to test the torch peer's script"
    );
}

/// The script's host-only backend: the whole protocol without torch.
fn python_backend() -> Launch {
    Launch::host_test("python3")
}

/// A launch whose `import torch` finds `torch_py` (a fake torch module).
fn fake_torch(dir: &TempDir, torch_py: &str) -> Launch {
    std::fs::write(dir.0.join("torch.py"), torch_py).unwrap();
    Launch {
        env: vec![("PYTHONPATH".into(), dir.0.display().to_string())],
        ..Launch::new("python3", 0)
    }
}

#[test]
fn signed_order_round_trip_and_order() {
    let samples32 = [
        0u32,
        1,
        2,
        0x7fff_ffff,
        0x8000_0000,
        0x8000_0001,
        u32::MAX - 1,
        u32::MAX,
    ];
    for &a in &samples32 {
        assert_eq!(to_signed_order(to_signed_order(a)), a);
        for &b in &samples32 {
            let (sa, sb) = (to_signed_order(a) as i32, to_signed_order(b) as i32);
            assert_eq!(a.cmp(&b), sa.cmp(&sb), "{a:#x} vs {b:#x}");
        }
    }
    let samples64 = [0u64, 1, i64::MAX as u64, 1 << 63, (1 << 63) + 1, u64::MAX];
    for &a in &samples64 {
        assert_eq!(to_signed_order(to_signed_order(a)), a);
        for &b in &samples64 {
            let (sa, sb) = (to_signed_order(a) as i64, to_signed_order(b) as i64);
            assert_eq!(a.cmp(&b), sa.cmp(&sb), "{a:#x} vs {b:#x}");
        }
    }
    assert_eq!(to_signed_order(0u32) as i32, i32::MIN);
    assert_eq!(to_signed_order(u64::MAX) as i64, i64::MAX);
}

#[test]
fn words_round_trip_through_bytes() {
    let keys: Vec<u64> = vec![0, 5, 1 << 63, u64::MAX, 12345678901234];
    let mut bytes = Vec::new();
    write_words(&mut bytes, &keys, true).unwrap();
    assert_eq!(bytes.len(), keys.len() * 8);
    // Little-endian int64 of the flipped word: 0 is i64::MIN.
    assert_eq!(&bytes[..8], &i64::MIN.to_le_bytes());
    let back: Vec<u64> = read_words(&mut bytes.as_slice(), keys.len(), true).unwrap();
    assert_eq!(back, keys);
    let values: Vec<u32> = vec![7, 0, u32::MAX];
    let mut bytes = Vec::new();
    write_words(&mut bytes, &values, false).unwrap();
    assert_eq!(&bytes[..4], &7u32.to_le_bytes());
    assert!(read_words::<u32>(&mut &bytes[..8], 3, false).is_err());
}

#[test]
fn replies_parse() {
    assert_eq!(parse_reply("hello from torch"), None);
    assert_eq!(
        parse_reply("@bitonic\tready\tNVIDIA Test GPU\t150000000000\t2.11.0 (CUDA 13.0)"),
        Some(Ok(Reply::Ready {
            name: "NVIDIA Test GPU".into(),
            memory_bytes: 150_000_000_000,
            version: "2.11.0 (CUDA 13.0)".into()
        }))
    );
    assert_eq!(
        parse_reply("@bitonic\tok\t0.5 1.25 3e-05\r"),
        Some(Ok(Reply::Ok(vec![0.5, 1.25, 3e-5], String::new())))
    );
    assert_eq!(
        parse_reply("@bitonic\tok\t2.5\t1 of 3 timed runs not held"),
        Some(Ok(Reply::Ok(
            vec![2.5],
            "1 of 3 timed runs not held".into()
        )))
    );
    assert_eq!(
        parse_reply("@bitonic\tunavailable\tno torch"),
        Some(Ok(Reply::Unavailable("no torch".into())))
    );
    assert_eq!(
        parse_reply("@bitonic\terror\tOutOfMemoryError: CUDA out of memory"),
        Some(Ok(Reply::Error(
            "OutOfMemoryError: CUDA out of memory".into()
        )))
    );
    for bad in [
        "@bitonic\tok\t1.0 nan",
        "@bitonic\tok\t-1.0",
        "@bitonic\tok\t1.0 x",
        "@bitonic\tok\t1.0\tnote\textra",
        "@bitonic\tready\tname\tlots\tv",
        "@bitonic\tready\tname",
        "@bitonic\tfinished",
        "@bitonic",
    ] {
        assert!(matches!(parse_reply(bad), Some(Err(_))), "{bad:?}");
    }
}

#[test]
fn missing_python_is_a_note() {
    let launch = Launch::new("/nonexistent/bitonic-test/python3", 0);
    let why = probe(&launch).err().expect("no python there");
    assert!(why.contains("not found"), "{why}");
}

/// Why the script refuses to start with `torch_py` as its torch module.
fn fake_torch_refusal(torch_py: &str) -> String {
    require_python();
    let dir = TempDir::new().unwrap();
    let launch = fake_torch(&dir, torch_py);
    probe(&launch).err().expect("the fake torch is refused")
}

#[test]
fn missing_torch_is_a_note() {
    let why = fake_torch_refusal("raise ImportError('no torch in this test')\n");
    assert!(why.contains("no torch"), "{why}");
}

#[test]
fn torch_without_cuda_is_a_note() {
    let fake = "__version__ = '0.0+fake'\n\
                class version:\n    cuda = None\n\
                class cuda:\n    @staticmethod\n    def is_available():\n        return False\n";
    let why = fake_torch_refusal(fake);
    assert!(why.contains("has no usable CUDA"), "{why}");
    assert!(why.contains("0.0+fake"), "{why}");
}

#[test]
fn script_sorts_through_the_protocol() {
    require_python();
    let peer = probe(&python_backend()).expect("the python backend starts");
    assert_eq!(peer.memory_bytes, 0);
    // u32 keys across the sign boundary, so that a missing flip would show.
    let keys: Vec<u32> = (0..1000u32)
        .map(|i| i.wrapping_mul(0x9E37_79B9) ^ (i << 31))
        .collect();
    let mut want = keys.clone();
    want.sort_unstable();
    let ((ms, got, none), note) = peer.time(Timing::Device, &keys, None, 0, 1, 3).unwrap();
    assert_eq!(note, "");
    assert_eq!(ms.len(), 3);
    assert_eq!(got, want);
    assert!(none.is_none());

    let values: Vec<u32> = (0..keys.len() as u32).collect();
    let ((_, got, got_values), _) = peer
        .time(Timing::Device, &keys, Some(&values), 0, 0, 1)
        .unwrap();
    assert_eq!(got, want);
    let got_values = got_values.unwrap();
    for (k, v) in got.iter().zip(&got_values) {
        assert_eq!(keys[*v as usize], *k);
    }

    let keys64: Vec<u64> = (0..500u64)
        .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .collect();
    let mut want64 = keys64.clone();
    want64.sort_unstable();
    let ((_, got64, _), _) = peer.time(Timing::Device, &keys64, None, 0, 0, 2).unwrap();
    assert_eq!(got64, want64);

    let mut want_rows = keys.clone();
    want_rows.chunks_mut(100).for_each(|r| r.sort_unstable());
    let ((_, got_rows, _), _) = peer.time(Timing::Device, &keys, None, 100, 0, 1).unwrap();
    assert_eq!(got_rows, want_rows);

    // Bad requests are errors, and the process goes on.
    assert!(peer.time(Timing::Device, &keys, None, 300, 0, 1).is_err());
    assert!(
        peer.time::<u32>(Timing::Device, &[], None, 0, 0, 1)
            .is_err()
    );
    assert!(peer.time(Timing::Device, &keys, None, 0, 0, 1).is_ok());
    // No files are left behind.
    let left: Vec<_> = std::fs::read_dir(&peer.dir.0).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_dead_script_is_restarted() {
    require_python();
    let peer = probe(&python_backend()).unwrap();
    if let Some(s) = peer.process.borrow_mut().as_mut() {
        let _ = s.child.kill();
    }
    let keys = vec![3u32, 1, 2];
    // The first request finds the script gone (an error), the next one restarts it.
    let first = peer.time(Timing::Device, &keys, None, 0, 0, 1);
    let second = first
        .as_ref()
        .err()
        .map(|_| peer.time(Timing::Device, &keys, None, 0, 0, 1));
    let ok = match (&first, &second) {
        (Ok(_), _) => first.unwrap(),
        (Err(_), Some(Ok(_))) => second.unwrap().unwrap(),
        _ => panic!("not restarted: {first:?} then {second:?}"),
    };
    assert_eq!((ok.0).1, [1, 2, 3]);
}
