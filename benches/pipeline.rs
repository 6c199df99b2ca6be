//! Host throughput of every stage that turns a buffer into something to look at, against
//! the memory bandwidth of the same machine on the same bytes.
//!
//! `cargo bench --bench pipeline`. Every figure is in bytes of the raw buffer per second
//! (criterion `Throughput::Bytes`), so a stage and the baselines of its group compare
//! directly: a stage at half the `memcpy` figure turns buffers into output at half the rate
//! the machine can merely copy them.
//!
//! - `pipeline/decode_native`: the attention-shaped schedule in the native format
//!   (`ikp::bench_support::native_attention`), decoded on one thread and on the rayon pool;
//! - `pipeline/decode_tvm`: the same schedule in the TVM format
//!   (`ikp::device::sample::attention_tvm`, about 5 M records), one thread and pool;
//! - `pipeline/chrome`, `pipeline/perfetto`, `pipeline/summary`: the writers on the trace
//!   decoded from that TVM buffer, into `io::sink()` (Chrome, summary) or a reused `Vec`
//!   (Perfetto), counted in the TVM buffer's bytes;
//! - `pipeline/tvm_named_chrome`, `pipeline/tvm_named_perfetto`: what `ikp decode buf
//!   --format tvm --names names.txt --chrome out.json` (`--perfetto out.trace`) does on
//!   the warpscope comparison workload (`ikp::bench_support::tvm_named`: 102 blocks x 2,000
//!   tiles, 4.9 M records, the sample's region names, so its waits link to their signals
//!   and the Perfetto trace draws flows): decode, then write into `io::sink()` (Chrome)
//!   or a reused `Vec` (Perfetto, deflated as the CLI writes it by default);
//! - in every group, `memcpy` (copy the buffer into a preallocated one) and `sum` (add its
//!   words) over the group's buffer: the bandwidth limits a stage is read against.
//!
//! Under `cargo test` (no `--bench` argument) the inputs are tiny, so the run only checks
//! that every routine works.
use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkGroup, Criterion, Throughput};
use ikp::bench_support::{native_attention, tvm_named};
use ikp::device::sample;
use ikp::host::decode::{decode, DecodeOptions, FormatChoice};
use ikp::host::write::{self, ChromeOptions, SummaryOptions};
use ikp::host::Trace;
use ikp::host::TraceStats;
use ikp::host::{write_perfetto, Launch, PerfettoOptions};

/// Blocks and tiles of the TVM buffer: 1024 blocks x 3 lanes, ~5 M records (40 MB).
const TVM_SHAPE: (u32, u32) = (1024, 204);
/// The native buffer: the same schedule on 256 blocks (counter samples make it larger per
/// block), ~1.3 M records.
const NATIVE_SHAPE: (u32, u32) = (256, 204);
/// The warpscope comparison workload: 102 blocks x 3 lanes x 2,000 tiles, 4.9 M records.
const TVM_NAMED_SHAPE: (u32, u32) = (102, 2000);
/// Under `cargo test`: tiny.
const TEST_SHAPE: (u32, u32) = (8, 4);

fn bytes(words: &[u64]) -> u64 {
    std::mem::size_of_val(words) as u64
}

/// Adds the two bandwidth baselines over `words` to group `g`.
fn baselines(g: &mut BenchmarkGroup<'_, criterion::measurement::WallTime>, words: &[u64]) {
    let mut dst = vec![0u64; words.len()];
    g.bench_function("memcpy", |b| {
        b.iter(|| {
            dst.copy_from_slice(black_box(words));
            black_box(dst.as_ptr());
        })
    });
    g.bench_function("sum", |b| {
        b.iter(|| {
            black_box(words)
                .iter()
                .fold(0u64, |a, &w| a.wrapping_add(w))
        })
    });
}

fn group<'a>(
    c: &'a mut Criterion,
    name: &str,
    words: &[u64],
) -> BenchmarkGroup<'a, criterion::measurement::WallTime> {
    let mut g = c.benchmark_group(format!("pipeline/{name}"));
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .throughput(Throughput::Bytes(bytes(words)));
    g
}

