//! The C++ host helper `ikp_host.hpp` (`ikp::HostLayout`) against the Rust `Layout`:
//! `tests/kernels/host_layout.cpp` is compiled with the host C++ compiler (and with nvcc's
//! host pass when nvcc is on hand), reads layouts written here, and prints what the helper
//! makes of each. For every layout the Rust side accepts, the C++ header words (from
//! `header_words()` and from `write_header()` into a caller's array), the sizes and the
//! bytes of `ikp::Arg` must equal `Layout::header_words`, the size methods and
//! `Layout::kernel_arg`, and the decoder must accept the header; every layout the Rust side
//! refuses must be refused by the helper with the same message (the same field, value and
//! reason), by `validate()`, `write_header()` and `header_words()` alike.
use crate::support;

use ikp_device::wire::{self, Overflow};
use ikp_device::{stream, ClockSync, Header, Layout, LayoutError, TimerMode};
use std::collections::HashMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// A layout as the C++ program reads it; `raw_regions` replaces the region names with
/// bytes a Rust `String` cannot hold (not UTF-8).
struct Case {
    what: String,
    layout: Layout,
    raw_regions: Option<Vec<Vec<u8>>>,
    ptr: u64,
}

fn case(what: impl Into<String>, layout: Layout) -> Case {
    Case {
        what: what.into(),
        layout,
        raw_regions: None,
        ptr: 0x7f3a_0000_1000,
    }
}

fn hex_name(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(1 + 2 * bytes.len());
    s.push('x');
    for b in bytes {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

fn input_line(c: &Case) -> String {
    let l = &c.layout;
    let regions: Vec<Vec<u8>> = match &c.raw_regions {
        Some(r) => r.clone(),
        None => l.regions.iter().map(|s| s.as_bytes().to_vec()).collect(),
    };
    let mut s = format!(
        "ptr {} grid {} {} {} groups {} records {} timer {} overflow {} epochs {}",
        c.ptr,
        l.grid[0],
        l.grid[1],
        l.grid[2],
        l.groups_per_block,
        l.records_per_lane,
        l.timer as u8,
        l.overflow as u8,
        l.epochs
    );
    s.push_str(&format!(" regions {}", regions.len()));
    for r in &regions {
        s.push(' ');
        s.push_str(&hex_name(r));
    }
    s.push_str(&format!(" counters {}", l.counters.len()));
    for n in &l.counters {
        s.push(' ');
        s.push_str(&hex_name(n.as_bytes()));
    }
    s.push_str(&format!(" async {}", l.async_regions.len()));
    for r in &l.async_regions {
        s.push_str(&format!(" {r}"));
    }
    match &l.clock_sync {
        None => s.push_str(" sync 0"),
        Some(c) => s.push_str(&format!(
            " sync 1 {} {} {} {} {}",
            c.host_realtime_ns,
            c.host_monotonic_ns,
            c.device_globaltimer_ns,
            c.round_trip_ns,
            c.samples
        )),
    }
    s
}

/// The test program, built once per compiler.
fn build(compiler: &str) -> &'static Path {
    static GXX: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    static NVCC: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    let make = |cmd: &dyn Fn(&Path) -> Command| {
        let dir = tempfile::tempdir().expect("temp dir");
        let exe = dir.path().join("host_layout");
        support::run(cmd(&exe));
        (dir, exe)
    };
    let cell = match compiler {
        "g++" => GXX.get_or_init(|| {
            make(&|exe| {
                let mut cc = support::host_cxx();
                cc.args([
                    "-std=c++17",
                    "-Wall",
                    "-Wextra",
                    "-Wpedantic",
                    "-Wconversion",
                    "-Wsign-conversion",
                    "-Wshadow",
                    "-Werror",
                ]);
                cc.arg("-I")
                    .arg(support::header_dir())
                    .arg(support::kernels_dir().join("host_layout.cpp"))
                    .arg("-o")
                    .arg(exe);
                cc
            })
        }),
        "nvcc" => NVCC.get_or_init(|| {
            make(&|exe| {
                let mut cmd = Command::new(nvcc().expect("nvcc checked by the caller"));
                cmd.args(["-x", "cu", "-std=c++17", "-Werror", "all-warnings"]);
                cmd.arg("-I")
                    .arg(support::header_dir())
                    .arg(support::kernels_dir().join("host_layout.cpp"))
                    .arg("-o")
                    .arg(exe);
                cmd
            })
        }),
        other => panic!("no compiler {other}"),
    };
    &cell.1
}

/// nvcc from `IKP_CUDA_BIN` (scripts/env.sh), else from `PATH`.
fn nvcc() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("IKP_CUDA_BIN") {
        let p = Path::new(&dir).join("nvcc");
        if p.is_file() {
            return Some(p);
        }
    }
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join("nvcc"))
        .find(|p| p.is_file())
}

