//! Pins the v2 wire format: field boundaries, no bleed between fields, the header
//! round trip, and the version / layout fingerprint pair.
use ikp_device::encoder::BufferWriter;
use ikp_device::stream;
use ikp_device::wire::{self, Kind};
use ikp_device::{Header, Layout, LayoutError, TimerMode};

/// Change a layout constant and this fails: bump FORMAT_VERSION and re-pin both values.
#[test]
fn version_and_layout_fingerprint_are_pinned() {
    assert_eq!(
        (wire::FORMAT_VERSION, wire::layout_fingerprint()),
        (2, 0xb45d_8b64_94bd_a329)
    );
}

/// The same for the stream format (it hashes the native fingerprint too): bump
/// `stream::VERSION` and re-pin.
#[test]
fn stream_version_and_layout_fingerprint_are_pinned() {
    assert_eq!(
        (stream::VERSION, stream::layout_fingerprint()),
        (1, 0x7c88_93c4_527f_6259)
    );
}

/// A stream layout's buffer: its own magic and version, control words in every lane's
/// segment, the stream flag in the kernel argument; the native parser names it, the stream
/// parser reads it back, and a ring that is not a power of two is refused.
#[test]
fn a_stream_layout_round_trips_and_is_told_apart() {
    let layout = Layout {
        grid: [3, 1, 1],
        records_per_lane: 64,
        regions: vec!["r".into()],
        overflow: ikp_device::Overflow::StreamWait,
        ..Layout::default()
    };
    let mut words = layout.header_words().unwrap();
    assert_eq!(words[0], stream::MAGIC);
    assert_eq!(
        layout.lane_stride(),
        wire::lane_stride(64, 0) + stream::CTRL_WORDS as u64
    );
    assert_eq!(layout.kernel_arg(0).flags, stream::arg_flags::STREAM);
    words.resize(layout.buffer_words() as usize, 0);
    assert_eq!(Header::parse(&words), Err(LayoutError::StreamBuffer));
    assert_eq!(Header::parse_stream(&words).unwrap().layout, layout);
    let odd = Layout {
        records_per_lane: 48,
        ..layout.clone()
    };
    assert!(odd.header_words().is_err());
    let several = Layout {
        epochs: 2,
        ..layout
    };
    assert!(several.header_words().is_err());
}

#[test]
fn record_fields_hold_their_maximum_without_bleeding() {
    let kinds = [Kind::Begin, Kind::End, Kind::Instant, Kind::Meta];
    for kind in kinds {
        for (region, payload, time) in [
            (0, 0, 0),
            (wire::MAX_REGIONS - 1, 0, 0),
            (0, wire::MAX_PAYLOAD, 0),
            (0, 0, u32::MAX),
            (wire::MAX_REGIONS - 1, wire::MAX_PAYLOAD, u32::MAX),
            (0x155, 0xA_AAAA, 0x5555_5555),
        ] {
            let w = wire::pack_record(time, wire::pack_tag(kind, region, payload));
            let r = wire::unpack_record(w);
            assert_eq!(
                (r.kind, r.region, r.payload, r.time_lo),
                (kind, region, payload, time)
            );
        }
    }
    // Out-of-range values are masked, never carried into the neighbouring field.
    let tag = wire::pack_tag(Kind::Begin, wire::MAX_REGIONS, wire::MAX_PAYLOAD + 1);
    assert_eq!(tag, 0);
    assert_eq!(wire::pack_tag(Kind::End, 1, 1), 1 | 1 << 2 | 1 << 12);
    // Exact bit positions of the v1 diagram.
    assert_eq!(wire::pack_tag(Kind::Instant, 0x3FF, 0), 0b10 | 0x3FF << 2);
    assert_eq!(wire::pack_tag(Kind::Begin, 0, 0xF_FFFF), 0xFFFF_F000);
    assert_eq!(wire::pack_record(0xDEAD_BEEF, 0), 0xDEAD_BEEF_0000_0000);
    const { assert!(wire::MAX_REGIONS >= 1024 && wire::MAX_PAYLOAD >= 0xFFFF) };
}

#[test]
fn ids_word_round_trips_and_rejects_unmarked_words() {
    let w = wire::pack_ids(0xFFFF, 0xFFFF, 0xFF);
    let ids = wire::unpack_ids(w).unwrap();
    assert_eq!((ids.smid, ids.warp, ids.flags), (0xFFFF, 0xFFFF, 0xFF));
    assert_eq!(w >> 40, 0x49_4B50);
    let ids = wire::unpack_ids(wire::pack_ids(131, 7, wire::lane_flags::CLOCK)).unwrap();
    assert_eq!((ids.smid, ids.warp, ids.flags), (131, 7, 1));
    assert_eq!(wire::unpack_ids(0), None);
    assert_eq!(wire::unpack_ids(0x1234), None);
}

