//! Instrument kernels nobody edited: ikp probes written into a PTX module.
//!
//! [`instrument`] reads a PTX module (from nvcc `--ptx`/`-keep`, Triton, CuTe DSL, any
//! LLVM NVPTX output), and writes it again with ikp records at the points a [`ProbeSet`]
//! asks for: every kernel's entry and exits (a lane init and finalize; always), each loop
//! (a region per loop: begin on every edge that enters it, end on every edge that leaves
//! it, and the trip count as a sample of the loop's counter) and the source lines chosen by `.loc`
//! (an instant at the first instruction of each basic block on such a line). Lanes are
//! warps; `emit` says what happens when a warp diverges. The records are the native
//! wire format's ([`ikp_device::wire`]), into a buffer laid out by the host exactly as for
//! an `ikp.cuh` kernel, so every reader of ikp reads them.
//!
//! **No signature change.** A kernel's parameter list is left byte for byte as it was:
//! the buffer's address and layout come from a module-scope block in the constant bank,
//! one per kernel ([`KernelProbes::symbol`], [`symbol_words`]), which the host sets after
//! loading the module (`cuModuleGetGlobal`; [`crate::cuda::HostSession::attach_probes`],
//! or the Python package's `ikp.triton`). While it is zero (not set) every probe is off,
//! so an instrumented module still runs correctly on its own.
//!
//! What the pass does not understand it refuses, naming the line and the reason
//! ([`InstrumentError::Unsupported`]): an indirect branch, irreducible control flow, a
//! kernel that sets its register count (`setmaxnreg`), a module already instrumented.
//! It never rewrites what it did not read.

mod cfg;
mod emit;
mod manifest;
mod ptx;
pub mod report;
mod rewrite;

pub use manifest::{KernelProbes, Manifest, Probe, ProbeKind, MANIFEST_VERSION};

use std::fmt;
use std::str::FromStr;

/// Why a module could not be instrumented.
#[derive(Debug, thiserror::Error)]
pub enum InstrumentError {
    /// No `.version` / `.target` directive: this is not PTX text.
    #[error("not a PTX module (no .version and .target directives)")]
    NotPtx,
    /// The module has no kernel (`.entry`).
    #[error("the module has no kernel (.entry) to instrument")]
    NoKernel,
    /// The module was instrumented already.
    #[error("the module is already instrumented by ikp (it declares {0})")]
    AlreadyInstrumented(String),
    /// Something the instrumenter will not rewrite.
    #[error("PTX line {line}: {reason}")]
    Unsupported {
        /// 1-based line in the input module.
        line: usize,
        /// What is there and why it is refused.
        reason: String,
    },
    /// More regions than a buffer can name.
    #[error("kernel {kernel} would need more than {max} regions: choose fewer probes")]
    TooManyRegions {
        /// The kernel.
        kernel: String,
        /// [`ikp_device::wire::MAX_REGIONS`].
        max: u32,
    },
    /// More loops than a buffer has counters for their trip counts.
    #[error(
        "kernel {kernel} has more than {max} loops: probe fewer (--at without loops, or lines=...)"
    )]
    TooManyLoops {
        /// The kernel.
        kernel: String,
        /// [`ikp_device::wire::MAX_COUNTERS`].
        max: u32,
    },
    /// A probe selection that does not parse.
    #[error("probe selection `{0}`: expected a comma-separated list of entry, loops, lines=FILE:FIRST[-LAST] and lanes=warp|block")]
    BadSelection(String),
}

/// Source lines chosen by `.loc`: a file (matched against the end of `.file`'s path) and
/// an inclusive line range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineRange {
    /// `attn.py`, or a longer path suffix.
    pub file: String,
    /// First line.
    pub first: u32,
    /// Last line (inclusive).
    pub last: u32,
}

impl LineRange {
    fn contains(&self, path: &str, line: u32) -> bool {
        (self.first..=self.last).contains(&line)
            && (path == self.file || path.ends_with(&format!("/{}", self.file)))
    }
}