/// What the program printed for one layout: key -> rest of the line.
type Report = HashMap<String, String>;

fn run_program(exe: &Path, cases: &[Case]) -> Vec<Report> {
    let mut child = Command::new(exe)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", exe.display()));
    let input: String = cases.iter().map(|c| input_line(c) + "\n").collect();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().expect("writing the layouts");
    assert!(
        out.status.success(),
        "{} failed ({}): {}",
        exe.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("the program prints UTF-8");
    let reports: Vec<Report> = text
        .split_terminator("end\n")
        .map(|block| {
            block
                .lines()
                .map(|l| {
                    let (k, v) = l.split_once(' ').unwrap_or((l, ""));
                    (k.to_owned(), v.to_owned())
                })
                .collect()
        })
        .collect();
    assert_eq!(reports.len(), cases.len(), "one report per layout");
    reports
}

fn hex_words(line: &str) -> Vec<u64> {
    line.split_whitespace()
        .map(|w| u64::from_str_radix(w, 16).expect("hex word"))
        .collect()
}

/// Compares the program's reports with the Rust layout, case by case; returns how many
/// cases were valid.
fn compare(exe: &Path, cases: &[Case]) -> usize {
    let reports = run_program(exe, cases);
    let mut valid = 0;
    for (c, r) in cases.iter().zip(&reports) {
        let what = &c.what;
        let get = |k: &str| {
            r.get(k)
                .unwrap_or_else(|| panic!("{what}: no `{k}` in {r:?}"))
                .as_str()
        };
        match c.layout.validate() {
            Err(e) => {
                let msg = e.to_string();
                assert_eq!(get("error"), msg, "{what}: validate()");
                assert_eq!(get("write_header"), msg, "{what}: write_header()");
                assert_eq!(get("header_words"), msg, "{what}: header_words() throws");
                assert_eq!(get("array_untouched"), "1", "{what}: refused, yet written");
            }
            Ok(()) => {
                valid += 1;
                let l = &c.layout;
                assert!(!r.contains_key("error"), "{what}: refused: {r:?}");
                assert_eq!(get("write_header"), "(ok)", "{what}");
                assert_eq!(get("header_words"), "(none)", "{what}");
                let sizes = format!(
                    "{} {} {} {} {} {} {}",
                    l.blocks(),
                    l.lane_count(),
                    l.lane_stride(),
                    l.header_len(),
                    l.lane_base(),
                    l.buffer_words(),
                    l.buffer_words() * 8
                );
                assert_eq!(
                    get("sizes"),
                    sizes,
                    "{what}: blocks, lanes, stride, header, lane base, words, bytes"
                );
                let rust = l.header_words().unwrap();
                let cxx = hex_words(get("header"));
                if let Some(i) = (0..rust.len().max(cxx.len())).find(|&i| rust.get(i) != cxx.get(i))
                {
                    panic!(
                        "{what}: header word {i}: C++ {:x?}, Rust {:x?} (C++ {} words, Rust {})",
                        cxx.get(i),
                        rust.get(i),
                        cxx.len(),
                        rust.len()
                    );
                }
                assert_eq!(hex_words(get("array")), rust, "{what}: write_header()");
                assert_eq!(get("array_tail"), "1", "{what}: wrote past the header");
                assert_eq!(
                    get("short"),
                    format!(
                        "ikp::HostLayout::write_header: the array holds {} words, the header needs {}",
                        rust.len() - 1,
                        rust.len()
                    ),
                    "{what}"
                );
                assert_eq!(
                    get("short_untouched"),
                    "1",
                    "{what}: a short array was written"
                );
                let arg: Vec<u8> = get("arg")
                    .split_whitespace()
                    .map(|b| b.parse().unwrap())
                    .collect();
                assert_eq!(
                    arg,
                    bytemuck::bytes_of(&l.kernel_arg(c.ptr)),
                    "{what}: the bytes of ikp::Arg"
                );
                assert_eq!(get("arg_from_pointer_same"), "1", "{what}");
                let symbol: Vec<u64> = get("probe_symbol")
                    .split_whitespace()
                    .map(|w| u64::from_str_radix(w, 16).unwrap())
                    .collect();
                assert_eq!(
                    symbol,
                    ikp_device::probe_symbol::words(&l.kernel_arg(c.ptr)),
                    "{what}: HostLayout::probe_symbol"
                );
                // The decoder takes the C++ header (a buffer this small is cheap to zero).
                if l.buffer_words() <= 1 << 20 {
                    let mut buf = vec![0u64; l.buffer_words() as usize];
                    buf[..cxx.len()].copy_from_slice(&cxx);
                    let parse = if l.overflow.is_stream() {
                        Header::parse_stream
                    } else {
                        Header::parse
                    };
                    let h = parse(&buf).unwrap_or_else(|e| panic!("{what}: {e}"));
                    let mut want = l.clone();
                    want.async_regions.sort_unstable();
                    want.async_regions.dedup();
                    assert_eq!(h.layout, want, "{what}: decoded");
                }
            }
        }
    }
    valid
}

fn names(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}")).collect()
}

