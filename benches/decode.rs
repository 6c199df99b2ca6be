//! Decode and writer throughput on attention-shaped buffers (see BENCHMARKS.md).
//!
//! - `decode/tvm_5M_1core`: a ~5 M-record TVM-format buffer decoded into the model on one
//!   thread (`DecodeOptions::single_threaded`); throughput in records.
//! - `decode/tvm_5M_parallel`: the same on the rayon pool.
//! - `decode/flashinfer_4M_1core`, `decode/flashinfer_4M_parallel`: the same schedule in
//!   FlashInfer's format (SM ids in every record; no finalize records, and its instants
//!   overwritten by the next record as FlashInfer's device code does, so 4.2 M
//!   records), through the same generic decoder.
//! - `decode/native_5M_1core`: a native buffer of the same schedule (with counter samples).
//! - `decode/*_1core_reuse`: the same, decoding into the trace of the previous iteration
//!   (`decode_into`), so the output columns' pages are already mapped.
//! - `decode/{tvm,native}_1M_1core`: both formats at a quarter of the size.
//! - `write/chrome_be`, `write/chrome_x`, `write/summary`, `write/csv`: writers of the
//!   decoded 5 M-record trace into `io::sink()`; throughput in spans.
//! - `decode_cpu/*`: the one-core decodes again, timed in CPU time of the benchmark thread
//!   (`/proc/thread-self/schedstat`) instead of wall time, so figures taken on a shared,
//!   loaded machine are not inflated by time the thread spent waiting for a core.
use criterion::measurement::{Measurement, ValueFormatter};
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput};
use ikp::device::sample;
use ikp::host::decode::{decode, decode_into, DecodeOptions};
use ikp::host::write::{self, ChromeOptions, SummaryOptions};
use ikp::host::TraceStats;
use std::hint::black_box;
use std::time::Duration;

/// Blocks and tiles of the ~5 M-record TVM buffer (1024 blocks x 3 lanes).
const BLOCKS: u32 = 1024;
const TILES: u32 = 204;

/// `cargo test --all-targets` runs each bench once, unoptimized: a 32x smaller buffer
/// keeps that a smoke test. `cargo bench` passes `--bench` and gets the full size.
fn blocks() -> u32 {
    if std::env::args().any(|a| a == "--bench") {
        BLOCKS
    } else {
        BLOCKS / 32
    }
}

fn records(words: &[u64]) -> u64 {
    words[1..].iter().filter(|&&w| w != 0).count() as u64
}

fn native(blocks: u32, tiles: u32) -> Vec<u64> {
    ikp::bench_support::native_attention(blocks, tiles).expect("a valid layout")
}

/// The one-thread decodes of the TVM, FlashInfer and native buffers, measured with `M`: each into a
/// fresh trace (`decode`: the kernel maps fresh pages for every column) and into a
/// trace reused from the previous iteration (`decode_into`: as a tool decoding
/// launch after launch does).
fn one_core<M: Measurement>(g: &mut BenchmarkGroup<'_, M>, tvm: &[u64], fi: &[u64]) {
    let one = DecodeOptions {
        single_threaded: true,
        ..Default::default()
    };
    g.sample_size(10).measurement_time(Duration::from_secs(8));
    let nat = native(blocks(), TILES);
    for (name, words) in [
        ("tvm_5M", tvm),
        ("flashinfer_4M", fi),
        ("native_5M", &nat[..]),
    ] {
        g.throughput(Throughput::Elements(records_of(words, &one)));
        g.bench_function(format!("{name}_1core"), |b| {
            b.iter(|| black_box(decode(black_box(words), &one).unwrap()))
        });
        let mut t = decode(words, &one).unwrap();
        g.bench_function(format!("{name}_1core_reuse"), |b| {
            b.iter(|| decode_into(black_box(words), &one, black_box(&mut t)).unwrap())
        });
    }
    // A quarter of the size (256 blocks, ~1.3 M records): the buffer and the model fit in
    // the last-level cache, and glibc serves the columns from its heap instead of fresh
    // pages.
    let small = [
        ("tvm_1M", sample::attention_tvm(blocks() / 4, TILES)),
        ("native_1M", native(blocks() / 4, TILES)),
    ];
    for (name, words) in &small {
        g.throughput(Throughput::Elements(records_of(words, &one)));
        g.bench_function(format!("{name}_1core"), |b| {
            b.iter(|| black_box(decode(black_box(words), &one).unwrap()))
        });
    }
}