/// Which probes to insert. Lane init and finalize (`entry`) are always inserted: every
/// record needs them.
///
/// Parsed from the command line's `--at` list (`entry,loops,lines=attn.py:40-60`; `lines`
/// may be given more than once; `lanes=block` for a lane per block).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbeSet {
    /// A region per loop.
    pub loops: bool,
    /// Instants at these source lines.
    pub lines: Vec<LineRange>,
    /// What a lane is.
    pub lanes: LaneUnit,
}

/// What one lane of an instrumented kernel's buffer records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LaneUnit {
    /// A lane per warp (`lanes=warp`, the default): every warp records its start, end and
    /// probes.
    #[default]
    Warp,
    /// A lane per block (`lanes=block`), recorded by the block's first warp; the other
    /// warps branch past every probe (a few instructions each). For kernels of many short
    /// blocks whose warps run the same code (a Triton program per row), where every warp's
    /// init and finalize cost most of the probes' time.
    Block,
}

impl Default for ProbeSet {
    /// Entry and loops, a lane per warp.
    fn default() -> Self {
        ProbeSet {
            loops: true,
            lines: Vec::new(),
            lanes: LaneUnit::Warp,
        }
    }
}

impl FromStr for ProbeSet {
    type Err = InstrumentError;

    fn from_str(s: &str) -> Result<ProbeSet, InstrumentError> {
        let bad = || InstrumentError::BadSelection(s.to_string());
        let mut set = ProbeSet {
            loops: false,
            lines: Vec::new(),
            lanes: LaneUnit::Warp,
        };
        for item in s.split(',').map(str::trim) {
            match item {
                "entry" => {}
                "loops" => set.loops = true,
                "lanes=warp" => set.lanes = LaneUnit::Warp,
                "lanes=block" => set.lanes = LaneUnit::Block,
                _ => {
                    let spec = item.strip_prefix("lines=").ok_or_else(bad)?;
                    let (file, range) = spec.rsplit_once(':').ok_or_else(bad)?;
                    let (first, last) = range.split_once('-').unwrap_or((range, range));
                    let (first, last) = (
                        first.parse().map_err(|_| bad())?,
                        last.parse().map_err(|_| bad())?,
                    );
                    if file.is_empty() || first > last {
                        return Err(bad());
                    }
                    set.lines.push(LineRange {
                        file: file.to_string(),
                        first,
                        last,
                    });
                }
            }
        }
        Ok(set)
    }
}

impl fmt::Display for ProbeSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("entry")?;
        if self.loops {
            f.write_str(",loops")?;
        }
        for r in &self.lines {
            write!(f, ",lines={}:{}-{}", r.file, r.first, r.last)?;
        }
        if self.lanes == LaneUnit::Block {
            f.write_str(",lanes=block")?;
        }
        Ok(())
    }
}

/// An instrumented module: its text and what each kernel records.
#[derive(Clone, Debug)]
pub struct Instrumented {
    /// The PTX to load instead of the input.
    pub ptx: String,
    /// Per kernel: the buffer symbol, warps per block, region names, probes.
    pub manifest: Manifest,
}

/// Words of a kernel's buffer symbol ([`symbol_words`]).
pub const SYMBOL_WORDS: usize = ikp_device::probe_symbol::WORDS;

/// The buffer header's first words that [`symbol_words`] reads.
pub const SYMBOL_HEADER_WORDS: usize = ikp_device::wire::hdr::EPOCHS + 1;