fn sync() -> ClockSync {
    ClockSync {
        host_realtime_ns: 1_700_000_000_123_456_789,
        host_monotonic_ns: 987_654_321,
        device_globaltimer_ns: 0xFFFF_FFFF_0000_1234,
        round_trip_ns: 4321,
        samples: 16,
    }
}

fn valid_cases() -> Vec<Case> {
    let d = Layout::default;
    vec![
        case("defaults", d()),
        case(
            "3D grid with groups, counters, clock timer",
            Layout {
                grid: [3, 2, 2],
                groups_per_block: 4,
                records_per_lane: 14,
                timer: TimerMode::Clock,
                regions: ["load", "compute", "store", "tile"]
                    .map(String::from)
                    .to_vec(),
                counters: ["wait_full", "wait_empty"].map(String::from).to_vec(),
                ..d()
            },
        ),
        case(
            "UTF-8 names crossing 8-byte boundaries",
            Layout {
                regions: vec![
                    "".into(),
                    "a".into(),
                    "1234567".into(),
                    "12345678".into(),
                    "épée".into(),
                    "注意力".into(),
                    "🚀tile".into(),
                    "\u{7ff}\u{800}\u{ffff}\u{10000}\u{10ffff}\u{d7ff}\u{e000}".into(),
                    "x".repeat(15),
                    "y".repeat(17),
                ],
                counters: vec!["wäit".into(), "".into(), "c".repeat(8)],
                ..d()
            },
        ),
        case(
            "ring, epochs, async regions (a repeated id)",
            Layout {
                grid: [5, 1, 1],
                groups_per_block: 2,
                records_per_lane: 256,
                overflow: Overflow::Ring,
                epochs: 3,
                regions: names("r", 4),
                async_regions: vec![2, 0, 2],
                ..d()
            },
        ),
        case(
            "a ring of one record",
            Layout {
                records_per_lane: 1,
                overflow: Overflow::Ring,
                ..d()
            },
        ),
        case(
            "async regions across bitmap words",
            Layout {
                regions: names("region_", 130),
                async_regions: vec![0, 63, 64, 127, 128, 129],
                ..d()
            },
        ),
        case(
            "clock sync",
            Layout {
                clock_sync: Some(sync()),
                ..d()
            },
        ),
        case(
            "clock sync at the ends of its fields",
            Layout {
                regions: vec!["k".into()],
                clock_sync: Some(ClockSync {
                    host_realtime_ns: u64::MAX,
                    host_monotonic_ns: 0,
                    device_globaltimer_ns: 1,
                    round_trip_ns: u32::MAX,
                    samples: u32::MAX,
                }),
                ..d()
            },
        ),
        case(
            "every limit at its largest: regions, counters",
            Layout {
                regions: names("region", wire::MAX_REGIONS as usize),
                counters: names("counter", wire::MAX_COUNTERS as usize),
                async_regions: vec![wire::MAX_REGIONS - 1],
                ..d()
            },
        ),
        case(
            "the most lanes",
            Layout {
                grid: [1 << 13, 1 << 6, 1 << 6],
                groups_per_block: 2,
                records_per_lane: 1,
                ..d()
            },
        ),
        case(
            "the most epochs",
            Layout {
                epochs: wire::MAX_EPOCHS,
                records_per_lane: 2,
                ..d()
            },
        ),
        case(
            "epochs x lanes at the limit",
            Layout {
                grid: [1 << 10, 1 << 10, 1],
                epochs: 64,
                records_per_lane: 1,
                ..d()
            },
        ),
        case(
            "the most records per lane, as a ring",
            Layout {
                records_per_lane: wire::MAX_RECORDS_PER_LANE,
                overflow: Overflow::Ring,
                ..d()
            },
        ),
        case(
            "a name table of exactly 1 MiB",
            Layout {
                regions: vec!["n".repeat(wire::MAX_NAMES_BYTES as usize - 1)],
                ..d()
            },
        ),
        case(
            "a stream of rings of 4 with counters",
            Layout {
                grid: [5, 1, 2],
                groups_per_block: 3,
                records_per_lane: stream::MIN_RING,
                counters: ["wait"].map(String::from).to_vec(),
                regions: ["work"].map(String::from).to_vec(),
                overflow: Overflow::Stream,
                ..d()
            },
        ),
        case(
            "a waiting stream with a clock sync",
            Layout {
                grid: [132, 1, 1],
                groups_per_block: 4,
                records_per_lane: 512,
                regions: ["tile", "mma"].map(String::from).to_vec(),
                overflow: Overflow::StreamWait,
                clock_sync: Some(sync()),
                ..d()
            },
        ),
        Case {
            ptr: u64::MAX - 7,
            ..case(
                "a pointer in the top half",
                Layout {
                    grid: [7, 3, 1],
                    ..d()
                },
            )
        },
    ]
}