#[test]
fn kernel_arg_is_40_bytes_of_plain_data() {
    assert_eq!(std::mem::size_of::<wire::KernelArg>(), 40);
    let a = wire::KernelArg {
        buf: 1,
        lane_base: 2,
        lane_stride: 3,
        records_per_lane: 4,
        groups_per_block: 5,
        lane_count: 6,
        n_counters: 7,
        epochs: 8,
        flags: 0,
    };
    let bytes = bytemuck::bytes_of(&a);
    assert_eq!(&bytes[0..8], &1u64.to_le_bytes());
    assert_eq!(&bytes[28..32], &7u32.to_le_bytes());
    assert_eq!(&bytes[32..36], &8u32.to_le_bytes());
}

fn layout() -> Layout {
    Layout {
        grid: [3, 2, 2],
        groups_per_block: 3,
        records_per_lane: 5,
        timer: TimerMode::Clock,
        regions: vec!["load".into(), "mma".into(), "ünïcode".into()],
        counters: vec!["wait_full".into()],
        ..Layout::default()
    }
}

#[test]
fn header_round_trips_with_names() {
    let l = layout();
    let words = BufferWriter::new(l.clone()).unwrap().into_words();
    assert_eq!(words.len() as u64, l.buffer_words());
    let h = Header::parse(&words).unwrap();
    assert_eq!(h.layout, l);
    assert_eq!(h.version, 2);
    assert_eq!(h.lane_stride, 4 + 5 + 3 + 1);
    assert_eq!(h.counters_base, l.header_len());
    assert_eq!(h.lane_base, l.header_len() + 36);
    assert_eq!(h.lane_range(35).end, words.len());
    let arg = l.kernel_arg(0xABC0);
    assert_eq!(
        (arg.lane_base as u64, arg.lane_count, arg.n_counters),
        (h.lane_base, 36, 1)
    );
}

#[test]
fn header_rejects_newer_version_bad_magic_and_truncation() {
    let mut words = BufferWriter::new(layout()).unwrap().into_words();
    let good = words.clone();
    words[1] = (words[1] & !0xFFFF_FFFF) | 3;
    assert_eq!(
        Header::parse(&words),
        Err(LayoutError::NewerVersion {
            found: 3,
            supported: 2
        })
    );
    assert!(Header::parse(&words)
        .unwrap_err()
        .to_string()
        .contains("upgrade ikp"));
    words[1] = (words[1] & !0xFFFF_FFFF) | 1;
    assert_eq!(
        Header::parse(&words),
        Err(LayoutError::OlderVersion {
            found: 1,
            supported: 2
        })
    );
    assert!(Header::parse(&words)
        .unwrap_err()
        .to_string()
        .contains("record it again"));
    words = good.clone();
    words[0] ^= 1;
    assert!(matches!(
        Header::parse(&words),
        Err(LayoutError::BadMagic(_))
    ));
    assert!(matches!(
        Header::parse(&good[..good.len() - 1]),
        Err(LayoutError::Truncated { .. })
    ));
    assert!(matches!(
        Header::parse(&good[..4]),
        Err(LayoutError::Truncated { .. })
    ));
    // Absurd lane count: must not be trusted, must not allocate.
    words = good.clone();
    words[2] = (words[2] & !0xFFFF_FFFF) | 0xFFFF_FFFF;
    assert!(matches!(
        Header::parse(&words),
        Err(LayoutError::Field {
            field: "lane_count",
            ..
        })
    ));
    words = good;
    words[6] += 1;
    assert!(matches!(
        Header::parse(&words),
        Err(LayoutError::Field {
            field: "lane_stride",
            ..
        })
    ));
}

#[test]
fn encoder_drops_past_capacity_and_counts_it() {
    let mut b = BufferWriter::new(layout()).unwrap();
    let mut lane = b.lane(4);
    lane.init(9, 2, 0, 1000, 50);
    for i in 0..8u64 {
        lane.begin(1, i as u32, 1000 + i);
    }
    lane.counter_add(0, 7).counter_add(0, 5);
    lane.finalize(2000, 60);
    let words = b.into_words();
    let h = Header::parse(&words).unwrap();
    let seg = &words[h.lane_range(4)];
    assert_eq!(seg[2] & 0xFFFF_FFFF, 2 << 16 | 9);
    assert_eq!(wire::unpack_record(seg[4 + 4]).payload, 4);
    let t = 4 + 5;
    assert_eq!((seg[t], seg[t + 1]), (2000, 60));
    assert_eq!(seg[t + 2], wire::pack_count(5, 3));
    assert_eq!(seg[t + 3], 12);
}

