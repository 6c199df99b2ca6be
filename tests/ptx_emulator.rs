//! `ikp instrument`'s probes run on the CPU: a small PTX interpreter for the instructions the
//! probes and the test kernels use, warps in lockstep, blocks one after another. It runs an
//! instrumented kernel into a buffer laid out by the host as on a GPU, and the native
//! decoder reads it: the probes' address arithmetic, record encoding, slot atomics, drop
//! counting, epochs and trip-count samples are checked without a GPU (the GPU checks are
//! `session_gpu::instrumented_ptx_*` and the bundle's `python/triton-probes`).
//!
//! A warp diverges and reconverges as in the classic min-PC model of SIMT machines: the
//! threads at the lowest program counter run together, so a diverged warp's parts run
//! one after the other; a GPU may interleave them (the GPU checks cover that).

use std::collections::HashMap;

use ikp_host::instrument::{instrument, symbol_words, ProbeSet};
use ikp_host::{decode_launches, DecodeOptions, Trace};

/// A kernel with a run-time loop of `n` iterations; each thread stores its count.
const ONE_LOOP: &str = ".version 8.0\n.target sm_90\n.address_size 64\n\
.visible .entry one_loop(.param .u64 p, .param .u32 n)\n.reqntid 64\n{\n\
.reg .pred %p<2>;\n.reg .b32 %r<4>;\n.reg .b64 %rd<3>;\n\
.loc 1 10 1\nld.param.u64 %rd1, [p];\nld.param.u32 %r1, [n];\nmov.u32 %r2, 0;\n\
$L1:\n.loc 1 20 1\nadd.s32 %r2, %r2, 1;\nsetp.lt.s32 %p1, %r2, %r1;\n@%p1 bra $L1;\n\
.loc 1 30 1\nst.global.u32 [%rd1], %r2;\nret;\n}\n.file 1 \"k.py\"\n";

#[derive(Clone, Debug)]
enum Line {
    Label(String),
    Ins {
        guard: Option<(bool, String)>,
        op: String,
        args: Vec<String>,
    },
}

/// The kernel's body as labels and instructions (one statement per line, as the
/// instrumenter and `ONE_LOOP` write them; scopes and declarations dropped).
fn program(ptx: &str, kernel: &str) -> Vec<Line> {
    let start = ptx.find(&format!(".entry {kernel}(")).unwrap();
    let body = &ptx[start + ptx[start..].find('{').unwrap() + 1..];
    let mut out = Vec::new();
    for raw in body.lines() {
        let l = raw.split("//").next().unwrap().trim();
        if l.is_empty() || l.starts_with('{') || l.starts_with('}') || l.starts_with('.') {
            continue;
        }
        if let Some(label) = l.strip_suffix(':') {
            out.push(Line::Label(label.to_string()));
            continue;
        }
        let l = l.trim_end_matches(';');
        let (guard, rest) = match l.strip_prefix('@') {
            Some(g) => {
                let (g, rest) = g.split_once(char::is_whitespace).unwrap();
                let neg = g.starts_with('!');
                (
                    Some((neg, g.trim_start_matches('!').to_string())),
                    rest.trim(),
                )
            }
            None => (None, l),
        };
        let (op, args) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
        out.push(Line::Ins {
            guard,
            op: op.to_string(),
            args: split_args(args),
        });
    }
    out
}