/// (case, the field or name-table reason Rust must name).
fn invalid_cases() -> Vec<(Case, &'static str)> {
    let d = Layout::default;
    vec![
        (
            case(
                "grid x 0",
                Layout {
                    grid: [0, 1, 1],
                    ..d()
                },
            ),
            "grid",
        ),
        (
            case(
                "grid y 0",
                Layout {
                    grid: [4, 0, 1],
                    ..d()
                },
            ),
            "grid",
        ),
        (
            case(
                "grid z 0",
                Layout {
                    grid: [4, 1, 0],
                    ..d()
                },
            ),
            "grid",
        ),
        (
            case(
                "grid 0 and records 0: the grid is named first",
                Layout {
                    grid: [1, 1, 0],
                    records_per_lane: 0,
                    ..d()
                },
            ),
            "grid",
        ),
        (
            case(
                "groups 0",
                Layout {
                    groups_per_block: 0,
                    ..d()
                },
            ),
            "groups_per_block",
        ),
        (
            case(
                "one lane too many",
                Layout {
                    grid: [(1 << 26) + 1, 1, 1],
                    records_per_lane: 1,
                    ..d()
                },
            ),
            "lane_count",
        ),
        (
            case(
                "2^48 blocks",
                Layout {
                    grid: [1 << 16, 1 << 16, 1 << 16],
                    ..d()
                },
            ),
            "lane_count",
        ),
        (
            case(
                "records 0",
                Layout {
                    records_per_lane: 0,
                    ..d()
                },
            ),
            "records_per_lane",
        ),
        (
            case(
                "records past 2^28",
                Layout {
                    records_per_lane: wire::MAX_RECORDS_PER_LANE + 1,
                    ..d()
                },
            ),
            "records_per_lane",
        ),
        (
            case(
                "ring of 48",
                Layout {
                    records_per_lane: 48,
                    overflow: Overflow::Ring,
                    ..d()
                },
            ),
            "records_per_lane",
        ),
        (
            case(
                "stream ring of 48",
                Layout {
                    records_per_lane: 48,
                    overflow: Overflow::Stream,
                    ..d()
                },
            ),
            "records_per_lane",
        ),
        (
            case(
                "stream ring of 2",
                Layout {
                    records_per_lane: 2,
                    overflow: Overflow::StreamWait,
                    ..d()
                },
            ),
            "records_per_lane",
        ),
        (
            case(
                "a stream of 2 epochs",
                Layout {
                    epochs: 2,
                    overflow: Overflow::Stream,
                    ..d()
                },
            ),
            "epochs",
        ),
        (case("epochs 0", Layout { epochs: 0, ..d() }), "epochs"),
        (
            case(
                "epochs past the limit",
                Layout {
                    epochs: wire::MAX_EPOCHS + 1,
                    ..d()
                },
            ),
            "epochs",
        ),
        (
            case(
                "epochs x lanes past the limit",
                Layout {
                    grid: [1 << 10, 1 << 10, 1],
                    epochs: 65,
                    ..d()
                },
            ),
            "epochs",
        ),
        (
            case(
                "async region out of range",
                Layout {
                    regions: names("r", 2),
                    async_regions: vec![1, 2],
                    ..d()
                },
            ),
            "async_regions",
        ),
        (
            case(
                "async region without regions",
                Layout {
                    async_regions: vec![0],
                    ..d()
                },
            ),
            "async_regions",
        ),
        (
            case(
                "clock sync without realtime",
                Layout {
                    clock_sync: Some(ClockSync {
                        host_realtime_ns: 0,
                        ..sync()
                    }),
                    ..d()
                },
            ),
            "clock_sync",
        ),
        (
            case(
                "clock sync without device time",
                Layout {
                    clock_sync: Some(ClockSync {
                        device_globaltimer_ns: 0,
                        ..sync()
                    }),
                    ..d()
                },
            ),
            "clock_sync",
        ),
        (
            case(
                "clock sync without samples",
                Layout {
                    clock_sync: Some(ClockSync {
                        samples: 0,
                        ..sync()
                    }),
                    ..d()
                },
            ),
            "clock_sync",
        ),
        (
            case(
                "too many regions",
                Layout {
                    regions: names("r", wire::MAX_REGIONS as usize + 1),
                    ..d()
                },
            ),
            "n_regions",
        ),
        (
            case(
                "too many counters",
                Layout {
                    counters: names("c", wire::MAX_COUNTERS as usize + 1),
                    ..d()
                },
            ),
            "n_counters",
        ),
        (
            case(
                "NUL in a region name",
                Layout {
                    regions: vec!["load".into(), "mm\0a".into()],
                    ..d()
                },
            ),
            "a name contains a NUL byte",
        ),
        (
            case(
                "NUL in a counter name",
                Layout {
                    counters: vec!["\0".into()],
                    ..d()
                },
            ),
            "a name contains a NUL byte",
        ),
        (
            case(
                "a name table one byte past 1 MiB",
                Layout {
                    regions: vec!["n".repeat(wire::MAX_NAMES_BYTES as usize)],
                    ..d()
                },
            ),
            "name table larger than 1 MiB",
        ),
    ]
}