/// What the host writes into a kernel's buffer symbol (`cuModuleGetGlobal`, one copy of
/// [`SYMBOL_WORDS`] words) to point it at a buffer at device address `buffer` whose header
/// starts with `header` (as written at the buffer's start): [`ikp_device::probe_symbol`]
/// (`# Format` there) of the layout the header describes. A null `buffer`, or fewer than
/// [`SYMBOL_HEADER_WORDS`] header words, gives zeros, which turn the probes off.
pub fn symbol_words(buffer: u64, header: &[u64]) -> [u64; SYMBOL_WORDS] {
    use ikp_device::wire::{hdr, KernelArg, HDR_HI_SHIFT};
    if header.len() < SYMBOL_HEADER_WORDS {
        return [0; SYMBOL_WORDS];
    }
    let lo = |i: usize| header[i] as u32;
    let hi = |i: usize| (header[i] >> HDR_HI_SHIFT) as u32;
    let lane_count = lo(hdr::LANES);
    ikp_device::probe_symbol::words(&KernelArg {
        buf: buffer,
        lane_base: hi(hdr::VERSION) + lane_count,
        lane_stride: lo(hdr::STRIDE),
        records_per_lane: hi(hdr::LANES),
        groups_per_block: lo(hdr::GROUPS),
        lane_count,
        n_counters: 0,
        epochs: lo(hdr::EPOCHS),
        flags: 0,
    })
}

/// The buffer symbol of kernel `name`.
pub fn symbol_of(kernel: &str) -> String {
    format!("ikp_buf_{kernel}")
}

/// Instruments every kernel of a PTX module.
///
/// ```
/// use ikp_host::instrument::{instrument, ProbeSet};
/// let ptx = ".version 8.0\n.target sm_80\n.address_size 64\n\
///            .visible .entry k(.param .u32 n)\n.reqntid 64\n{\n.reg .pred %p<2>;\n.reg .b32 %r<3>;\n\
///            ld.param.u32 %r1, [n];\nmov.u32 %r2, 0;\n$L1:\nadd.s32 %r2, %r2, 1;\n\
///            setp.lt.s32 %p1, %r2, %r1;\n@%p1 bra $L1;\nret;\n}\n";
/// let out = instrument(ptx, &ProbeSet::default())?;
/// let k = &out.manifest.kernels[0];
/// assert_eq!((k.symbol.as_str(), k.warps_per_block), ("ikp_buf_k", Some(2)));
/// assert_eq!(k.regions, ["k loop at $L1"]);
/// assert!(out.ptx.contains(".visible .const .align 16 .u64 ikp_buf_k[6] = {0, 0, 0, 0, 0, 0};"));
/// # Ok::<(), ikp_host::instrument::InstrumentError>(())
/// ```
pub fn instrument(ptx: &str, probes: &ProbeSet) -> Result<Instrumented, InstrumentError> {
    let module = ptx::Module::parse(ptx)?;
    if module.kernels.is_empty() {
        return Err(InstrumentError::NoKernel);
    }
    if let Some(at) = ptx.find("ikp_buf_").or_else(|| ptx.find("%ikp_")) {
        let word: String = ptx[at..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || "_%$".contains(*c))
            .collect();
        return Err(InstrumentError::AlreadyInstrumented(word));
    }
    let mut edits = Vec::new();
    let mut kernels = Vec::new();
    let mut decls = String::from("\n// ikp: each kernel's record buffer, set by the host\n");
    for k in &module.kernels {
        let symbol = symbol_of(&k.name);
        let (e, probes) = rewrite::kernel(&module, k, probes, &symbol)?;
        decls += &emit::symbol_decl(&symbol);
        edits.extend(e);
        kernels.push(probes);
    }
    edits.push(rewrite::Edit {
        at: module.header_end,
        order: 0,
        end: None,
        text: decls,
    });
    Ok(Instrumented {
        ptx: rewrite::apply(ptx, edits),
        manifest: Manifest {
            version: MANIFEST_VERSION,
            target: module.target.clone(),
            probes: probes.to_string(),
            kernels,
        },
    })
}

/// The parameter list of each kernel of a module, as written: instrumenting leaves them
/// byte for byte as they were.
pub fn kernel_params(ptx: &str) -> Result<Vec<(String, String)>, InstrumentError> {
    let module = ptx::Module::parse(ptx)?;
    Ok(module
        .kernels
        .iter()
        .map(|k| (k.name.clone(), ptx[k.params.clone()].to_string()))
        .collect())
}