fn decode_group(c: &mut Criterion, name: &str, words: &[u64], format: FormatChoice) {
    let one = DecodeOptions {
        format,
        single_threaded: true,
        ..Default::default()
    };
    let pool = DecodeOptions {
        format,
        ..Default::default()
    };
    let mut g = group(c, name, words);
    g.bench_function("decode_1thread", |b| {
        b.iter(|| black_box(decode(black_box(words), &one).expect("decodes")))
    });
    g.bench_function("decode_pool", |b| {
        b.iter(|| black_box(decode(black_box(words), &pool).expect("decodes")))
    });
    baselines(&mut g, words);
    g.finish();
}

fn writer_groups(c: &mut Criterion, tvm: &[u64], trace: &Trace) {
    let opts = ChromeOptions::default();
    let mut g = group(c, "chrome", tvm);
    g.bench_function("write_chrome", |b| {
        b.iter(|| write::chrome::write_chrome(&mut std::io::sink(), trace, &opts).expect("writes"))
    });
    baselines(&mut g, tvm);
    g.finish();

    let launches = [Launch::new("attention", trace)];
    let popts = PerfettoOptions::default();
    let mut out = Vec::new();
    let mut g = group(c, "perfetto", tvm);
    g.bench_function("write_perfetto", |b| {
        b.iter(|| {
            out.clear();
            write_perfetto(&mut out, black_box(&launches), &popts).expect("writes");
            black_box(out.len())
        })
    });
    baselines(&mut g, tvm);
    g.finish();

    let mut g = group(c, "summary", tvm);
    g.bench_function("write_summary", |b| {
        b.iter(|| {
            write::summary::write_summary(
                &mut std::io::sink(),
                &write::summary::summarize(
                    &TraceStats::of(trace),
                    &SummaryOptions::default(),
                    "t.json",
                ),
            )
            .expect("writes")
        })
    });
    baselines(&mut g, tvm);
    g.finish();
}

/// Decode and write, as the CLI does, on the named TVM workload.
fn named_groups(c: &mut Criterion, words: &[u64], opts: &DecodeOptions) {
    let chrome = ChromeOptions::default();
    let mut g = group(c, "tvm_named_chrome", words);
    g.bench_function("decode_write_chrome", |b| {
        b.iter(|| {
            let t = decode(black_box(words), opts).expect("decodes");
            write::chrome::write_chrome(&mut std::io::sink(), &t, &chrome).expect("writes")
        })
    });
    g.finish();

    let popts = PerfettoOptions::default();
    let mut out = Vec::new();
    let mut g = group(c, "tvm_named_perfetto", words);
    g.bench_function("decode_write_perfetto", |b| {
        b.iter(|| {
            let t = decode(black_box(words), opts).expect("decodes");
            out.clear();
            let launches = [Launch::new("tvm", &t)];
            write_perfetto(&mut out, &launches, &popts).expect("writes");
            black_box(out.len())
        })
    });
    g.finish();
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let (tvm_shape, native_shape, named_shape) = if bench {
        (TVM_SHAPE, NATIVE_SHAPE, TVM_NAMED_SHAPE)
    } else {
        (TEST_SHAPE, TEST_SHAPE, TEST_SHAPE)
    };
    let native = native_attention(native_shape.0, native_shape.1).expect("valid layout");
    let tvm = sample::attention_tvm(tvm_shape.0, tvm_shape.1);
    let trace = decode(
        &tvm,
        &DecodeOptions {
            format: FormatChoice::Tvm,
            ..Default::default()
        },
    )
    .expect("the TVM sample decodes");
    let records = |w: &[u64]| w.iter().filter(|&&x| x != 0).count();
    eprintln!(
        "pipeline: native buffer {} MB ({} non-zero words), TVM buffer {} MB ({} records, {} spans decoded)",
        bytes(&native) as f64 / 1e6,
        records(&native),
        bytes(&tvm) as f64 / 1e6,
        records(&tvm[1..]),
        trace.spans.len()
    );
    let mut c = Criterion::default().configure_from_args();
    decode_group(&mut c, "decode_native", &native, FormatChoice::Ikp);
    decode_group(&mut c, "decode_tvm", &tvm, FormatChoice::Tvm);
    writer_groups(&mut c, &tvm, &trace);
    let (named, named_opts) = tvm_named(named_shape.0, named_shape.1);
    named_groups(&mut c, &named, &named_opts);
    c.final_summary();
}