/// The field (or name-table reason) a refusal names.
fn named(e: &LayoutError) -> &'static str {
    match e {
        LayoutError::Field { field, .. } => field,
        LayoutError::Names(why) => why,
        other => panic!("validate gave {other:?}"),
    }
}

#[test]
fn valid_layouts_match_the_rust_encoder_word_for_word() {
    let cases = valid_cases();
    for c in &cases {
        c.layout
            .validate()
            .unwrap_or_else(|e| panic!("{}: {e}", c.what));
    }
    assert_eq!(compare(build("g++"), &cases), cases.len());
}

#[test]
fn invalid_layouts_are_refused_with_the_rust_message() {
    let (cases, fields): (Vec<_>, Vec<_>) = invalid_cases().into_iter().unzip();
    for (c, f) in cases.iter().zip(&fields) {
        let e = c.layout.validate().expect_err(&c.what);
        assert_eq!(named(&e), *f, "{}: the case tests another check", c.what);
    }
    assert_eq!(compare(build("g++"), &cases), 0);
}

#[test]
fn names_that_are_not_utf8_are_refused_as_the_decoder_refuses_them() {
    let bad: [&[u8]; 8] = [
        b"\xff",
        b"\x80",
        b"\xc0\x80",                     // overlong NUL
        b"\xe0\x9f\xbf",                 // overlong U+07FF
        b"\xed\xa0\x80",                 // surrogate U+D800
        b"\xf4\x90\x80\x80",             // past U+10FFFF
        b"ok\xe2\x82",                   // truncated
        b"\xf0\x9f\x9a\x80\xf0\x9f\x9a", // a rocket, then a truncated one
    ];
    let want = LayoutError::Names("a name is not UTF-8").to_string();
    let cases: Vec<Case> = bad
        .iter()
        .map(|b| {
            assert!(std::str::from_utf8(b).is_err());
            Case {
                raw_regions: Some(vec![b"fine".to_vec(), b.to_vec()]),
                ..case(
                    format!("name {b:x?}"),
                    Layout {
                        regions: names("r", 2),
                        ..Layout::default()
                    },
                )
            }
        })
        .collect();
    let reports = run_program(build("g++"), &cases);
    for (c, r) in cases.iter().zip(&reports) {
        assert_eq!(r.get("error"), Some(&want), "{}", c.what);
        assert_eq!(r.get("header_words"), Some(&want), "{}", c.what);
    }
}

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn name(&mut self) -> String {
        const PIECES: [&str; 8] = ["a", "Z", "_", "é", "注", "🚀", "\u{10ffff}", "\0"];
        let len = self.below(12);
        (0..len)
            .map(|_| {
                // A NUL now and then, so that some layouts are refused for it.
                let pieces = if self.below(40) == 0 { 8 } else { 7 };
                let i = self.below(pieces);
                PIECES[i as usize]
            })
            .collect()
    }
}

