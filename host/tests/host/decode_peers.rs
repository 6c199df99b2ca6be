//! The peers' formats refuse what is not theirs, loudly and by name: a wrong `--format`
//! choice, another tool's Chrome trace, a dump whose layout disagrees with the kernel's,
//! two launches in one Proton trace; and automatic detection never takes an ikp or TVM
//! buffer for one of them, nor one of them for a `u64` buffer.
use crate::peers;

use ikp_host::decode::proton::ProtonError;
use ikp_host::decode::yaojz::YaoJzError;
use ikp_host::decode::{self, decode, decode_bytes, DecodeOptions, FormatChoice};
use ikp_host::{detect_file, load, DecodeError, LoadErrorKind, WireFormat};
use peers::{proton, yaojz, Rng};

fn with(format: FormatChoice) -> DecodeOptions {
    DecodeOptions {
        format,
        ..Default::default()
    }
}

fn decode_err(e: ikp_host::LoadError) -> DecodeError {
    match e.kind {
        LoadErrorKind::Decode(d) => d,
        k => panic!("not a decode error: {k}"),
    }
}

/// Two blocks of two warps (64 threads), rings of 4; every warp writes `n` records.
fn dump(n: usize) -> (yaojz::Session, Vec<u8>) {
    let mut s = yaojz::Session::init(4, 2, 64, &mut Rng(7));
    for slot in 0..4u32 {
        let mut w = yaojz::Warp::init(4, 2, slot / 2, slot % 2, 9);
        for k in 0..n {
            w.record(&mut s, 1, (k % 2) as u16, 1_000 + 10 * k as u64);
        }
        w.flush(&mut s);
    }
    let b = s.dump();
    (s, b)
}

fn yaojz_err(bytes: &[u8]) -> YaoJzError {
    match decode_err(decode_bytes(bytes, &with(FormatChoice::YaoJz)).unwrap_err()) {
        DecodeError::YaoJz(e) => e,
        e => panic!("not a yao-jz error: {e}"),
    }
}

