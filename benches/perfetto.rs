//! Perfetto writer throughput: spans written per second into memory.
//!
//! `cargo bench --bench perfetto`. The trace is synthetic and shaped like an attention
//! kernel's: 132 SMs, 1056 lanes (264 blocks x 4 groups), per lane 250 tiles of
//! `tile > {load, mma, store}` nested spans (1000 spans), one instant and one wait-counter
//! sample per tile: 1.056 M spans, 264 K instants, 264 K samples. Under `cargo test` the
//! trace has 2 tiles per lane.

use std::hint::black_box;

use criterion::{criterion_group, Criterion, Throughput};
use ikp_host::{write_perfetto, Compression, Launch, PerfettoOptions};
use ikp_host::{
    CounterSamples, Diagnostics, Instants, Lane, Names, Source, Spans, Trace, WireFormat,
};

fn attention_like(blocks: u32, groups: u32, tiles: u32) -> Trace {
    let mut spans = Spans::default();
    let mut instants = Instants::default();
    let mut samples = CounterSamples::default();
    let mut lanes = Vec::new();
    let t0: u64 = 1_700_000_000_000_000_000;
    // A small deterministic generator for jitter.
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut rnd = |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    };
    for block in 0..blocks {
        for group in 0..groups {
            let id = block * groups + group;
            let start = t0 + (block as u64 / 132) * 400_000 + rnd(2_000);
            let (s0, i0, c0) = (spans.len(), instants.len(), samples.len());
            let mut t = start + 500;
            for tile in 0..tiles {
                let b = t;
                let load = 300 + rnd(200);
                let mma = 800 + rnd(300);
                let store = 100 + rnd(50);
                spans.push(id, 0, 0, tile, b, b + load + mma + store + 30);
                spans.push(id, 1, 1, tile, b + 10, b + 10 + load);
                spans.push(id, 2, 1, tile, b + 15 + load, b + 15 + load + mma);
                spans.push(
                    id,
                    3,
                    1,
                    tile,
                    b + 20 + load + mma,
                    b + 20 + load + mma + store,
                );
                instants.push(id, 4, tile, b + 10 + load);
                samples.push(id, 0, b + 10 + load, rnd(64) as u32);
                t = b + load + mma + store + 30 + rnd(100);
            }
            lanes.push(Lane {
                id,
                block,
                group,
                sm: Some(block % 132),
                warp: Some(group * 4),
                start,
                end: t + 200,
                finalized: true,
                written: 0,
                dropped: 0,
                overwritten: 0,
                spans: s0..spans.len(),
                instants: i0..instants.len(),
                samples: c0..samples.len(),
            });
        }
    }
    let time_base = lanes.iter().map(|l| l.start).min().unwrap_or(0);
    Trace {
        source: Source {
            format: WireFormat::Ikp,
            version: 1,
            timer: Default::default(),
            clock: None,
            assumed_clock: None,
            grid: [blocks, 1, 1],
            groups_per_block: groups,
            records_per_lane: 0,
            time_base,
            block_filter: Default::default(),
            clock_sync: None,
            epoch: None,
            overhead_correction: None,
            stream: None,
        },
        names: Names {
            regions: ["tile", "load_kv", "mma", "store_o", "kv_ready"]
                .map(String::from)
                .to_vec(),
            counters: vec!["kv_wait".into()],
        },
        counter_totals: vec![0; lanes.len()],
        lanes,
        spans,
        instants,
        samples,
        async_ranges: Default::default(),
        diagnostics: Diagnostics::default(),
    }
}

fn bench(c: &mut Criterion) {
    // Under `cargo test` (no `--bench` argument) the trace is tiny: the run only checks
    // that the bench works.
    let tiles = if std::env::args().any(|a| a == "--bench") {
        250
    } else {
        2
    };
    let trace = attention_like(264, 4, tiles);
    let launches = [Launch::new("attention", &trace)];
    // Plain packets: the library's default is compressed, which the second case measures.
    let opts = PerfettoOptions {
        compression: Compression::None,
        ..Default::default()
    };
    let mut out = Vec::with_capacity(128 << 20);
    write_perfetto(&mut out, &launches, &opts).unwrap();
    eprintln!(
        "perfetto bench trace: {} spans, {} instants, {} samples -> {} bytes ({:.1} B/span)",
        trace.spans.len(),
        trace.instants.len(),
        trace.samples.len(),
        out.len(),
        out.len() as f64 / trace.spans.len() as f64
    );
    let mut g = c.benchmark_group("perfetto");
    g.sample_size(20);
    g.throughput(Throughput::Elements(trace.spans.len() as u64));
    g.bench_function("write_1M_spans", |b| {
        b.iter(|| {
            out.clear();
            write_perfetto(&mut out, black_box(&launches), &opts).unwrap();
            black_box(out.len())
        })
    });
    let zopts = PerfettoOptions {
        compression: Compression::Deflate,
        ..Default::default()
    };
    out.clear();
    write_perfetto(&mut out, &launches, &zopts).unwrap();
    eprintln!("deflated: {} bytes", out.len());
    g.bench_function("write_1M_spans_deflate", |b| {
        b.iter(|| {
            out.clear();
            write_perfetto(&mut out, black_box(&launches), &zopts).unwrap();
            black_box(out.len())
        })
    });
    g.finish();
}

criterion_group!(benches, bench);

/// `IKP_PERFETTO_ITERS=n` runs `n` writes and exits, without criterion: for `perf stat`,
/// whose task-clock is CPU time, less affected by other load on the machine.
/// `IKP_PERFETTO_DEFLATE=1` writes compressed.
fn main() {
    if let Some(n) = std::env::var("IKP_PERFETTO_ITERS")
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
    {
        let trace = attention_like(264, 4, 250);
        let launches = [Launch::new("attention", &trace)];
        let mut out = Vec::with_capacity(128 << 20);
        let opts = PerfettoOptions {
            compression: match std::env::var("IKP_PERFETTO_DEFLATE").as_deref() {
                Ok("1") => Compression::Deflate,
                _ => Compression::None,
            },
            ..Default::default()
        };
        for _ in 0..n {
            out.clear();
            write_perfetto(&mut out, black_box(&launches), &opts).unwrap();
        }
        println!("{n} x {} spans -> {} bytes", trace.spans.len(), out.len());
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