/// Operands split at top-level commas (`{%a, %b}` and `[%r+8]` stay whole).
fn split_args(s: &str) -> Vec<String> {
    let (mut out, mut cur, mut depth) = (Vec::new(), String::new(), 0);
    for c in s.chars() {
        match c {
            '{' | '[' => depth += 1,
            '}' | ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(cur.trim().to_string());
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

/// Global memory: the buffer, the symbol, the kernel's output; how many global loads
/// (`ld.global`), atomics with a result (`atom`) and reductions (`red`) ran; and the
/// timers' ticks so far (they run on across launches).
#[derive(Default)]
struct Memory {
    words: HashMap<u64, u64>,
    ops: Ops,
    clock: u64,
    /// Statements each warp issued (a diverged warp's parts each issue theirs), by
    /// `(block, warp)`, loops' trip adds left out.
    issued: HashMap<(u64, u64), usize>,
}

/// Memory operations run, each counted once per thread that ran it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Ops {
    global_loads: usize,
    atomics: usize,
    reductions: usize,
}

impl Memory {
    fn load(&self, addr: u64, bytes: u32) -> u64 {
        let w = self.words.get(&(addr & !7)).copied().unwrap_or(0);
        if bytes == 8 {
            assert_eq!(addr % 8, 0, "unaligned 64-bit access {addr:#x}");
            w
        } else {
            (w >> ((addr % 8) * 8)) & 0xFFFF_FFFF
        }
    }
    fn store(&mut self, addr: u64, bytes: u32, v: u64) {
        let w = self.words.entry(addr & !7).or_insert(0);
        if bytes == 8 {
            *w = v;
        } else {
            let shift = (addr % 8) * 8;
            *w = (*w & !(0xFFFF_FFFFu64 << shift)) | ((v & 0xFFFF_FFFF) << shift);
        }
    }
}

struct Thread {
    regs: HashMap<String, u64>,
    tid: [u64; 3],
    lane: u64,
}

struct Launch<'a> {
    symbols: &'a HashMap<String, u64>,
    params: &'a HashMap<String, u64>,
    ntid: [u64; 3],
    ctaid: [u64; 3],
    nctaid: [u64; 3],
    clock: u64,
}

fn width(op: &str) -> u32 {
    if op.contains("64") {
        8
    } else {
        4
    }
}

fn value(t: &Thread, l: &mut Launch, a: &str) -> u64 {
    let a = a.trim();
    if let Some(s) = a.strip_prefix('%') {
        let special = |n: &str, v: [u64; 3]| -> Option<u64> {
            n.strip_prefix('.').and_then(|d| match d {
                "x" => Some(v[0]),
                "y" => Some(v[1]),
                "z" => Some(v[2]),
                _ => None,
            })
        };
        for (name, v) in [
            ("tid", t.tid),
            ("ntid", l.ntid),
            ("ctaid", l.ctaid),
            ("nctaid", l.nctaid),
        ] {
            if let Some(rest) = s.strip_prefix(name) {
                if let Some(x) = special(rest, v) {
                    return x;
                }
            }
        }
        match s {
            "globaltimer" => {
                l.clock += 10;
                return 1_000_000_000 + l.clock;
            }
            "globaltimer_lo" => {
                l.clock += 10;
                return (1_000_000_000 + l.clock) & 0xFFFF_FFFF;
            }
            "clock64" => return 5_000 + l.clock,
            "smid" => return l.ctaid[0] % 7,
            "laneid" => return t.lane,
            _ => {}
        }
        // A probe's register never written on this thread's path (a warp without a lane
        // runs past the init that sets `%ikp_at`; a probe's temporaries are declared in
        // its own `{ }` scope, which this emulator flattens, and its atomic may be
        // predicated off) holds an undefined value, as on the GPU: only statements
        // predicated off may use it (a write of it would show in the buffer or the
        // kernel's result). The kernel's own registers are written before they are read.
        return *t.regs.get(a).unwrap_or_else(|| {
            assert!(a.starts_with("%i"), "register {a} read before written");
            &UNDEFINED
        });
    }
    if let Some(neg) = a.strip_prefix('!') {
        return (value(t, l, neg) == 0) as u64;
    }
    if let Some(v) = l.symbols.get(a) {
        return *v;
    }
    if let Some(h) = a.strip_prefix("0x") {
        return u64::from_str_radix(h, 16).unwrap();
    }
    a.parse::<i64>()
        .map(|v| v as u64)
        .unwrap_or_else(|_| panic!("operand {a}"))
}

/// `[%r+8]`, `[sym]`, `[%r+-16]` -> address.
fn address(t: &Thread, l: &mut Launch, a: &str) -> u64 {
    let inner = a
        .trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .replace(' ', "");
    let (base, off) = match inner.split_once('+') {
        Some((b, o)) => (b.to_string(), o.parse::<i64>().unwrap()),
        None => (inner.clone(), 0),
    };
    value(t, l, &base).wrapping_add(off as u64)
}

/// Runs the kernel over the grid; returns nothing (memory holds the results).
fn run(
    prog: &[Line],
    mem: &mut Memory,
    symbols: &HashMap<String, u64>,
    params: &HashMap<String, u64>,
    grid: u64,
    block: u64,
) {
    let labels: HashMap<&str, usize> = prog
        .iter()
        .enumerate()
        .filter_map(|(i, l)| match l {
            Line::Label(n) => Some((n.as_str(), i)),
            _ => None,
        })
        .collect();
    let mut clock = mem.clock;
    for b in 0..grid {
        for w in 0..block.div_ceil(32) {
            let n = (block - w * 32).min(32);
            let mut threads: Vec<Thread> = (0..n)
                .map(|i| Thread {
                    regs: HashMap::new(),
                    tid: [w * 32 + i, 0, 0],
                    lane: i,
                })
                .collect();
            let mut l = Launch {
                symbols,
                params,
                ntid: [block, 1, 1],
                ctaid: [b, 0, 0],
                nctaid: [grid, 1, 1],
                clock,
            };
            // Min-PC SIMT: the threads at the lowest program counter run one statement
            // together (they are the active mask); a branch splits them, and they run
            // together again where their counters meet.
            let mut pcs: Vec<Option<usize>> = vec![Some(0); threads.len()];
            while let Some(pc) = pcs.iter().flatten().min().copied() {
                let group: Vec<usize> =
                    (0..threads.len()).filter(|&i| pcs[i] == Some(pc)).collect();
                let mask = group.iter().fold(0u64, |m, &i| m | 1 << threads[i].lane);
                let advance = |pcs: &mut Vec<Option<usize>>, i: usize| {
                    pcs[i] = (pc + 1 < prog.len()).then_some(pc + 1);
                };
                let Line::Ins { guard, op, args } = &prog[pc] else {
                    for &i in &group {
                        advance(&mut pcs, i);
                    }
                    continue;
                };
                // A loop's trip add (`emit::loop_trip`) counts apart: every warp runs it.
                if !(op == "add.u32" && args[0].starts_with("%ikp_trip")) {
                    *mem.issued.entry((b, w)).or_default() += 1;
                }
                let on = |t: &Thread| match guard {
                    None => true,
                    Some((neg, p)) => (t.regs[p] != 0) != *neg,
                };
                let base = op.split('.').next().unwrap();
                let src: Vec<Option<u64>> = (0..32)
                    .map(|lane| {
                        let i = group.iter().find(|&&i| threads[i].lane == lane)?;
                        args.get(1).and_then(|r| threads[*i].regs.get(r).copied())
                    })
                    .collect();
                let src_here: Vec<bool> = (0..32)
                    .map(|lane| group.iter().any(|&i| threads[i].lane == lane))
                    .collect();
                for &i in &group {
                    let t = &mut threads[i];
                    if !on(t) {
                        advance(&mut pcs, i);
                        continue;
                    }
                    match base {
                        "bra" => pcs[i] = Some(labels[args[0].as_str()]),
                        "ret" | "exit" => pcs[i] = None,
                        "shfl" => {
                            let from = value(t, &mut l, &args[2]) as usize;
                            let x = src[from].expect("shfl from a thread outside the mask");
                            t.regs.insert(args[0].clone(), x);
                            advance(&mut pcs, i);
                        }
                        // `vote.sync.any.pred d, a, membermask`: `a` in any thread of
                        // the mask, every one of which must be here.
                        "vote" => {
                            assert_eq!(op, "vote.sync.any.pred", "only vote.sync.any.pred");
                            let members = value(t, &mut l, &args[2]);
                            let any = (0..32).filter(|lane| members >> lane & 1 == 1).any(|lane| {
                                src[lane].expect("vote over a thread outside the mask") != 0
                            });
                            t.regs.insert(args[0].clone(), any as u64);
                            advance(&mut pcs, i);
                        }
                        // `elect.sync _|p, membermask`: true in one thread of the mask,
                        // every one of which must be here. PTX says only that the choice
                        // is deterministic; the emulator elects the *highest* lane, so that
                        // a probe that took the elected thread for the lowest would fail.
                        "elect" => {
                            let members = value(t, &mut l, &args[1]);
                            assert!(
                                (0..32).all(|lane| members >> lane & 1 == 0 || src_here[lane]),
                                "elect over a thread outside the mask"
                            );
                            let elected = 63 - members.leading_zeros() as u64;
                            let p = args[0].split_once('|').expect("elect.sync d|p").1;
                            t.regs.insert(p.to_string(), (t.lane == elected) as u64);
                            advance(&mut pcs, i);
                        }
                        _ => {
                            step(t, &mut l, mem, base, op, args, mask);
                            advance(&mut pcs, i);
                        }
                    }
                }
            }
            clock = l.clock;
        }
    }
    mem.clock = clock;
}

fn step(
    t: &mut Thread,
    l: &mut Launch,
    mem: &mut Memory,
    base: &str,
    op: &str,
    a: &[String],
    mask: u64,
) {
    let w = width(op);
    let trunc = |v: u64| if w == 8 { v } else { v & 0xFFFF_FFFF };
    let v = |t: &Thread, l: &mut Launch, i: usize| value(t, l, &a[i]);
    let set = |t: &mut Thread, r: &str, x: u64| {
        t.regs.insert(r.to_string(), x);
    };
    match base {
        "ld" => {
            let addr = if op.starts_with("ld.param") {
                l.params[a[1].trim_matches(|c| c == '[' || c == ']')]
            } else {
                address(t, l, &a[1])
            };
            mem.ops.global_loads += op.starts_with("ld.global") as usize;
            if let Some(list) = a[0].strip_prefix('{') {
                // A vector load (`ld.const.v2.u32 {%a, %b}, [..]`): consecutive elements.
                for (i, r) in list.trim_end_matches('}').split(',').enumerate() {
                    let x = mem.load(addr + u64::from(w) * i as u64, w);
                    set(t, r.trim(), x);
                }
            } else {
                let x = if op.starts_with("ld.param") {
                    addr
                } else {
                    mem.load(addr, w)
                };
                set(t, &a[0], x);
            }
        }
        "st" => {
            let addr = address(t, l, &a[0]);
            let x = v(t, l, 1);
            mem.store(addr, w, x);
        }
        "atom" | "red" => {
            let (addr_i, val_i) = if base == "atom" {
                mem.ops.atomics += 1;
                (1, 2)
            } else {
                mem.ops.reductions += 1;
                (0, 1)
            };
            let addr = address(t, l, &a[addr_i]);
            let x = v(t, l, val_i);
            let old = mem.load(addr, w);
            let new = if op.contains(".max") {
                old.max(x)
            } else if op.contains(".inc") {
                if old >= x {
                    0
                } else {
                    old + 1
                }
            } else {
                trunc(old.wrapping_add(x))
            };
            mem.store(addr, w, new);
            if base == "atom" {
                set(t, &a[0], old);
            }
        }
        "mov" => {
            let dst = &a[0];
            if let Some(list) = dst.strip_prefix('{') {
                // Unpack a 64-bit value into two 32-bit registers.
                let x = v(t, l, 1);
                let regs: Vec<&str> = list
                    .trim_end_matches('}')
                    .split(',')
                    .map(str::trim)
                    .collect();
                set(t, regs[0], x & 0xFFFF_FFFF);
                set(t, regs[1], x >> 32);
            } else if let Some(list) = a[1].strip_prefix('{') {
                let regs: Vec<String> = list
                    .trim_end_matches('}')
                    .split(',')
                    .map(|s| s.trim().to_string())
                    .collect();
                let (lo, hi) = (
                    value(t, l, &regs[0]) & 0xFFFF_FFFF,
                    value(t, l, &regs[1]) & 0xFFFF_FFFF,
                );
                set(t, dst, lo | hi << 32);
            } else if a[1] == "%lanemask_lt" {
                set(t, dst, (1u64 << t.lane) - 1);
            } else {
                let x = v(t, l, 1);
                set(
                    t,
                    dst,
                    if op.ends_with(".pred") {
                        (x != 0) as u64
                    } else {
                        trunc(x)
                    },
                );
            }
        }
        "activemask" => set(t, &a[0], mask),
        "setp" => {
            let parts: Vec<&str> = op.split('.').collect();
            let (cmp, signed) = (parts[1], op.ends_with(".s32"));
            let (x, y) = (v(t, l, 1), v(t, l, 2));
            let (x, y) = if signed {
                (x as u32 as i32 as i64, y as u32 as i32 as i64)
            } else {
                (x as i64, y as i64)
            };
            let r = match cmp {
                "eq" => x == y,
                "ne" => x != y,
                "lt" => x < y,
                "le" => x <= y,
                "gt" => x > y,
                "ge" => x >= y,
                c => panic!("setp.{c}"),
            };
            let r = if parts.contains(&"and") {
                r && v(t, l, 3) != 0
            } else {
                r
            };
            set(t, &a[0], r as u64);
        }
        "selp" => {
            let x = if v(t, l, 3) != 0 {
                v(t, l, 1)
            } else {
                v(t, l, 2)
            };
            set(t, &a[0], x);
        }
        "and" | "or" | "xor" | "add" | "sub" | "shl" | "shr" | "min" | "max" | "mul" | "mad"
        | "neg" | "bfind" | "cvt" => {
            let x = if base == "cvt" || base == "neg" || base == "bfind" {
                0
            } else {
                v(t, l, 1)
            };
            let r = match base {
                "and" if op.ends_with(".pred") => ((x != 0) && (v(t, l, 2) != 0)) as u64,
                "and" => x & v(t, l, 2),
                "or" => x | v(t, l, 2),
                "xor" => x ^ v(t, l, 2),
                "add" => x.wrapping_add(v(t, l, 2)),
                "sub" => x.wrapping_sub(v(t, l, 2)),
                "shl" => x << v(t, l, 2),
                "shr" => x >> v(t, l, 2),
                "min" => x.min(v(t, l, 2)),
                "max" => x.max(v(t, l, 2)),
                "mul" if op.starts_with("mul.wide") => {
                    (x & 0xFFFF_FFFF) * (v(t, l, 2) & 0xFFFF_FFFF)
                }
                "mul" => x.wrapping_mul(v(t, l, 2)),
                "mad" => x.wrapping_mul(v(t, l, 2)).wrapping_add(v(t, l, 3)),
                "neg" => v(t, l, 1).wrapping_neg(),
                "bfind" => 63 - (v(t, l, 1) & 0xFFFF_FFFF).leading_zeros() as u64,
                "cvt" => {
                    v(t, l, 1)
                        & if op.starts_with("cvt.u32") {
                            0xFFFF_FFFF
                        } else {
                            u64::MAX
                        }
                }
                _ => unreachable!(),
            };
            let keep64 =
                op.starts_with("mul.wide") || op.contains("64") && !op.starts_with("cvt.u32");
            set(t, &a[0], if keep64 { r } else { r & 0xFFFF_FFFF });
        }
        other => panic!("the emulator does not know {other} ({op})"),
    }
}

const BUF: u64 = 0x1000_0000;
const SYM: u64 = 0x2000_0000;

/// What a probe's temporary that was never written holds (see `value`): far from every
/// address the tests use, so a write through it would show.
const UNDEFINED: u64 = 0xBAD0_0BAD_BAD0_0BAD;
const OUT: u64 = 0x3000_0000;

/// An instrumented kernel attached as the host attaches it: its buffer laid out for
/// `blocks` blocks of 64 threads (2 warps), `records` per warp and `epochs`, its header
/// written, its symbol set; `n` is the kernel's `n` parameter.
struct Attached {
    mem: Memory,
    prog: Vec<Line>,
    symbols: HashMap<String, u64>,
    params: HashMap<String, u64>,
    layout: ikp_device::Layout,
    blocks: u64,
}

impl Attached {
    fn new(ptx: &str, name: &str, blocks: u64, records: u32, epochs: u32, n: u64) -> Attached {
        Attached::with(ptx, name, &ProbeSet::default(), blocks, records, epochs, n)
    }

    fn with(
        ptx: &str,
        name: &str,
        probes: &ProbeSet,
        blocks: u64,
        records: u32,
        epochs: u32,
        n: u64,
    ) -> Attached {
        let out = instrument(ptx, probes).unwrap();
        let k = out.manifest.kernel(name).unwrap();
        let layout = k.layout(blocks as u32, None, records, epochs);
        let mut mem = Memory::default();
        let header = layout.header_words().unwrap();
        for (i, w) in header.iter().enumerate() {
            mem.store(BUF + 8 * i as u64, 8, *w);
        }
        // What the host writes at attach time: the init reads it, never the buffer's header.
        for (i, w) in symbol_words(BUF, &header).iter().enumerate() {
            mem.store(SYM + 8 * i as u64, 8, *w);
        }
        Attached {
            mem,
            prog: program(&out.ptx, name),
            symbols: HashMap::from([(k.symbol.clone(), SYM)]),
            params: HashMap::from([("p".to_string(), OUT), ("n".to_string(), n)]),
            layout,
            blocks,
        }
    }

    fn launch(&mut self) {
        run(
            &self.prog,
            &mut self.mem,
            &self.symbols,
            &self.params,
            self.blocks,
            64,
        );
    }

    fn buffer(&self) -> Vec<u64> {
        (0..self.layout.buffer_words())
            .map(|i| self.mem.load(BUF + 8 * i, 8))
            .collect()
    }

    fn traces(&self) -> Vec<Trace> {
        decode_launches(&self.buffer(), &DecodeOptions::default()).unwrap()
    }
}

/// Instruments `ptx`, lays out kernel `name`'s buffer for `blocks` blocks of 64 threads
/// (2 warps), `records` per warp and `epochs`, runs `launches` launches with `n` as the `n`
/// parameter, decodes. Returns the traces and what thread 0 of the last warp stored.
fn emulate_kernel(
    ptx: &str,
    name: &str,
    blocks: u64,
    records: u32,
    epochs: u32,
    launches: u32,
    n: u64,
) -> (Vec<Trace>, u64, Ops) {
    let mut a = Attached::new(ptx, name, blocks, records, epochs, n);
    for _ in 0..launches {
        a.launch();
    }
    (a.traces(), a.mem.load(OUT, 4), a.mem.ops)
}

fn emulate(blocks: u64, records: u32, epochs: u32, launches: u32, n: u64) -> Vec<Trace> {
    let (traces, stored, _) =
        emulate_kernel(ONE_LOOP, "one_loop", blocks, records, epochs, launches, n);
    assert_eq!(stored, n, "the kernel's own result");
    traces
}

/// Even threads skip the loop; odd thread `t` runs it `n + t % 4` times; threads 40 and up
/// return before it.
const DIVERGENT: &str = ".version 8.0\n.target sm_90\n.address_size 64\n\
.visible .entry div_loop(.param .u64 p, .param .u32 n)\n.reqntid 64\n{\n\
.reg .pred %p<4>;\n.reg .b32 %r<6>;\n.reg .b64 %rd<3>;\n\
.loc 1 10 1\nld.param.u64 %rd1, [p];\nld.param.u32 %r1, [n];\nmov.u32 %r3, %tid.x;\n\
setp.ge.u32 %p3, %r3, 40;\n@%p3 ret;\nmov.u32 %r2, 0;\nand.b32 %r4, %r3, 1;\n\
setp.eq.u32 %p2, %r4, 0;\n@%p2 bra $SKIP;\nand.b32 %r5, %r3, 3;\nadd.s32 %r5, %r5, %r1;\n\
$L1:\n.loc 1 20 1\nadd.s32 %r2, %r2, 1;\nsetp.lt.u32 %p1, %r2, %r5;\n@%p1 bra $L1;\n\
$SKIP:\n.loc 1 30 1\nst.global.u32 [%rd1], %r2;\nret;\n}\n.file 1 \"d.py\"\n";

/// The trip count [`DIVERGENT`]'s loop owner records: the loop runs on the odd threads
/// below 40, and is owned by the thread that recorded its begin: before sm_90 the lowest
/// active one (thread 1), from sm_90 on the one `elect.sync` elects, which the emulator
/// makes the highest (thread 39).
fn div_loop_owner_trips(ptx: &str, n: u32) -> u32 {
    let owner = if ptx.contains(".target sm_90") { 39 } else { 1 };
    n + owner % 4
}

/// A diverged warp: the loop is begun by one of its odd threads, which records the end with
/// its own trip count when it leaves, while its other threads loop on; the threads that
/// returned early finalize too, and the lane's end is the latest exit. On sm_80 (the
/// lowest active thread records) and sm_90 (`elect.sync`).
#[test]
fn a_diverged_warp_records_each_loop_entry_once_with_the_owner_trip_count() {
    let sm80 = DIVERGENT.replace(".target sm_90", ".target sm_80");
    for ptx in [DIVERGENT, sm80.as_str()] {
        a_diverged_warp_records_each_loop_entry_once(ptx);
    }
}

fn a_diverged_warp_records_each_loop_entry_once(ptx: &str) {
    let (traces, _, _) = emulate_kernel(ptx, "div_loop", 2, 16, 1, 1, 6);
    let t = &traces[0];
    assert_eq!(t.names.regions, ["d.py:20 loop"]);
    assert_eq!(t.lanes.len(), 4);
    for (i, lane) in t.lanes.iter().enumerate() {
        assert_eq!(
            (lane.written, lane.dropped, lane.finalized),
            (3, 0, true),
            "lane {i}"
        );
    }
    assert_eq!(t.spans.len(), 4);
    let trips = div_loop_owner_trips(ptx, 6);
    assert_eq!(t.samples.value, vec![trips; 4]);
    assert_eq!(t.counter_totals, vec![u64::from(trips); 4]);
    let d = &t.diagnostics;
    assert!(
        d.unmatched_begin.is_empty() && d.unmatched_end.is_empty() && d.backward_steps == 0,
        "{d:?}"
    );
    // The lane's end is after its last record (the loop's end, by the last threads out).
    for lane in &t.lanes {
        let last = t.spans.end[lane.spans.clone()]
            .iter()
            .max()
            .copied()
            .unwrap();
        assert!(lane.end >= last);
    }
}

#[test]
fn the_probes_write_what_the_decoder_reads() {
    let traces = emulate(3, 16, 1, 1, 5);
    assert_eq!(traces.len(), 1);
    let t = &traces[0];
    assert_eq!(t.names.regions, ["k.py:20 loop"]);
    assert_eq!(t.lanes.len(), 6);
    for (i, lane) in t.lanes.iter().enumerate() {
        assert_eq!(
            (lane.written, lane.dropped, lane.finalized),
            (3, 0, true),
            "lane {i}"
        );
        assert_eq!(lane.warp, Some(i as u32 % 2));
        assert!(lane.end > lane.start);
    }
    assert_eq!(t.spans.len(), 6);
    assert!(t.spans.region.iter().all(|&r| r == 0));
    assert_eq!(t.samples.value, vec![5; 6]);
    assert_eq!(t.counter_totals, vec![5; 6]);
    let d = &t.diagnostics;
    assert!(
        d.unmatched_begin.is_empty() && d.unmatched_end.is_empty() && d.backward_steps == 0,
        "{d:?}"
    );
}

#[test]
fn a_full_lane_counts_its_drops_exactly() {
    // Two slots: the begin and the end fit, the trip-count sample is dropped.
    let t = &emulate(2, 2, 1, 1, 4)[0];
    for lane in &t.lanes {
        assert_eq!((lane.written, lane.dropped), (2, 1));
    }
    assert_eq!(t.spans.len(), 4);
    assert!(t.samples.value.is_empty());
    // One slot: only the begin; the end and its sample are dropped together.
    let t = &emulate(2, 1, 1, 1, 4)[0];
    for lane in &t.lanes {
        assert_eq!((lane.written, lane.dropped), (1, 2));
    }
    assert_eq!(t.diagnostics.unmatched_begin.len(), 4);
    assert!(t.samples.value.is_empty());
}

#[test]
fn launches_go_to_their_own_epochs() {
    let traces = emulate(1, 8, 2, 3, 7);
    assert_eq!(
        traces.len(),
        2,
        "two epochs recorded, the third launch ran unrecorded"
    );
    for t in &traces {
        assert_eq!(t.spans.len(), 2);
        assert_eq!(t.samples.value, vec![7, 7]);
        assert_eq!(t.source.epoch.map(|e| e.launches), Some(3));
    }
}

/// Before sm_90 (here sm_75: no `elect.sync`, no `redux.sync`) the probes find the
/// recording thread in the active mask and record the same (launches to their own epochs, each loop's trips; a diverged warp too,
/// its loop owned by a thread that did not claim the epoch).
#[test]
fn targets_before_sm90_record_the_same() {
    for (ptx, name, samples) in [
        (ONE_LOOP, "one_loop", vec![7]),
        (DIVERGENT, "div_loop", vec![8]),
    ] {
        let sm75 = ptx.replace(".target sm_90\n", ".target sm_75\n");
        assert_ne!(sm75, ptx);
        let probes = ProbeSet::default();
        assert!(instrument(ptx, &probes).unwrap().ptx.contains("elect.sync"));
        let out = instrument(&sm75, &probes).unwrap().ptx;
        assert!(!out.contains("redux") && !out.contains("elect"));
        let (traces, _, _) = emulate_kernel(&sm75, name, 2, 8, 2, 3, 7);
        assert_eq!(
            traces.len(),
            2,
            "{name}: two epochs, the third launch unrecorded"
        );
        for t in &traces {
            assert_eq!(t.source.epoch.map(|e| e.launches), Some(3));
            assert_eq!(t.spans.len(), 4, "{name}: a loop span per warp");
            assert!(
                t.samples.value.iter().all(|v| samples.contains(v)),
                "{name}: {:?}",
                t.samples.value
            );
            assert_eq!(t.samples.value.len(), 4, "{name}");
        }
    }
}

/// PTX statements a warp of a block past the buffer's lanes issues of the init, loops'
/// resets aside, in a one-dimensional grid: the layout's load, the block's x index, its
/// first lane, the compare and the branch (11 while the whole block index, 7 statements,
/// came before the first branch). Past it, in straight-line code, one branch past the
/// finalize (and the placement with it).
const OFF_BLOCK_INIT: usize = 5;

/// An instant at a source line (`lines=`, here the loop's header line): a recording warp
/// records one each time its warp runs the line, a warp of a block past the buffer's
/// lanes (and under `lanes=block` a block's second warp) branches past it (one statement
/// an execution), and the kernel computes what it computes unprobed.
#[test]
fn an_instant_is_recorded_by_recording_warps_and_branched_past_by_the_others() {
    let n = 6u64;
    for (at, lanes_per_block) in [
        ("entry,lines=k.py:20", 2usize),
        ("entry,lines=k.py:20,lanes=block", 1),
    ] {
        let probes: ProbeSet = at.parse().unwrap();
        let mut a = Attached::with(ONE_LOOP, "one_loop", &probes, 1, 64, 1, n);
        a.blocks = 3;
        a.launch();
        let mut plain = Memory::default();
        run(
            &program(ONE_LOOP, "one_loop"),
            &mut plain,
            &HashMap::new(),
            &a.params,
            3,
            64,
        );
        assert_eq!(
            a.mem.load(OUT, 4),
            plain.load(OUT, 4),
            "{at}: the kernel's own result"
        );
        let t = &a.traces()[0];
        assert_eq!(t.lanes.len(), lanes_per_block, "{at}");
        for l in &t.lanes {
            assert_eq!(l.instants.len(), n as usize, "{at}: lane {} instants", l.id);
        }
        let issued = |b, w| a.mem.issued[&(b, w)] - plain.issued[&(b, w)];
        let (own, off) = (issued(0, 0), issued(2, 0));
        // The init's statements (a lane per block: the warp's vote first, then the
        // block's test), a branch an execution, the branch past the finalize.
        let block = lanes_per_block == 1;
        let most = OFF_BLOCK_INIT + 3 + n as usize + if block { OFF_WARP_INIT - 1 } else { 0 };
        assert!(
            off <= most,
            "{at}: a warp of block 2 issued {off} probe statements, more than {most}"
        );
        assert!(
            own > off + 10 * n as usize,
            "{at}: {own} probe statements recording, {off} not"
        );
        if block {
            let second = issued(0, 1);
            assert!(
                second <= OFF_WARP_INIT + 3 + n as usize,
                "{at}: block 0's second warp issued {second} probe statements"
            );
        }
    }
}

/// A launch of more blocks than the buffer has lanes for (`ikp.triton` records the first
/// `max_blocks` blocks of each launch): the first block records what a launch of that
/// block alone records (the buffer word for word), the kernel computes what it computes
/// unprobed, and the warps of the blocks past the lanes run past the lane's init, its
/// placement and its finalize: in straight-line code they issue
/// [`OFF_BLOCK_INIT`] statements of the probes and a branch (a lane per block: after the
/// warp's vote), and past each loop's begin and end, whose records they branch past
/// ([`LOOP_ENTRY`]); a lane per warp or per block, over two epochs.
#[test]
fn blocks_past_the_buffers_lanes_run_past_the_lanes_probes() {
    for at in ["entry,loops", "entry,loops,lanes=block"] {
        let probes: ProbeSet = at.parse().unwrap();
        for (ptx, name, straight) in [
            (STRAIGHT, "straight", true),
            (ROW, "row", true),
            (EARLY_RET, "early", false),
            (ONE_LOOP, "one_loop", false),
            (TRIANGULAR, "tri", false),
            (DIVERGENT, "div_loop", false),
        ] {
            let mut sampled = Attached::with(ptx, name, &probes, 1, 64, 2, 4);
            let mut alone = Attached::with(ptx, name, &probes, 1, 64, 2, 4);
            sampled.blocks = 3;
            let mut plain = Memory::default();
            for _ in 0..2 {
                sampled.launch();
                alone.launch();
                let p = program(ptx, name);
                run(&p, &mut plain, &HashMap::new(), &sampled.params, 3, 64);
            }
            assert_eq!(
                sampled.mem.load(OUT, 4),
                plain.load(OUT, 4),
                "{at} {name}: the kernel's own result"
            );
            // Word for word where the warps past the lanes read no timer (this emulator's
            // timer runs per launch, so a read of theirs moves the first block's stamps);
            // else its spans and trip counts.
            if straight {
                assert_eq!(
                    sampled.buffer(),
                    alone.buffer(),
                    "{at} {name}: the first block's lanes"
                );
            }
            let (ts, ta) = (sampled.traces(), alone.traces());
            assert_eq!(ts.len(), 2, "{at} {name}");
            for (s, a) in ts.iter().zip(&ta) {
                assert_eq!(s.lanes.len(), a.lanes.len(), "{at} {name}");
                assert_eq!(s.spans.len(), a.spans.len(), "{at} {name}");
                assert_eq!(s.samples.value, a.samples.value, "{at} {name}");
            }
            for warp in 0..2 {
                // Over both launches (the plain kernel ran twice too).
                let issued = |b, w| sampled.mem.issued[&(b, w)] - plain.issued[&(b, w)];
                // Against the first block's first warp, which records.
                let (off, own) = (issued(2, warp), issued(0, 0));
                // A lane per block: its first warp takes the warp's vote first
                // ([`OFF_WARP_INIT`], the layout's load counted once).
                let block = at.contains("lanes=block");
                let init = OFF_BLOCK_INIT + 1 + if block { OFF_WARP_INIT - 1 } else { 0 };
                // Elsewhere: the loops' resets, a branch past each exit's finalize (up
                // to three), and what a loop entry issues ([`LOOP_ENTRY`]), as many as a
                // recording warp of the first block entered at most (the same code).
                let loops = sampled.layout.counters.len();
                let entries: usize = ta
                    .iter()
                    .map(|t| t.lanes.iter().map(|l| l.spans.len()).max().unwrap_or(0))
                    .sum();
                let most = if straight {
                    2 * init
                } else {
                    2 * (init + 2 * loops + 3) + LOOP_ENTRY * entries
                };
                assert!(
                    off <= most,
                    "{at} {name}: warp {warp} of block 2 issued {off} probe statements, more than {most}"
                );
                assert!(
                    off < own,
                    "{at} {name}: warp {warp} of block 2 issued {off} probe statements, of block 0 {own}"
                );
            }
        }
    }
}

/// PTX statements of the init a warp that records nothing (`lanes=block`, every warp but
/// a block's first) issues before its branch, loops' resets aside: the active mask, the
/// layout's load, the thread index (7), its warp, a compare, the vote and the branch.
/// Past it, such a warp issues two statements a loop (their resets), a branch past the
/// placement and past each exit's finalize (once a part of the warp that leaves there:
/// up to three, say), and per loop entry a branch past its end and its begin, or, where
/// the begin is deferred (an innermost loop), the begin run predicated: its trip reset,
/// timer read, recording thread and owner ([`LOOP_ENTRY`]).
const OFF_WARP_INIT: usize = 13;

/// PTX statements a warp that records nothing issues per loop entry, at most: a deferred
/// begin's seven (its trip reset, the timer read, four choosing the recording thread, the
/// owner) and the branch past the end.
const LOOP_ENTRY: usize = 8;

/// A lane per block (`lanes=block`): each block's first warp records into the block's lane
/// what it records as a lane per warp (records, drops, spans and trip counts); the other
/// warps run past every probe; the kernels compute what they compute unprobed; over
/// several epochs too.
#[test]
fn a_lane_per_block_is_its_first_warps_lane() {
    let block: ProbeSet = "entry,loops,lanes=block".parse().unwrap();
    let (blocks, warps) = (3u64, 2usize);
    for (ptx, name) in [
        (ONE_LOOP, "one_loop"),
        (TRIANGULAR, "tri"),
        (DIVERGENT, "div_loop"),
        (ROW, "row"),
        (STRAIGHT, "straight"),
        (EARLY_RET, "early"),
    ] {
        for epochs in [1, 2] {
            let mut b = Attached::with(ptx, name, &block, blocks, 64, epochs, 4);
            let mut w = Attached::new(ptx, name, blocks, 64, epochs, 4);
            for _ in 0..epochs {
                b.launch();
                w.launch();
            }
            assert_eq!(
                b.mem.load(OUT, 4),
                w.mem.load(OUT, 4),
                "{name}: the kernel's own result"
            );
            assert_eq!(b.layout.groups_per_block, 1, "{name}");
            // Warp 1 records nothing: past the init's vote it issues a branch a probe (the
            // placement, a loop's begin and end, the exit's finalize), where as a lane per
            // warp it issues every probe.
            let mut plain = Memory::default();
            for _ in 0..epochs {
                run(
                    &program(ptx, name),
                    &mut plain,
                    &HashMap::new(),
                    &w.params,
                    blocks,
                    64,
                );
            }
            let issued = |m: &Memory| m.issued[&(0, 1)];
            let (off, own) = (
                issued(&b.mem) - issued(&plain),
                issued(&w.mem) - issued(&plain),
            );
            let loops = b.layout.counters.len();
            let entries: usize = w.traces().iter().map(|t| t.lanes[1].spans.len()).sum();
            let most = epochs as usize * (OFF_WARP_INIT + 2 * loops + 4) + LOOP_ENTRY * entries;
            assert!(
                off <= most,
                "{name}: warp 1 issued {off} probe statements, more than {most}"
            );
            assert!(
                own > 3 * off,
                "{name}: {own} probe statements as a lane per warp, {off} as none"
            );
            let (tb, tw) = (b.traces(), w.traces());
            assert_eq!(tb.len(), epochs as usize, "{name}");
            for (e, (tb, tw)) in tb.iter().zip(&tw).enumerate() {
                assert_eq!(tb.lanes.len(), blocks as usize, "{name} epoch {e}");
                for (i, lane) in tb.lanes.iter().enumerate() {
                    let first = &tw.lanes[i * warps];
                    assert_eq!(first.warp, Some(0));
                    assert_eq!(
                        (lane.written, lane.dropped, lane.finalized, lane.block),
                        (first.written, first.dropped, first.finalized, first.block),
                        "{name} epoch {e} lane {i}"
                    );
                    assert_eq!(
                        lane.spans.len(),
                        first.spans.len(),
                        "{name} epoch {e} lane {i}"
                    );
                    assert_eq!(
                        tb.samples.value[lane.samples.clone()],
                        tw.samples.value[first.samples.clone()],
                        "{name} epoch {e} lane {i}"
                    );
                }
                let d = &tb.diagnostics;
                assert!(
                    d.unmatched_begin.is_empty() && d.unmatched_end.is_empty(),
                    "{name}: {d:?}"
                );
            }
        }
    }
}

/// A row-wise kernel with a load of its own in its entry, before which the lane is not
/// placed (`emit::place`): each warp adds `n` to the word at `p` (its threads load it
/// together, then store), so after `L` launches of `W` warps it holds `L * W * n`.
const ROW: &str = ".version 8.0\n.target sm_90\n.address_size 64\n\
.visible .entry row(.param .u64 p, .param .u32 n)\n.reqntid 64\n{\n\
.reg .b32 %r<3>;\n.reg .b64 %rd<2>;\n\
.loc 1 10 1\nld.param.u64 %rd1, [p];\nld.param.u32 %r1, [n];\nld.global.u32 %r2, [%rd1];\n\
add.s32 %r2, %r2, %r1;\nst.global.u32 [%rd1], %r2;\nret;\n}\n.file 1 \"r.py\"\n";

/// Epochs with the claim off the critical path: each warp's launches fill its epochs 0 to
/// `epochs - 1` in launch order (each epoch decodes to one whole launch: every lane,
/// finalized, with the single-epoch run's records, later than the epoch before), the
/// launches past them record nothing (the buffer changes only in the launch counters,
/// which count every launch), and the kernels compute what they compute unprobed.
#[test]
fn launches_fill_the_epochs_in_order_and_the_ones_past_them_record_nothing() {
    let (blocks, epochs, extra, n) = (2u64, 3u32, 2u32, 4u64);
    let warps = 2 * blocks as usize;
    // (kernel, spans and samples per lane)
    let kernels: [(&str, &str, usize, Vec<u32>); 5] = [
        (STRAIGHT, "straight", 0, vec![]),
        (ROW, "row", 0, vec![]),
        (ONE_LOOP, "one_loop", 1, vec![4]),
        (TRIANGULAR, "tri", 5, vec![1, 2, 3, 4, 4]),
        // Each warp's loop is begun and ended by one of its odd threads, not the thread that
        // claimed the epoch (lane 0): the claim reached it by the broadcast.
        (
            DIVERGENT,
            "div_loop",
            1,
            vec![div_loop_owner_trips(DIVERGENT, 4)],
        ),
    ];
    for (ptx, name, spans, samples) in kernels {
        let mut a = Attached::new(ptx, name, blocks, 64, epochs, n);
        // The kernel unprobed, launch by launch: what it computes.
        let mut plain = Memory::default();
        let plain_prog = program(ptx, name);
        let mut launch = |a: &mut Attached, i: u32| {
            a.launch();
            run(
                &plain_prog,
                &mut plain,
                &HashMap::new(),
                &a.params,
                blocks,
                64,
            );
            assert_eq!(a.mem.load(OUT, 4), plain.load(OUT, 4), "{name}: launch {i}");
        };
        for i in 0..epochs {
            launch(&mut a, i);
        }
        let full = a.mem.words.clone();
        let traces = a.traces();
        assert_eq!(traces.len(), epochs as usize, "{name}: one trace per epoch");
        let mut last_end = 0;
        for (e, t) in traces.iter().enumerate() {
            assert_eq!(t.source.epoch.map(|s| s.index), Some(e as u32), "{name}");
            assert_eq!(t.lanes.len(), warps, "{name} epoch {e}");
            for lane in &t.lanes {
                assert!(
                    lane.finalized && lane.dropped == 0,
                    "{name} epoch {e}: {lane:?}"
                );
                assert!(
                    lane.start > last_end,
                    "{name} epoch {e}: after the epoch before"
                );
            }
            last_end = t.lanes.iter().map(|l| l.end).max().unwrap();
            assert_eq!(t.spans.len(), warps * spans, "{name} epoch {e}");
            assert_eq!(t.samples.value, samples.repeat(warps), "{name} epoch {e}");
            let d = &t.diagnostics;
            assert!(
                d.unmatched_begin.is_empty() && d.unmatched_end.is_empty() && d.backward_steps == 0,
                "{name} epoch {e}: {d:?}"
            );
        }
        for i in epochs..epochs + extra {
            launch(&mut a, i);
        }
        // Every word of memory, the buffer's and beyond it, as it was, but the launch
        // counters and the kernel's own output.
        let counter = |w: &u64| {
            let i = w.wrapping_sub(BUF) / 8;
            i >= a.layout.header_len() && i < a.layout.header_len() + a.layout.lane_count()
        };
        let mut written: Vec<u64> = a.mem.words.keys().chain(full.keys()).copied().collect();
        written.sort();
        written.dedup();
        for w in written.into_iter().filter(|&w| w != OUT) {
            let (was, is) = (full.get(&w), a.mem.words.get(&w));
            if counter(&w) {
                assert_eq!(
                    is,
                    Some(&u64::from(epochs + extra)),
                    "{name}: launch counter {w:#x}"
                );
            } else {
                assert_eq!(
                    was, is,
                    "{name}: {w:#x} written by a launch past the epochs"
                );
            }
        }
    }
}

/// Where the lane is placed (`emit::place`, the first read of the epoch claim): at the end
/// of the entry's straight-line code, after the kernel's own loads (`ROW`: before its
/// `ret`); past an innermost loop the entry runs whole (`ONE_LOOP`); before a guarded
/// `ret` (`DIVERGENT`); at the top where the entry leads into a loop it cannot run whole
/// (`TRIANGULAR`'s outer loop: ptxas would stop unrolling it).
#[test]
fn the_lane_is_placed_where_the_entry_ends() {
    let cases = [
        (ROW, "ld.global.u32 %r2, [%rd1];", "\nret;"),
        (ONE_LOOP, "@%p1 bra $L1;", "ikp: loop end"),
        (DIVERGENT, "setp.ge.u32 %p3, %r3, 40;", "@%p3 bra"),
        (TRIANGULAR, "ikp: lane init", "$OUTER:"),
    ];
    for (ptx, after, before) in cases {
        let out = instrument(ptx, &ProbeSet::default()).unwrap().ptx;
        let at = |needle: &str| {
            out.find(needle)
                .unwrap_or_else(|| panic!("{needle}: {out}"))
        };
        let place = at("ikp: lane place");
        assert!(at(after) < place && place < at(before), "{out}");
        assert_eq!(out.matches("ikp: lane place").count(), 1);
    }
}

/// A triangular nest: the outer loop runs `n` times; the inner one, whose preheader is the
/// outer loop's header (its set-up `mov` there, as compilers lay it out), runs `i + 1` times
/// in the outer loop's `i`th iteration. Each thread stores the inner loop's total.
const TRIANGULAR: &str = ".version 8.0\n.target sm_90\n.address_size 64\n\
.visible .entry tri(.param .u64 p, .param .u32 n)\n.reqntid 64\n{\n\
.reg .pred %p<3>;\n.reg .b32 %r<6>;\n.reg .b64 %rd<3>;\n\
.loc 1 10 1\nld.param.u64 %rd1, [p];\nld.param.u32 %r1, [n];\nmov.u32 %r2, 0;\nmov.u32 %r5, 0;\n\
$OUTER:\n.loc 1 20 1\nmov.u32 %r4, 0;\n\
$INNER:\n.loc 1 21 1\nadd.s32 %r5, %r5, 1;\nadd.s32 %r4, %r4, 1;\nsetp.le.s32 %p1, %r4, %r2;\n@%p1 bra $INNER;\n\
.loc 1 22 1\nadd.s32 %r2, %r2, 1;\nsetp.lt.s32 %p2, %r2, %r1;\n@%p2 bra $OUTER;\n\
.loc 1 30 1\nst.global.u32 [%rd1], %r5;\nret;\n}\n.file 1 \"t.py\"\n";

/// The inner loop's begin sits at the top of its preheader (the outer loop's header, after
/// the outer trip add): every inner entry is recorded once, with its exact trip count, and
/// both loops' counters total what the kernel ran.
#[test]
fn a_loop_begun_at_the_top_of_its_preheader_counts_exact_trips() {
    let n = 5u64;
    let (traces, stored, _) = emulate_kernel(TRIANGULAR, "tri", 2, 64, 1, 1, n);
    assert_eq!(stored, n * (n + 1) / 2, "the kernel's own result");
    let t = &traces[0];
    assert_eq!(t.names.regions, ["t.py:20 loop", "t.py:21 loop"]);
    assert_eq!(t.lanes.len(), 4);
    // Per lane: the outer span and n inner spans.
    assert_eq!(t.spans.len(), 4 * (1 + n as usize));
    let inner: Vec<u32> = (1..=n as u32).collect();
    for lane in 0..4 {
        let per_lane = &t.samples.value[lane * (n as usize + 1)..(lane + 1) * (n as usize + 1)];
        let (last, first) = per_lane.split_last().unwrap();
        assert_eq!((first, *last), (inner.as_slice(), n as u32), "lane {lane}");
    }
    assert_eq!(
        t.counter_totals,
        [n, n * (n + 1) / 2].repeat(4),
        "outer and inner totals per lane"
    );
    let d = &t.diagnostics;
    assert!(
        d.unmatched_begin.is_empty() && d.unmatched_end.is_empty() && d.backward_steps == 0,
        "{d:?}"
    );
}

/// A kernel without loops: entry probes only, and no memory operation of its own but
/// its store.
const STRAIGHT: &str = ".version 8.0\n.target sm_90\n.address_size 64\n\
.visible .entry straight(.param .u64 p, .param .u32 n)\n.reqntid 64\n{\n\
.reg .b32 %r<2>;\n.reg .b64 %rd<2>;\n\
.loc 1 10 1\nld.param.u64 %rd1, [p];\nld.param.u32 %r1, [n];\nst.global.u32 [%rd1], %r1;\nret;\n}\n\
.file 1 \"s.py\"\n";

/// Entry without a round trip: the lane init reads its layout from the symbol (constant
/// loads), so it runs no global load and, with one epoch, no atomic; the epoch claim is
/// one atomic per warp when there are more; the finalize one reduction per warp.
#[test]
fn the_lane_init_runs_no_global_load_and_no_atomic_with_one_epoch() {
    let warps = 4; // 2 blocks of 2 warps
    for (epochs, claims) in [(1, 0), (2, warps)] {
        let (traces, stored, ops) = emulate_kernel(STRAIGHT, "straight", 2, 4, epochs, 1, 9);
        assert_eq!(stored, 9);
        assert_eq!(traces[0].lanes.len(), warps);
        assert!(traces[0]
            .lanes
            .iter()
            .all(|l| l.finalized && l.end > l.start));
        assert_eq!(
            ops,
            Ops {
                global_loads: 0,
                atomics: claims,
                reductions: warps,
            },
            "{epochs} epochs"
        );
    }
}

/// A module whose symbol was never set (all zero, as loaded) runs with its probes off: the
/// kernel's own result, no other write, no global load, atomic or reduction.
#[test]
fn an_unattached_module_runs_with_its_probes_off() {
    for (ptx, name) in [(ONE_LOOP, "one_loop"), (TRIANGULAR, "tri")] {
        let out = instrument(ptx, &ProbeSet::default()).unwrap();
        let k = out.manifest.kernel(name).unwrap();
        let mut mem = Memory::default();
        let symbols = HashMap::from([(k.symbol.clone(), SYM)]);
        let params = HashMap::from([("p".to_string(), OUT), ("n".to_string(), 4)]);
        run(&program(&out.ptx, name), &mut mem, &symbols, &params, 2, 64);
        let want = if name == "tri" { 10 } else { 4 };
        assert_eq!(mem.load(OUT, 4), want, "{name}: the kernel's own result");
        assert_eq!(
            mem.words.keys().copied().collect::<Vec<_>>(),
            [OUT],
            "{name}"
        );
        assert_eq!(mem.ops, Ops::default(), "{name}");
    }
}

/// Threads 0 to 7 of each warp return before the loop; its preheader is split by labels
/// nothing branches to (as Triton's `$L__tmp` debug labels split them).
const EARLY_RET: &str = ".version 8.0\n.target sm_90\n.address_size 64\n\
.visible .entry early(.param .u64 p, .param .u32 n)\n.reqntid 64\n{\n\
.reg .pred %p<4>;\n.reg .b32 %r<6>;\n.reg .b64 %rd<3>;\n\
.loc 1 10 1\nld.param.u64 %rd1, [p];\nld.param.u32 %r1, [n];\nmov.u32 %r3, %tid.x;\n\
and.b32 %r4, %r3, 31;\nsetp.lt.u32 %p3, %r4, 8;\n@%p3 ret;\n\
$Ltmp0:\nmov.u32 %r2, 0;\n$Ltmp1:\nmov.u32 %r5, 0;\n\
$L1:\n.loc 1 20 1\nadd.s32 %r2, %r2, 1;\nsetp.lt.s32 %p1, %r2, %r1;\n@%p1 bra $L1;\n\
.loc 1 30 1\nst.global.u32 [%rd1], %r2;\nret;\n}\n.file 1 \"e.py\"\n";

/// The begin goes up to the top of the preheader's basic block across labels nothing
/// branches to, but not past a guarded `ret`: the threads that return never begin the
/// loop, and each warp's loop is recorded once, by a thread that stays, with its trips.
#[test]
fn a_begin_moves_up_across_debug_labels_but_not_past_a_return() {
    let out = instrument(EARLY_RET, &ProbeSet::default()).unwrap();
    let begin = out.ptx.find("mov.u32 %ikp_t0, %globaltimer_lo;").unwrap();
    let (tmp0, ret) = (
        out.ptx.find("$Ltmp0:").unwrap(),
        out.ptx.find("@%p3 bra").unwrap(),
    );
    assert!(ret < tmp0 && tmp0 < begin, "{}", out.ptx);
    assert!(
        begin < out.ptx.find("mov.u32 %r2, 0;").unwrap(),
        "{}",
        out.ptx
    );
    let (traces, stored, _) = emulate_kernel(EARLY_RET, "early", 2, 16, 1, 1, 6);
    assert_eq!(stored, 6);
    let t = &traces[0];
    assert_eq!(t.lanes.len(), 4);
    assert_eq!(t.spans.len(), 4);
    assert_eq!(t.samples.value, vec![6; 4]);
    let d = &t.diagnostics;
    assert!(
        d.unmatched_begin.is_empty() && d.unmatched_end.is_empty(),
        "{d:?}"
    );
}

/// A full lane in a nest: the outer loop's begin is its own record, the inner loop's
/// entries are recorded whole at their ends (three slots at once); what does not fit is
/// dropped newest first, and counted exactly.
#[test]
fn a_full_lane_in_a_nest_counts_its_drops_exactly() {
    // Four slots, n = 2: the outer begin (1), the first inner entry (3); the second inner
    // entry (3) and the outer end with its sample (2) are dropped.
    let (traces, stored, _) = emulate_kernel(TRIANGULAR, "tri", 1, 4, 1, 1, 2);
    assert_eq!(stored, 3);
    let t = &traces[0];
    for lane in &t.lanes {
        assert_eq!((lane.written, lane.dropped), (4, 5));
    }
    assert_eq!(t.spans.len(), 2, "one inner span per warp");
    assert_eq!(t.samples.value, vec![1, 1]);
    assert_eq!(t.diagnostics.unmatched_begin.len(), 2, "the outer begins");
}