#[test]
fn a_yaojz_dump_whose_layout_disagrees_fails_naming_what() {
    let (_, good) = dump(6);
    assert_eq!(
        decode_bytes(&good, &DecodeOptions::default())
            .unwrap()
            .lanes
            .len(),
        4
    );
    // Cut short, or one word too long.
    let e = yaojz_err(&good[..good.len() - 16]);
    assert!(
        matches!(
            e,
            YaoJzError::Size {
                slots: 4,
                cap: 4,
                ..
            }
        ),
        "{e}"
    );
    let mut long = good.clone();
    long.extend_from_slice(&[0; 8]);
    assert!(matches!(yaojz_err(&long), YaoJzError::Size { .. }));
    // The kernel had 2 warps per block, the header says 1 and 4 blocks: same size, but
    // slot 1's records name block 0, warp 1.
    let mut wrong = good.clone();
    wrong[16..24].copy_from_slice(&[4, 0, 0, 0, 1, 0, 0, 0]);
    let e = yaojz_err(&wrong);
    assert!(
        matches!(
            e,
            YaoJzError::Record {
                slot: 1,
                block: 1,
                warp: 0,
                ..
            }
        ),
        "{e}"
    );
    assert!(
        e.to_string().contains("warps_per_block 1 does not match"),
        "{e}"
    );
    // A capacity that is not a power of two, a newer version, a padding byte.
    let mut cap = good.clone();
    cap[12] = 3;
    assert!(yaojz_err(&cap).to_string().contains("not a power of two"));
    let mut v2 = good.clone();
    v2[8] = 2;
    assert!(yaojz_err(&v2).to_string().contains("version 2"));
    let mut pad = good.clone();
    pad[24 + 16] = 1; // 4 counters end at byte 40; the events start at 48
    assert_eq!(yaojz_err(&pad), YaoJzError::Padding(40));
    // One record of a warp names another SM: event 1, the last kept (the ring of 4 starts
    // at event 6 mod 4 = 2).
    let mut sm = good.clone();
    sm[48 + 16 + 15] ^= 0x40;
    let e = yaojz_err(&sm);
    assert!(
        matches!(
            e,
            YaoJzError::Record {
                slot: 0,
                index: 3,
                event: 1,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn ring_wrap_keeps_the_last_cap_records_in_order() {
    // 6 records in rings of 4: records 2..6 survive, oldest first; the first survivor is
    // an end (record 2 is a begin: 0, 1, 0, 1, ...): records 2-3 and 4-5 pair.
    let (s, bytes) = dump(6);
    let t = decode_bytes(&bytes, &DecodeOptions::default()).unwrap();
    for l in &t.lanes {
        assert_eq!((l.written, l.dropped), (4, 2));
        let r = l.spans.clone();
        let b: Vec<(u64, u64)> = r.map(|k| (t.spans.begin[k], t.spans.end[k])).collect();
        assert_eq!(b, [(1_020, 1_030), (1_040, 1_050)]);
        assert_eq!(
            yaojz::kept(&s, l.id as usize)
                .iter()
                .map(|r| r.0)
                .collect::<Vec<_>>(),
            [1_020, 1_030, 1_040, 1_050]
        );
    }
    // 7 records: 3..7 survive, starting with an end whose begin was overwritten.
    let (_, bytes) = dump(7);
    let t = decode_bytes(&bytes, &DecodeOptions::default()).unwrap();
    assert_eq!(t.diagnostics.unmatched_end.len(), 4);
    assert_eq!(t.diagnostics.unmatched_begin.len(), 4);
    assert!(t.lanes.iter().all(|l| l.spans.len() == 1 && l.dropped == 3));
}

fn proton_kernel(name: &str, ctas: &[(u32, u32, u64)]) -> proton::Kernel {
    proton::Kernel {
        name: name.into(),
        ctas: (ctas.iter())
            .map(|&(block, proc, init)| proton::Cta {
                block,
                proc,
                init,
                pre_final: init + 10,
                post_final: init + 20,
                warps: vec![proton::Warp {
                    uid: 0,
                    scopes: vec![("s".into(), 100, 200)],
                }],
            })
            .collect(),
        call_stack: vec![],
    }
}

/// A Proton trace of one scope, padded with blanks to a length no `u64` buffer has.
fn one_scope_trace() -> String {
    let mut json = proton::write(
        &[proton_kernel("a", &[(0, 1, 1_000)])],
        proton::Writer::InitTimes,
        None,
    );
    while json.len() % 8 != 3 {
        json.push(' ');
    }
    json
}

fn proton_err(text: &str) -> ProtonError {
    match decode_err(decode_bytes(text.as_bytes(), &DecodeOptions::default()).unwrap_err()) {
        DecodeError::Proton(e) => e,
        e => panic!("not a Proton error: {e}"),
    }
}

#[test]
fn what_is_not_one_proton_launch_is_refused() {
    // yao-jz's own Chrome trace: integer pids.
    let other = r#"{"displayTimeUnit":"ns","traceEvents":[
        {"ph":"M","name":"process_name","pid":124,"tid":0,"args":{"name":"sm 124"}},
        {"name":"compute","ph":"X","ts":1.0,"dur":2.0,"pid":124,"tid":2}]}"#;
    let e = proton_err(other);
    assert_eq!(e.to_string().split(':').next(), Some("event 1"), "{e}");
    assert!(e.to_string().contains("\"pid\" is not a string"), "{e}");
    // Proton's kernel-level trace: no pid, an integer tid.
    let kernels = r#"{"displayTimeUnit":"us","traceEvents":[{"name":"k","cat":"kernel","ph":"X","ts":0.0,"dur":1.0,"tid":7}]}"#;
    assert!(matches!(
        proton_err(kernels),
        ProtonError::Event { index: 0, .. }
    ));
    // Not Chrome traces at all.
    assert_eq!(proton_err(r#"{"0": "load"}"#), ProtonError::NoEvents);
    assert_eq!(
        proton_err(r#"{"traceEvents": [{"ph": "M"}]}"#),
        ProtonError::Empty(1)
    );
    assert!(matches!(
        proton_err("{\"traceEvents\": [1, "),
        ProtonError::Json(_)
    ));
    // Two kernels, one CTA with two init times or on two SMs, init times on some CTAs.
    let two = [
        proton_kernel("a", &[(0, 1, 1_000)]),
        proton_kernel("b", &[(0, 1, 2_000)]),
    ];
    let text = proton::write(&two, proton::Writer::InitTimes, None);
    assert!(matches!(proton_err(&text), ProtonError::Kernels { .. }));
    let text = proton::write(
        &[proton_kernel("a", &[(0, 1, 1_000), (0, 1, 5_000)])],
        proton::Writer::InitTimes,
        None,
    );
    assert!(matches!(
        proton_err(&text),
        ProtonError::Block { block: 0, .. }
    ));
    let text = proton::write(
        &[proton_kernel("a", &[(3, 1, 1_000), (3, 2, 1_000)])],
        proton::Writer::InitTimes,
        None,
    );
    assert!(proton_err(&text).to_string().contains("processors 1 and 2"));
    let mixed = proton::write(
        &[proton_kernel("a", &[(0, 1, 1_000), (1, 1, 1_500)])],
        proton::Writer::InitTimes,
        None,
    )
    .replacen("\"Init Time (ns)\":1000,", "", 1);
    assert_eq!(
        proton_err(&mixed),
        ProtonError::MixedInit {
            with: 1,
            without: 0
        }
    );
}

#[test]
fn a_proton_clock_must_be_a_rate_and_negative_durations_are_counted() {
    let text = proton::write(
        &[proton_kernel("a", &[(0, 1, 1_000)])],
        proton::Writer::InitTimes,
        None,
    );
    for bad in [0.0, -5.0, f64::NAN, f64::INFINITY, 1e6] {
        let opts = DecodeOptions {
            proton_clock_mhz: Some(bad),
            ..Default::default()
        };
        let e = decode_err(decode_bytes(text.as_bytes(), &opts).unwrap_err());
        assert!(
            matches!(e, DecodeError::Proton(ProtonError::Clock(_))),
            "{bad}: {e}"
        );
    }
    let back = text.replace("\"dur\":0.1", "\"dur\":-0.1");
    assert_ne!(back, text);
    let t = decode_bytes(back.as_bytes(), &DecodeOptions::default()).unwrap();
    assert_eq!(t.diagnostics.backward_steps, 1);
    assert_eq!(t.spans.dur(0), 0);
    // Other phases are counted, not dropped silently.
    let extra = text.replacen("\"traceEvents\":[", "\"traceEvents\":[{\"ph\":\"M\"},", 1);
    let t = decode_bytes(extra.as_bytes(), &DecodeOptions::default()).unwrap();
    assert_eq!(t.diagnostics.unknown_records, 1);
}

#[test]
fn no_format_is_taken_for_another() {
    let native = ikp_device::sample::attention().unwrap().into_words();
    let tvm = ikp_device::sample::attention_tvm(4, 2);
    let (_, yjz) = dump(3);
    let json = one_scope_trace();
    let words = |b: &[u8]| -> Vec<u64> {
        b.chunks(8)
            .map(|c| {
                let mut w = [0u8; 8];
                w[..c.len()].copy_from_slice(c);
                u64::from_le_bytes(w)
            })
            .collect()
    };
    let auto = |w: &[u64]| decode::detect_format(w, FormatChoice::Auto).unwrap();
    assert_eq!(auto(&native), WireFormat::Ikp);
    assert_eq!(auto(&tvm), WireFormat::Tvm);
    assert_eq!(auto(&words(&yjz)), WireFormat::YaoJz);
    assert_eq!(auto(&words(json.as_bytes())), WireFormat::Proton);
    // JSON padded to whole words decodes from words too.
    assert_eq!(
        decode(&words(json.as_bytes()), &DecodeOptions::default())
            .unwrap()
            .spans
            .len(),
        1
    );
    // Each forced onto the others fails, naming its own format's problem.
    let bytes_of = |w: &[u64]| -> Vec<u8> { w.iter().flat_map(|x| x.to_le_bytes()).collect() };
    for other in [bytes_of(&native), bytes_of(&tvm)] {
        let e = decode_err(decode_bytes(&other, &with(FormatChoice::YaoJz)).unwrap_err());
        assert!(matches!(e, DecodeError::YaoJz(YaoJzError::Magic(_))), "{e}");
    }
    // JSON text of a length no u64 buffer has fails as a binary buffer.
    let e = decode_bytes(json.as_bytes(), &with(FormatChoice::YaoJz)).unwrap_err();
    assert!(e.to_string().contains("not a multiple of 8"), "{e}");
    for other in [bytes_of(&native), bytes_of(&tvm), yjz.clone()] {
        let e = decode_err(decode_bytes(&other, &with(FormatChoice::Proton)).unwrap_err());
        assert!(
            matches!(e, DecodeError::Proton(ProtonError::Json(_))),
            "{e}"
        );
    }
    let e = decode_err(decode_bytes(&yjz, &with(FormatChoice::Ikp)).unwrap_err());
    assert!(matches!(e, DecodeError::Header(_)), "{e}");
    let e = decode_err(decode_bytes(&yjz, &with(FormatChoice::Tvm)).unwrap_err());
    assert!(matches!(e, DecodeError::TvmHeader { .. }), "{e}");
}

#[test]
fn files_are_detected_and_loaded_by_their_first_bytes_with_errors_naming_them() {
    let d = tempfile::tempdir().unwrap();
    let json = one_scope_trace();
    let p = d.path().join("k.chrome_trace");
    std::fs::write(&p, &json).unwrap();
    assert_ne!(json.len() % 8, 0, "a length no u64 buffer can have");
    assert_eq!(
        detect_file(&p, FormatChoice::Auto).unwrap(),
        WireFormat::Proton
    );
    assert_eq!(load(&p, &DecodeOptions::default()).unwrap().spans.len(), 1);
    let (_, yjz) = dump(3);
    let y = d.path().join("k.yjz");
    std::fs::write(&y, &yjz).unwrap();
    assert_eq!(
        detect_file(&y, FormatChoice::Auto).unwrap(),
        WireFormat::YaoJz
    );
    assert_eq!(load(&y, &DecodeOptions::default()).unwrap().lanes.len(), 4);
    // Forced the wrong way round, each fails naming the file.
    let e = load(&p, &with(FormatChoice::YaoJz))
        .unwrap_err()
        .to_string();
    assert!(e.starts_with(&p.display().to_string()), "{e}");
    let e = load(&y, &with(FormatChoice::Proton))
        .unwrap_err()
        .to_string();
    assert!(e.starts_with(&y.display().to_string()), "{e}");
    assert!(e.contains("Proton trace: not a Chrome trace"), "{e}");
}