/// Records in a buffer of any format (written records of its lanes).
fn records_of(words: &[u64], opts: &DecodeOptions) -> u64 {
    let t = decode(words, opts).unwrap();
    t.lanes.iter().map(|l| l.written).sum()
}

fn decode_buffers(c: &mut Criterion) {
    let tvm = sample::attention_tvm(blocks(), TILES);
    let fi = sample::attention_flashinfer(blocks(), TILES);
    let mut g = c.benchmark_group("decode");
    one_core(&mut g, &tvm, &fi);
    for (name, words) in [("tvm_5M_parallel", &tvm), ("flashinfer_4M_parallel", &fi)] {
        g.throughput(Throughput::Elements(records(words)));
        g.bench_function(name, |b| {
            b.iter(|| black_box(decode(black_box(words), &DecodeOptions::default()).unwrap()))
        });
    }
    g.finish();
}

fn writers(c: &mut Criterion) {
    let tvm = sample::attention_tvm(blocks(), TILES);
    let t = decode(&tvm, &DecodeOptions::default()).unwrap();
    let mut g = c.benchmark_group("write");
    g.sample_size(10).measurement_time(Duration::from_secs(8));
    g.throughput(Throughput::Elements(t.spans.len() as u64));
    let be = ChromeOptions::default();
    let x = ChromeOptions {
        emit_complete_events: true,
        ..Default::default()
    };
    g.bench_function("chrome_be", |b| {
        b.iter(|| write::chrome::write_chrome(&mut std::io::sink(), &t, &be).unwrap())
    });
    g.bench_function("chrome_x", |b| {
        b.iter(|| write::chrome::write_chrome(&mut std::io::sink(), &t, &x).unwrap())
    });
    g.bench_function("summary", |b| {
        b.iter(|| {
            write::summary::write_summary(
                &mut std::io::sink(),
                &write::summary::summarize(
                    &TraceStats::of(&t),
                    &SummaryOptions::default(),
                    "t.json",
                ),
            )
            .unwrap()
        })
    });
    g.bench_function("csv", |b| {
        b.iter(|| write::csv::write_csv(&mut std::io::sink(), &t).unwrap())
    });
    g.finish();
}

/// CPU time of the calling thread, ns (Linux: first field of `/proc/thread-self/schedstat`).
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .expect("/proc/thread-self/schedstat (Linux) is needed for the CPU-time benches")
}

/// Criterion measurement: CPU time of the benchmark thread.
struct CpuTime;

struct NsFormatter;

impl ValueFormatter for NsFormatter {
    fn scale_values(&self, typical: f64, values: &mut [f64]) -> &'static str {
        let (k, unit) = if typical >= 1e9 {
            (1e-9, "s")
        } else if typical >= 1e6 {
            (1e-6, "ms")
        } else if typical >= 1e3 {
            (1e-3, "us")
        } else {
            (1.0, "ns")
        };
        values.iter_mut().for_each(|v| *v *= k);
        unit
    }
    fn scale_throughputs(&self, _typical: f64, t: &Throughput, values: &mut [f64]) -> &'static str {
        let n = match *t {
            Throughput::Elements(n) | Throughput::Bytes(n) | Throughput::BytesDecimal(n) => {
                n as f64
            }
            _ => 1.0,
        };
        values.iter_mut().for_each(|v| *v = n / (*v * 1e-9) / 1e6);
        "M/s (cpu)"
    }
    fn scale_for_machines(&self, _values: &mut [f64]) -> &'static str {
        "ns"
    }
}

impl Measurement for CpuTime {
    type Intermediate = u64;
    type Value = u64;
    fn start(&self) -> u64 {
        thread_cpu_ns()
    }
    fn end(&self, i: u64) -> u64 {
        thread_cpu_ns() - i
    }
    fn add(&self, a: &u64, b: &u64) -> u64 {
        a + b
    }
    fn zero(&self) -> u64 {
        0
    }
    fn to_f64(&self, v: &u64) -> f64 {
        *v as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        &NsFormatter
    }
}

fn decode_cpu(c: &mut Criterion<CpuTime>) {
    let tvm = sample::attention_tvm(blocks(), TILES);
    let fi = sample::attention_flashinfer(blocks(), TILES);
    let mut g = c.benchmark_group("decode_cpu");
    one_core(&mut g, &tvm, &fi);
    g.finish();
}

criterion_group!(benches, decode_buffers, writers);
criterion_group! {
    name = cpu;
    config = Criterion::default().with_measurement(CpuTime);
    targets = decode_cpu
}
criterion_main!(benches, cpu);