/// The `.target` architecture of a module (`sm_90a`).
pub fn target_of(ptx: &str) -> Result<String, InstrumentError> {
    let module = ptx::Module::parse(ptx)?;
    Ok(module
        .target
        .split(',')
        .next()
        .unwrap_or("")
        .trim()
        .to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn module(body: &str) -> String {
        format!(".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k(.param .u64 p)\n.reqntid 96, 1, 1\n{{\n.reg .pred %p<3>;\n.reg .b32 %r<4>;\n{body}\n}}\n")
    }

    fn refused(ptx: &str) -> String {
        instrument(ptx, &ProbeSet::default())
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn refuses_with_the_line_and_the_reason() {
        let e = refused(&module(
            "mov.u32 %r1, 0;\nsetmaxnreg.inc.sync.aligned.u32 240;\nret;",
        ));
        assert!(
            e.starts_with("PTX line 10: kernel k sets its warps' register count (setmaxnreg)"),
            "{e}"
        );
        let e = refused(&module("brx.idx %r1, $T;\nret;"));
        assert!(e.contains("PTX line 9:") && e.contains("brx.idx"), "{e}");
        assert_eq!(
            refused("int main() {}"),
            "not a PTX module (no .version and .target directives)"
        );
        assert_eq!(
            refused(".version 8.0\n.target sm_80\n.address_size 64\n"),
            InstrumentError::NoKernel.to_string()
        );
        let once = instrument(&module("ret;"), &ProbeSet::default())
            .unwrap()
            .ptx;
        assert!(refused(&once).contains("already instrumented"));
        let e = refused(&module("@%p1 bra $Nowhere;\nret;"));
        assert!(e.contains("not a label of the kernel"), "{e}");
    }

    /// The recording thread comes from `elect.sync` where the module may use it (sm_90 and
    /// later, PTX ISA 8.0 and later), from the active mask elsewhere; a `.version` that is
    /// no version is no PTX.
    #[test]
    fn elect_sync_only_where_the_target_and_version_have_it() {
        let with = |version: &str, target: &str| {
            let ptx = module("ret;")
                .replacen(".version 8.0", &format!(".version {version}"), 1)
                .replacen(".target sm_90a", &format!(".target {target}"), 1);
            instrument(&ptx, &ProbeSet::default()).unwrap().ptx
        };
        assert!(with("8.0", "sm_90").contains("elect.sync"));
        assert!(with("8.7", "sm_100a").contains("elect.sync"));
        for (v, t) in [("7.8", "sm_90"), ("8.7", "sm_80"), ("8.0", "sm_75")] {
            let out = with(v, t);
            assert!(!out.contains("elect.sync"), "{v} {t}");
            assert!(out.contains("%lanemask_lt"), "{v} {t}");
        }
        assert_eq!(
            refused(&module("ret;").replacen(".version 8.0", ".version eight", 1)),
            "not a PTX module (no .version and .target directives)"
        );
    }

    #[test]
    fn selections_parse_and_print_back() {
        let s: ProbeSet = "entry,loops,lines=attn.py:40-60,lines=a/b.py:7"
            .parse()
            .unwrap();
        assert!(s.loops);
        assert_eq!(
            s.lines[1],
            LineRange {
                file: "a/b.py".into(),
                first: 7,
                last: 7
            }
        );
        assert_eq!(
            s.to_string(),
            "entry,loops,lines=attn.py:40-60,lines=a/b.py:7-7"
        );
        assert_eq!(
            "entry".parse::<ProbeSet>().unwrap(),
            ProbeSet {
                loops: false,
                lines: vec![],
                lanes: LaneUnit::Warp,
            }
        );
        let b: ProbeSet = "entry,loops,lanes=block".parse().unwrap();
        assert_eq!(b.lanes, LaneUnit::Block);
        assert_eq!(b.to_string(), "entry,loops,lanes=block");
        assert_eq!(b.to_string().parse::<ProbeSet>().unwrap(), b);
        assert_eq!(
            "loops,lanes=warp".parse::<ProbeSet>().unwrap(),
            ProbeSet::default()
        );
        for bad in [
            "lanes=thread",
            "lanes",
            "loop",
            "lines=x.py",
            "lines=:3",
            "lines=x.py:9-3",
            "lines=x.py:a",
        ] {
            assert!(bad.parse::<ProbeSet>().is_err(), "{bad}");
        }
        assert!(LineRange {
            file: "b.py".into(),
            first: 1,
            last: 9
        }
        .contains("/x/b.py", 3));
        assert!(!LineRange {
            file: "b.py".into(),
            first: 1,
            last: 9
        }
        .contains("/x/ab.py", 3));
    }

    #[test]
    fn guarded_exits_and_loop_exits_get_trampolines_and_the_rest_stays_as_it_was() {
        let ptx = module(
            "mov.u32 %r1, 0;\n@%p2 ret;\n$L1:\nadd.s32 %r1, %r1, 1;\nsetp.eq.s32 %p1, %r1, 5;\n\
             @%p1 bra $Out;\nsetp.lt.s32 %p1, %r1, 9;\n@%p1 bra $L1;\n$Out:\nret;",
        );
        let out = instrument(&ptx, &ProbeSet::default()).unwrap();
        let k = &out.manifest.kernels[0];
        assert_eq!(k.warps_per_block, Some(3));
        assert_eq!(k.regions, ["k loop at $L1"]);
        // The guarded ret and the loop's early exit branch to trampolines; the loop's
        // fall-through exit gets its end in place.
        assert!(out.ptx.contains("@%p2 bra \t$ikp_t"), "{}", out.ptx);
        assert!(out.ptx.contains("@%p1 bra $ikp_t"), "{}", out.ptx);
        assert_eq!(out.ptx.matches("\n$ikp_t").count(), 2, "{}", out.ptx);
        assert_eq!(out.ptx.matches("// ikp: lane finalize").count(), 2);
        assert_eq!(
            out.ptx.matches("// ikp: loop end").count(),
            2,
            "one end per exit edge"
        );
        assert_eq!(k.counters, ["k loop at $L1 trips"]);
        assert_eq!(
            out.ptx.matches("// ikp: loop begin").count(),
            1,
            "one begin per entry edge"
        );
        // Every original line is still there, in order.
        let mut rest = out.ptx.as_str();
        for line in ptx
            .lines()
            .filter(|l| !l.contains("@%p2 ret") && !l.contains("bra $Out"))
        {
            let at = rest.find(line).unwrap_or_else(|| panic!("lost `{line}`"));
            rest = &rest[at + line.len()..];
        }
    }
}

#[cfg(test)]
mod damaged {
    use super::*;
    use proptest::prelude::*;

    const PTX: &str = include_str!("../../tests/ptx/triton/softmax_looped_kernel.ptx");

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        /// Any cut, deletion or stray character gives an instrumented module or an error,
        /// never a panic; what is instrumented keeps its parameters.
        #[test]
        fn damaged_ptx_is_refused_or_instrumented_never_a_panic(
            cut in 0usize..PTX.len(),
            del in 0usize..PTX.len(),
            len in 0usize..40,
            ch in prop::sample::select(vec!['{', '}', ';', ':', '@', '$', '(', ')', '"', '/', '\n']),
        ) {
            let mut bad: String = PTX[..cut].to_string();
            bad.push(ch);
            let rest = &PTX[cut..];
            let del = del.min(rest.len());
            bad.push_str(&rest[..del]);
            bad.push_str(&rest[(del + len).min(rest.len())..]);
            for probes in ["entry,loops", "entry,lines=triton-ptx-fixtures.py:1-999"] {
                if let Ok(out) = instrument(&bad, &probes.parse().unwrap()) {
                    prop_assert_eq!(kernel_params(&bad).unwrap(), kernel_params(&out.ptx).unwrap());
                }
            }
        }
    }
}