fn random_layout(rng: &mut Rng) -> Layout {
    let dim = |rng: &mut Rng| {
        if rng.below(30) == 0 {
            0
        } else {
            1 + rng.below(4) as u32
        }
    };
    let grid = [dim(rng), dim(rng), dim(rng)];
    let n_regions = rng.below(70) as usize;
    let regions: Vec<String> = (0..n_regions).map(|_| rng.name()).collect();
    let counters: Vec<String> = (0..rng.below(4)).map(|_| rng.name()).collect();
    let async_regions = (0..rng.below(4))
        .map(|_| rng.below(n_regions as u64 + 2) as u32)
        .collect();
    let ring = rng.below(3) == 0;
    Layout {
        grid,
        groups_per_block: rng.below(5) as u32,
        records_per_lane: if ring && rng.below(4) != 0 {
            1 << rng.below(9)
        } else {
            rng.below(70) as u32
        },
        timer: if rng.below(2) == 0 {
            TimerMode::Globaltimer
        } else {
            TimerMode::Clock
        },
        regions,
        counters,
        overflow: match (ring, rng.below(3)) {
            (true, 0) => Overflow::Stream,
            (true, 1) => Overflow::StreamWait,
            (true, _) => Overflow::Ring,
            (false, _) => Overflow::DropNewest,
        },
        epochs: rng.below(5) as u32,
        async_regions,
        clock_sync: match rng.below(4) {
            0 => None,
            1 => Some(ClockSync {
                samples: rng.below(2) as u32,
                ..sync()
            }),
            _ => Some(ClockSync {
                host_realtime_ns: rng.next() | 1,
                host_monotonic_ns: rng.next(),
                device_globaltimer_ns: rng.next() | 1,
                round_trip_ns: rng.next() as u32,
                samples: 1 + rng.below(64) as u32,
            }),
        },
    }
}

#[test]
fn random_layouts_agree() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let cases: Vec<Case> = (0..400)
        .map(|i| Case {
            ptr: rng.next(),
            ..case(format!("random layout {i}"), random_layout(&mut rng))
        })
        .collect();
    let valid = compare(build("g++"), &cases);
    // Both kinds are exercised.
    assert!(
        (40..=360).contains(&valid),
        "{valid} of {} random layouts valid",
        cases.len()
    );
}

#[test]
fn the_header_compiles_without_exceptions() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("noexcept.cpp");
    std::fs::write(
        &src,
        "#include \"ikp_host.hpp\"\n\
         int main() {\n\
           ikp::HostLayout l;\n\
           l.regions = {\"load\"};\n\
           return l.validate().empty() ? static_cast<int>(l.header_words().size()) : 1;\n\
         }\n",
    )
    .unwrap();
    let exe = dir.path().join("noexcept");
    let mut cc = support::host_cxx();
    cc.args([
        "-std=c++17",
        "-fno-exceptions",
        "-Wall",
        "-Wextra",
        "-Werror",
        "-I",
    ])
    .arg(support::header_dir())
    .arg(&src)
    .arg("-o")
    .arg(&exe);
    support::run(cc);
    let status = Command::new(&exe).status().unwrap();
    let header = Layout {
        regions: vec!["load".into()],
        ..Layout::default()
    }
    .header_len();
    assert_eq!(status.code(), Some(header as i32));
}

#[test]
fn nvcc_host_pass_agrees() {
    if nvcc().is_none() {
        eprintln!(
            "SKIPPED nvcc_host_pass_agrees: no nvcc in IKP_CUDA_BIN or on PATH \
             (scripts/provision.sh, then `source scripts/env.sh`)"
        );
        return;
    }
    let exe = build("nvcc");
    let mut cases = valid_cases();
    let n_valid = cases.len();
    cases.extend(invalid_cases().into_iter().map(|(c, _)| c));
    assert_eq!(compare(exe, &cases), n_valid);
}