fn v2_layout() -> Layout {
    Layout {
        grid: [2, 1, 1],
        groups_per_block: 2,
        records_per_lane: 4,
        regions: (0..70).map(|r| format!("r{r}")).collect(),
        overflow: ikp_device::Overflow::Ring,
        epochs: 3,
        async_regions: vec![1, 65, 69],
        clock_sync: Some(ikp_device::ClockSync {
            host_realtime_ns: 1_764_000_000_000_000_000,
            host_monotonic_ns: 5_000_000_000,
            device_globaltimer_ns: 1_763_999_999_000_000_000,
            round_trip_ns: 7_000,
            samples: 16,
        }),
        ..Layout::default()
    }
}

#[test]
fn v2_header_round_trips_ring_epochs_async_bitmap_and_clock_sync() {
    let l = v2_layout();
    let words = BufferWriter::new(l.clone()).unwrap().into_words();
    let h = Header::parse(&words).unwrap();
    assert_eq!(h.layout, l);
    // Word 3 carries the RING header flag; word 7 the epochs; 12.. two bitmap words.
    assert_eq!((words[3] >> 40) & 0xFF, wire::header_flags::RING as u64);
    assert_eq!(words[7], 3);
    assert_eq!(
        (words[8], words[11]),
        (1_764_000_000_000_000_000, 16 << 32 | 7_000)
    );
    assert_eq!((words[12], words[13]), (1 << 1, 1 << 1 | 1 << 5));
    assert_eq!(h.lane_base, h.counters_base + 4);
    assert_eq!(h.segment_range(2, 3).end, words.len());
    assert_eq!(words.len() as u64, l.buffer_words());
    let sync = l.clock_sync.unwrap();
    assert_eq!(
        sync.device_to_realtime(sync.device_globaltimer_ns + 5),
        sync.host_realtime_ns + 5
    );
    assert_eq!(
        sync.device_to_monotonic(sync.device_globaltimer_ns - 5),
        5_000_000_000 - 5
    );
}

#[test]
fn v2_header_refuses_what_it_cannot_hold() {
    let bad = |f: fn(&mut Layout)| {
        let mut l = v2_layout();
        f(&mut l);
        l.validate().unwrap_err().to_string()
    };
    assert!(bad(|l| l.records_per_lane = 6).contains("power of two"));
    assert!(bad(|l| l.epochs = 0).contains("epochs"));
    assert!(bad(|l| l.async_regions = vec![70]).contains("named regions"));
    assert!(bad(|l| l.clock_sync.as_mut().unwrap().samples = 0).contains("clock_sync"));
    let good = BufferWriter::new(v2_layout()).unwrap().into_words();
    let parse_err = |f: fn(&mut Vec<u64>)| {
        let mut w = good.clone();
        f(&mut w);
        Header::parse(&w).unwrap_err().to_string()
    };
    assert!(parse_err(|w| w[3] |= 0x80 << 40).contains("flag"));
    assert!(parse_err(|w| w[7] = 0).contains("epochs"));
    assert!(parse_err(|w| w[7] |= 1 << 32).contains("word 7"));
    assert!(parse_err(|w| w[13] |= 1 << 6).contains("past n_regions"));
    // 65536 epochs the buffer does not hold: refused as truncated, never allocated.
    assert!(parse_err(|w| w[7] = 1 << 16).contains("truncated"));
}

#[test]
fn encoder_ring_keeps_the_newest_and_launch_takes_epochs_from_the_counter() {
    let mut b = BufferWriter::new(v2_layout()).unwrap();
    for launch in 0..4u64 {
        match b.launch(1) {
            Some(mut lane) => {
                lane.init(3, 0, wire::lane_flags::RING, 100, 0).calibrate(9);
                for i in 0..6u64 {
                    lane.instant(0, (launch * 10 + i) as u32, 100 + i);
                }
                lane.finalize(200, 0);
            }
            None => assert_eq!(launch, 3, "only 3 epochs"),
        }
    }
    let words = b.into_words();
    let h = Header::parse(&words).unwrap();
    assert_eq!(words[h.launch_counter(1)], 4, "every launch counted");
    assert_eq!(words[h.launch_counter(0)], 0);
    for e in 0..3u32 {
        let seg = &words[h.segment_range(e, 1)];
        assert_eq!(seg[wire::lane::CALIB as usize], 9);
        // 6 records in a ring of 4: records 4 and 5 overwrote 0 and 1.
        let payloads: Vec<u32> = (0..4)
            .map(|i| wire::unpack_record(seg[wire::lane::EVENTS as usize + i]).payload)
            .collect();
        let base = e * 10;
        assert_eq!(payloads, [base + 4, base + 5, base + 2, base + 3]);
        assert_eq!(
            seg[4 + 4 + 2],
            wire::pack_count(4, 2),
            "written 4, overwritten 2"
        );
    }
}
