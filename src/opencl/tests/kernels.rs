//! The device list, the programs (their source, their builds and their logs) and the
//! arguments a sort refuses.

use super::*;

#[test]
#[ignore = "needs an OpenCL device: scripts/test.sh runs it with --ignored"]
fn sorts_of_one_key_touch_nothing() {
    // Shapes are checked where calls enter the crate (tests/support/derived/errors.rs checks
    // the refusals on every backend); the backend itself only sees valid ones.
    let backends = backends();
    let b = &backends[0];
    let enc = KeyEncoding {
        kind: KeyKind::Unsigned,
        descending: false,
    };
    let mut one = vec![7u64];
    b.sort_words(WordsMut::U64(&mut one), None, enc)
        .expect("one key");
    assert_eq!(one, [7]);
}

#[test]
#[ignore = "needs an OpenCL device: scripts/test.sh runs it with --ignored"]
fn lists_devices_and_reports_tiles() {
    let backends = backends();
    let list = devices().expect("devices");
    assert_eq!(list[backends[0].device().index], *backends[0].device());
    for (i, d) in list.iter().enumerate() {
        assert_eq!(d.index, i);
        assert_eq!(d.backend, BackendKind::OpenCl);
    }
    let p = backends[0].tile_params(4, None).expect("tile params");
    assert!((1..=MAX_LOG_TILE).contains(&p.log_tile));
    let p = backends[1].tile_params(8, Some(8)).expect("tile params");
    assert_eq!(p.log_tile, 2);
    let p = backends[3].tile_params(4, Some(4)).expect("tile params");
    assert_eq!(p.log_tile, 7);
    assert_eq!(p.max_global_levels, 4);
    assert!(matches!(
        OpenClBackend::open(list.len()),
        Err(Error::NoDevice { .. })
    ));
}

#[test]
#[ignore = "needs an OpenCL device: scripts/test.sh runs it with --ignored"]
fn a_failed_build_returns_its_log() {
    let b = &backends()[0];
    match b.compile(
        "__kernel void broken(__global uint *x) { x[0] = undeclared_name; }",
        "",
    ) {
        Err(Error::KernelBuild { log }) => {
            assert!(
                log.contains("undeclared_name"),
                "the log names the error: {log}"
            );
            // What a caller prints shows the whole log.
            let shown = Error::KernelBuild { log: log.clone() }.to_string();
            assert!(
                shown.contains(&log),
                "the error's text shows the log: {shown}"
            );
        }
        Err(other) => panic!("expected a build log, got {other}"),
        Ok(_) => panic!("a broken program built"),
    }
}

#[test]
#[ignore = "needs an OpenCL device: scripts/test.sh runs it with --ignored"]
fn builds_without_the_unroll_pragma() {
    let b = &backends()[0];
    for log_e in 1..=LOG_E {
        let key = VariantKey {
            key: Width::W64,
            value: Some(Width::W32),
            log_e,
            cpu: log_e == 1,
        };
        let options = format!("{} -D NO_UNROLL_PRAGMA", key.build_options());
        let _lifecycle = lifecycle_lock();
        let program = b.compile(&program_source(), &options).expect("builds");
        drop(program);
    }
}

#[test]
fn program_source_inlines_every_include() {
    let source = program_source();
    assert!(!source.contains("#include"), "an include was left");
    for part in [
        "#define MODE_GLOBAL 2u",       // contract.h
        "inline KEY_T encode_key",      // words.clh
        "#define NETWORK_RUNS",         // rounds.clh
        "inline TileMap tile_map",      // tile_io.clh
        "__kernel void bitonic_global", // bitonic.cl
    ] {
        assert_eq!(source.matches(part).count(), 1, "{part}");
    }
}
