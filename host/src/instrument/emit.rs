//! The PTX text of each probe. Every constant of the record and lane layout comes from
//! [`ikp_device::wire`], so instrumented PTX writes the same buffer `ikp.cuh` writes and
//! the native decoder reads it unchanged.
//!
//! **Warps without a lane run past their lane's probes.** `ikp.triton` records the first
//! `max_blocks` blocks of a launch (1024) and `launches` launches (16): on a row-wise kernel
//! of 8,192 rows and later launches most warps have no lane, and a probe predicated off
//! costs such a warp what it costs a recording warp (the issue slots). So the init tests
//! the block first (its first lane within the layout's lanes: warp-uniform arithmetic on
//! constants, a branch ptxas takes without a vote) and a warp of a block past the lanes
//! branches past the rest of the init, the placement and the finalize ([`skipped`]): some
//! 4 to 14 SASS instructions (its x index tested first) where it ran the whole init and
//! finalize (50 to 70).
//! `%ikp_on` is a warp vote's result from the init on, narrowed by a second vote at the
//! placement (a launch past the epochs), so the branches on it are warp-uniform. A
//! recording warp pays the branches and votes (about 5 instructions); where the
//! placement and the finalize meet (straight-line code) they share one branch. A loop's
//! begin and end and a line's instant are branched past too: run predicated off, a
//! loop's probes cost such a warp what they cost a recording warp (Triton's layer norm,
//! three loops: 184 SASS instructions on its path, 48 now). What made the branches dear
//! (a recording warp's layer norm +235 -> +310 on sm_90a) was ptxas's warp aggregation of
//! the loop end's atomics: behind a branch on `%ikp_on` the owner predicate reduces to the
//! elected thread of the kernel's start, which ptxas no longer takes for one thread, so
//! the atomics' operand carries a per-thread value it cannot fold ([`loop_end_records`]);
//! now +243. A deferred loop begin (a timer read, no memory operation) runs predicated,
//! which cost less than a branch around it. Under `lanes=block` every warp but a block's
//! first is such a warp.
//!
//! **Lanes are warps.** Every thread computes its warp's lane segment from the layout the
//! host wrote into the kernel's symbol at attach time ([`ikp_device::probe_symbol`]: the
//! lanes' addresses, the records per lane, warps per block, epochs; constant loads, no
//! global load).
//!
//! **Each instruction counts once per warp.** A row-wise kernel runs tens of thousands of
//! short warps, each of which runs the init and the finalize: on such a kernel the probes
//! cost about what their instructions cost in issue slots (BENCHMARKS.md, "row-wise
//! kernels pay in issue slots"). So the host works out what it can (addresses, not the
//! header's counts: a lane's address is one multiply-add from its index), and on sm_90 the
//! recording thread is the one `elect.sync` elects (one instruction; [`leader`]).
//!
//! **The kernel keeps its occupancy.** Registers are what a probe can cost a kernel
//! outside its own code: a warp's are allocated 256 at a time, so a 128-thread block at 33
//! to 40 registers gets 12 blocks per SM where at 32 it gets 16. Across the kernel the
//! probes keep one 32-bit value, the lane's index in the buffer (`%ikp_at`), and a
//! predicate (`%ikp_on`); each probe that writes computes the lane's addresses afresh from
//! it and the symbol's constants ([`locate`]: where ptxas does not keep them itself, a
//! multiply-add per address and the constant loads), where holding the two 64-bit addresses
//! and the record count took five vector registers at every point of the kernel. The
//! init's block index is warp-uniform arithmetic (`S2UR`, `UIMAD`), so ptxas keeps the
//! kernel's own `%ctaid` arithmetic in uniform registers too. A loop's trip
//! counter and its begin's timer live across the loop (in a warp-uniform loop ptxas keeps
//! them in uniform registers). `instrument_ptx::instrumented_kernels_keep_their_occupancy`
//! holds every fixture to its blocks per SM.
//!
//! **The entry waits on no round trip.** With more than one epoch the segment depends on
//! an atomic, the warp's claim on its launch counter, so the lane init comes in two
//! halves. [`init`], at the kernel's start, takes the start stamps and puts the claim in
//! flight; its result (`%ikp_ep`) is read by nothing there. [`place`] broadcasts the
//! claim, narrows `%ikp_on` to an epoch within the buffer, sets `%ikp_at` and stores the
//! lane's start; the rewrite puts it as late as the entry allows (before the first probe
//! that writes, at the end of the entry's straight-line code, past an innermost loop the
//! entry runs whole). The kernel's own first loads go out while the claim is in flight.
//! The claim is a wrapping increment (`atom.inc`, bound 2^32 - 2), which ptxas leaves as
//! one atomic: an add of 1 it wraps in warp aggregation that shuffles the result at once,
//! and a 64-bit add leaves a dead half whose register's next write waits for it.
//!
//! At a probe one active thread records ([`leader`]: the lowest before sm_90, the one
//! `elect.sync` elects from sm_90 on), so a probe reached by a divergent part of a warp is
//! still recorded, once per part that reaches it. The slot comes from an atomic add on the
//! lane's count word (`dropped << 32 | written`): parts of a diverged warp that record at
//! the same time never take the same slot, and a full lane turns the add into a drop
//! (`+2^32 - 1`: one more dropped, written unchanged) so the word is the wire format's
//! trailer at every moment. A loop's end is recorded by the thread that recorded its begin
//! (`%ikp_own<k>`), once per begin, when that thread leaves the loop, followed by a
//! sample of the loop's counter: the number of times that thread ran the loop's header
//! (the trip count, 32 bits). The lane's end timer is the latest of its threads' exits
//! (`red.max`).
//!
//! **Loops keep their code.** A probe's atomics are branches in SASS (`BSSY; @!P BRA;
//! ATOMG; BSYNC`), so where a probe sits decides what ptxas can still do with a loop: a
//! begin between the loop's set-up and its header splits the preheader and ptxas stops
//! unrolling. The rewrite puts a begin at the top of a preheader that only leads to the
//! loop, ends after the exit, and in the loop only the trip add (one `IADD`). A loop with
//! no other record inside it is recorded whole at its end (begin, end and trip count in
//! three slots of one atomic): its begin has no atomic at all, and an entry into it waits
//! on one round trip instead of two.

use ikp_device::probe_symbol as sym;
use ikp_device::wire::{self, lane, Kind, MetaKind, LANE_MARK};

use super::ptx::Module;
use super::LaneUnit;

/// What the module's target and PTX ISA version give the probes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Isa {
    /// `elect.sync` (sm_90 and later, PTX ISA 8.0): the thread that records, in one
    /// instruction ([`leader`]).
    pub elect: bool,
}

impl Isa {
    pub(crate) fn of(m: &Module) -> Isa {
        let major = m
            .target
            .split(',')
            .next()
            .and_then(|t| t.trim().parse::<crate::Arch>().ok())
            .map_or(0, |a| a.major);
        Isa {
            elect: major >= 9 && m.version >= (8, 0),
        }
    }
}

/// The thread of the warp's active ones that records: `%iq0` (and `on`), and `%ia2`, the
/// active lanes below it (0 in it), which the probes' atomics carry in their operands.
///
/// Before sm_90 the lowest active thread (`activemask` and `%lanemask_lt`: four SASS
/// instructions); on sm_90 the one `elect.sync` elects (one instruction, `ELECT`), `%ia2`
/// 0. With constant operands, ptxas cannot know that the lowest active thread adds alone
/// and wraps each atomic in warp aggregation (some 15 instructions) that a one-thread
/// atomic never needs; below the recording thread, the mask is an operand it cannot fold.
/// Under `elect.sync` ptxas knows it, and aggregates nothing.
fn leader(isa: Isa, on: &str) -> String {
    if isa.elect {
        format!(
            "\tactivemask.b32 %ia1;\n\telect.sync _|%iq0, %ia1;\n\tand.pred %iq0, %iq0, {on};\n\tmov.u32 %ia2, 0;\n"
        )
    } else {
        format!(
            "\tactivemask.b32 %ia1;\n\tmov.u32 %ia2, %lanemask_lt;\n\tand.b32 %ia2, %ia2, %ia1;\n\tsetp.eq.and.u32 %iq0, %ia2, 0, {on};\n"
        )
    }
}

/// The module-scope block the host sets at attach time (`cuModuleGetGlobal`, then one
/// copy): [`ikp_device::probe_symbol`]'s words ([`super::symbol_words`]). It lives in the
/// constant bank, so a lane's init reads its layout from there (no global load, none
/// waiting on another); all zero, as loaded, it turns every probe off (no lanes).
pub(crate) fn symbol_decl(symbol: &str) -> String {
    let n = super::SYMBOL_WORDS;
    let zeros = vec!["0"; n].join(", ");
    format!(".visible .const .align 16 .u64 {symbol}[{n}] = {{{zeros}}};\n")
}

/// Registers every probe uses, declared once at the top of the body. Across the kernel
/// only `%ikp_at` (the lane's index in the buffer) and the predicate `%ikp_on` live; each
/// probe computes the lane's addresses from them ([`locate`]: `%ikp_lane`, `%ikp_cnt`,
/// `%ikp_r`, dead past the probe). Between the lane's claim and its placement ([`init`],
/// [`place`]) the claim's epoch (`%ikp_ep`), the active mask (`%ikp_m`), the warp's index
/// in the grid (`%ikp_w`), its ids word's low half (`%ikp_id`) and the start stamps
/// (`%ikp_gt0`, `%ikp_clk0`) wait in registers.
pub(crate) fn decls(loops: usize) -> String {
    let mut s = String::from(
        "\t// ikp: probe registers\n\t.reg .b64 \t%ikp_lane, %ikp_cnt, %ikp_gt0, %ikp_clk0;\n\t.reg .b32 \t%ikp_r, %ikp_at, %ikp_ep, %ikp_m, %ikp_w, %ikp_id;\n\t.reg .pred \t%ikp_on;\n",
    );
    if loops > 0 {
        s += &format!("\t.reg .b32 \t%ikp_trip<{loops}>, %ikp_t<{loops}>;\n\t.reg .pred \t%ikp_own<{loops}>;\n");
    }
    s
}

/// Lane init, first half, at the kernel's start: the start stamps, the warp's index, and
/// the epoch claim put in flight, with nothing that waits for it. The layout comes from
/// the symbol's constant loads, none depending on another load; the claim (an atomic on
/// the warp's launch count, by lane 0, run only when the buffer has more than one epoch)
/// returns into `%ikp_ep`, which only [`place`] reads. At the kernel's first instruction a
/// warp's active threads are its first lanes (a partial warp's too), so lane 0 is its
/// lowest active thread, the one that claims and stores the lane's start: `%laneid` says
/// so in one read, where the lowest of the mask takes a mask read and an `and`. ([`place`]
/// reads the shuffle's source lane, 0, from the symbol, not as an immediate.) `%ikp_on`
/// says here whether the warp has a lane at all (the symbol is set, the warp is within
/// the layout), as a warp vote: a deferred loop begin ([`loop_begin_deferred`]) may read
/// it before [`place`] narrows it to the claimed epoch, as its end reads the narrowed one.
///
/// Which warps go on: the block's first lane (`block * groups`) within the layout's
/// lanes, tested on the block index alone, which ptxas keeps in the uniform datapath
/// (`S2UR`, `UIMAD`) and branches on without a vote; a block past the lanes branches to the
/// end of the init with `%ikp_on` false (the layout's lanes are blocks x groups, so the
/// block's test is the lane's for every warp within `groups`). The same test on `%ctaid.x`
/// alone comes first (the linear index is at least x): in a one-dimensional grid, Triton's
/// usual, a block past the lanes leaves on the index the kernel reads anyway, before
/// `%ctaid.y`, `%ctaid.z` and the grid's sizes are read and combined (4 to 6 SASS
/// instructions fewer on its path, 4 to 6 more on a recording warp's). The warp's own test
/// (within the block's lanes) takes a vote. A lane per block tests the warp first (most
/// of its warps leave before the block's index is read). The block index read as vector
/// arithmetic (or handed over by `redux.sync`, before) pulled the kernel's own uniform
/// address arithmetic into vector registers with it (Triton's looped softmax: 32 -> 40
/// registers across its loops).
pub(crate) fn init(symbol: &str, loops: usize, lanes: LaneUnit) -> String {
    // Each loop unowned and its trip count 0, before any warp leaves the init.
    let mut resets = String::new();
    for k in 0..loops {
        resets += &format!("\tsetp.ne.u32 %ikp_own{k}, %ia2, %ia2;\n\tmov.u32 %ikp_trip{k}, 0;\n");
    }
    let thread = format!(
        "\tactivemask.b32 %ikp_m;\n{}\tshr.u32 %ia5, %ia5, 5;\n",
        linear("%ia5", "%tid", "%ntid")
    );
    // Which warps record. The block's test (its first lane within the layout's lanes) is
    // warp-uniform from constants alone, so ptxas branches on it without a vote; the
    // warp's (within the block's lanes: a lane per warp, its first warp: a lane per
    // block) takes a vote, so that `%ikp_on` is a predicate ptxas knows to be uniform
    // where the probes branch on it. A lane per block tests the warp first: most warps
    // leave there, before the block's index is read.
    let (first, second) = match lanes {
        LaneUnit::Warp => (
            String::new(),
            format!("{thread}\tsetp.lt.u32 %iq0, %ia5, %ia4;\n\tvote.sync.any.pred %ikp_on, %iq0, %ikp_m;\n"),
        ),
        LaneUnit::Block => (
            format!("{thread}\tsetp.lt.u32 %iq0, %ia5, %ia4;\n\tvote.sync.any.pred %ikp_on, %iq0, %ikp_m;\n\t@!%ikp_on bra {INIT_SKIP};\n"),
            String::new(),
        ),
    };
    let within = match lanes {
        LaneUnit::Warp => "\tsetp.lt.u32 %ikp_on, %ia6, %ia2;\n",
        LaneUnit::Block => "\tsetp.lt.and.u32 %ikp_on, %ia6, %ia2, %ikp_on;\n",
    };
    let mut s = format!(
        "{{ // ikp: lane init (its epoch claim in flight)
\t.reg .pred %iq<2>;
\t.reg .b32 %ia<12>;
\t.reg .b64 %ib<2>;
\tld.const.v2.u32 {{%ia2, %ia4}}, [{symbol}+{lanes}];
{resets}{first}\tmov.u32 %ia6, %ctaid.x;
\tmul.lo.u32 %ia6, %ia6, %ia4;
{within}\t@!%ikp_on bra {INIT_SKIP};
{block}\tmul.lo.u32 %ia6, %ia6, %ia4;
{within}\t@!%ikp_on bra {INIT_SKIP};
{second}\tadd.u32 %ikp_w, %ia6, %ia5;
\tld.const.u32 %ia10, [{symbol}+{epochs}];
\tld.const.u64 %ib0, [{symbol}+{claims}];
\tmov.u32 %ia8, %laneid;
\tsetp.eq.and.u32 %iq1, %ia8, 0, %ikp_on;
\tsetp.gt.and.u32 %iq1, %ia10, 1, %iq1;
\tmul.wide.u32 %ib1, %ikp_w, 8;
\tadd.s64 %ib1, %ib0, %ib1;
\tmov.u32 %ikp_ep, 0;
\t@%iq1 atom.global.inc.u32 %ikp_ep, [%ib1], 4294967294;
\tmov.u32 %ia9, %smid;
\tshl.b32 %ia5, %ia5, {warp_shift};
\tor.b32 %ikp_id, %ia9, %ia5;
\tmov.u64 %ikp_gt0, %globaltimer;
\tmov.u64 %ikp_clk0, %clock64;
",
        block = linear("%ia6", "%ctaid", "%nctaid"),
        lanes = sym::LANES * 8,
        epochs = sym::EPOCHS * 8,
        claims = sym::CLAIMS_AT * 8,
        warp_shift = wire::IDS_WARP_SHIFT,
    );
    s += &format!("}}\n{INIT_SKIP}:\n");
    s
}

/// The label past the init, for the warps that record nothing.
const INIT_SKIP: &str = "$ikp_s_init";

/// `probe` behind a branch the warps that record nothing take (every probe that writes),
/// on `%ikp_on`, a warp vote's result: they run one branch where they ran the probe
/// predicated off. `n` numbers the probe's label in its kernel.
pub(crate) fn skipped(n: usize, probe: &str) -> String {
    format!("\t@!%ikp_on bra $ikp_s{n};\n{probe}$ikp_s{n}:\n")
}

/// Lane init, second half: the claimed epoch broadcast from the thread that claimed it,
/// `%ikp_on` narrowed to an epoch within the buffer, the lane's index in the buffer
/// (`%ikp_at`, all that stays live of the lane), and the lane's start (the stamps [`init`]
/// took) and ids stored by the claiming thread. The rewrite puts it as late as the
/// entry's straight-line code allows (before its first probe that writes, or its end), so
/// the kernel's own first loads go out while the claim's round trip is in flight.
/// Straight-line code from [`init`]: the warp's active mask is the one the claim was made
/// under (`%ikp_m`, kept for the shuffle's members). The shuffle's source, lane 0, is read
/// from the symbol (the high half of its epochs word, always 0): from an immediate lane 0
/// ptxas hoists the shuffle right behind the claim's atomic, where its round trip is
/// waited for before the kernel's first loads (`the_epoch_claim_waits_behind_the_kernels_first_loads`);
/// the lowest lane of the mask, found at run time, took three instructions more. The
/// broadcast is a shuffle, not `redux.sync`: ptxas hoists a `REDUX` of the claim right
/// behind its atomic too (Triton's attention kernel). `vote`: `%ikp_on` narrowed is voted
/// again, for the probes after it that branch on it; not where the finalize follows at
/// once, in the same branch.
pub(crate) fn place(symbol: &str, vote: bool) -> String {
    format!(
        "{{ // ikp: lane place
\t.reg .pred %iq<1>;
\t.reg .b32 %ia<9>;
\t.reg .b64 %ib<5>;
\tld.const.u32 %ia2, [{symbol}+{lanes}];
\tld.const.v2.u32 {{%ia4, %ia5}}, [{symbol}+{epochs}];
\tshfl.sync.idx.b32 %ikp_ep, %ikp_ep, %ia5, 31, %ikp_m;
\tsetp.lt.and.u32 %ikp_on, %ikp_ep, %ia4, %ikp_on;
\tmov.u32 %ia6, %laneid;
\tsetp.eq.and.u32 %iq0, %ia6, %ia5, %ikp_on;
\tmad.lo.u32 %ikp_at, %ikp_ep, %ia2, %ikp_w;
{locate}\tcvt.u64.u32 %ib4, %ikp_id;
\tor.b64 %ib4, %ib4, {mark};
\t@%iq0 st.global.u64 [%ikp_lane+{start_gt}], %ikp_gt0;
\t@%iq0 st.global.u64 [%ikp_lane+{start_clk}], %ikp_clk0;
\t@%iq0 st.global.u64 [%ikp_lane+{ids}], %ib4;
{vote}}}
",
        vote = if vote {
            "\tvote.sync.any.pred %ikp_on, %ikp_on, %ikp_m;\n"
        } else {
            ""
        },
        locate = locate(symbol),
        lanes = sym::LANES * 8,
        epochs = sym::EPOCHS * 8,
        mark = (LANE_MARK as u64) << wire::IDS_MARK_SHIFT,
        start_gt = lane::START_GT * 8,
        start_clk = lane::START_CLK * 8,
        ids = lane::IDS * 8,
    )
}

/// The lane's addresses at a probe, from its index in the buffer (`%ikp_at`) and the
/// symbol's constants: the lane's first word (`%ikp_lane`), its count word (`%ikp_cnt`)
/// and its records (`%ikp_r`). Each probe computes them afresh (a multiply-add each from
/// the symbol's addresses and stride: 2 SASS instructions and the constant loads; 11 when
/// the probes added the header's offsets themselves), so that no 64-bit address is held in vector
/// registers across the kernel: held from [`place`] on, `%ikp_lane`, `%ikp_cnt` and
/// `%ikp_r` took five registers at every point of the kernel, its loops' peaks included.
pub(crate) fn locate(symbol: &str) -> String {
    format!(
        "{{ // ikp: the lane's addresses
\t.reg .b32 %il<1>;
\t.reg .b64 %iw<3>;
\tld.const.v2.u32 {{%il0, %ikp_r}}, [{symbol}+{stride}];
\tld.const.u64 %iw0, [{symbol}+{lanes_at}];
\tld.const.u64 %iw1, [{symbol}+{counts_at}];
\tmul.wide.u32 %iw2, %ikp_at, %il0;
\tadd.s64 %ikp_lane, %iw0, %iw2;
\tadd.s64 %ikp_cnt, %iw1, %iw2;
}}
",
        stride = sym::STRIDE * 8,
        lanes_at = sym::LANES_AT * 8,
        counts_at = sym::COUNTS_AT * 8,
    )
}

/// `dst = x + nx * (y + ny * z)` of the special registers `{index}.{x,y,z}` and
/// `{size}.{x,y}` (a thread's index in its block, a block's in the grid), through
/// `%ia7` / `%ia8`.
fn linear(dst: &str, index: &str, size: &str) -> String {
    format!(
        "\tmov.u32 {dst}, {index}.z;\n\tmov.u32 %ia7, {size}.y;\n\tmov.u32 %ia8, {index}.y;\n\
         \tmad.lo.u32 {dst}, {dst}, %ia7, %ia8;\n\tmov.u32 %ia7, {size}.x;\n\tmov.u32 %ia8, {index}.x;\n\
         \tmad.lo.u32 {dst}, {dst}, %ia7, %ia8;\n"
    )
}

/// One record by one active thread ([`leader`]): stamp, take a slot, store (or count a
/// drop). `extra` runs inside the probe's scope with `%iq0` the recording thread's
/// predicate.
pub(crate) fn record(isa: Isa, symbol: &str, kind: Kind, region: u32, extra: &str) -> String {
    let tag = (region << wire::REGION_SHIFT) | kind as u32;
    let mut s = locate(symbol);
    s.push_str(
        "{ // ikp: record\n\t.reg .pred %iq<3>;\n\t.reg .b32 %ia<6>;\n\t.reg .b64 %ib<3>;\n\tmov.u32 %ia0, %globaltimer_lo;\n",
    );
    s += &leader(isa, "%ikp_on");
    s += "\tadd.s32 %ia5, %ia2, 1;\n\tcvt.u64.u32 %ib2, %ia5;\n\t@%iq0 atom.global.add.u64 %ib0, [%ikp_cnt], %ib2;\n\tcvt.u32.u64 %ia3, %ib0;\n\tsetp.lt.and.u32 %iq1, %ia3, %ikp_r, %iq0;\n\tsetp.ge.and.u32 %iq2, %ia3, %ikp_r, %iq0;\n\tcvt.u64.u32 %ib2, %ia2;\n\tadd.s64 %ib2, %ib2, 4294967295;\n\t@%iq2 red.global.add.u64 [%ikp_cnt], %ib2;\n";
    s += &format!("\tmov.b32 %ia4, {tag};\n");
    s += &format!(
        "\tmov.b64 %ib1, {{%ia4, %ia0}};\n\tmul.wide.u32 %ib2, %ia3, 8;\n\tadd.s64 %ib2, %ikp_lane, %ib2;\n\t@%iq1 st.global.u64 [%ib2+{}], %ib1;\n",
        lane::EVENTS * 8
    );
    s += extra;
    s += "}\n";
    s
}

/// A loop's begin: the record, the trip count reset, the owner chosen.
pub(crate) fn loop_begin(isa: Isa, symbol: &str, k: usize, region: u32) -> String {
    let extra = format!("\tmov.pred %ikp_own{k}, %iq0;\n");
    format!(
        "\tmov.u32 %ikp_trip{k}, 0;\n{}",
        record(isa, symbol, Kind::Begin, region, &extra)
    )
}

/// The begin of a loop with no other record inside it (innermost, no line probes): no
/// record yet, no atomic, nothing to wait for. The recording thread ([`leader`]) owns the loop and
/// keeps the begin's timer in `%ikp_t<k>`; the end writes the begin with its own records
/// ([`loop_end_deferred`]), in slots in time order as no record comes between. Each entry
/// into the loop then pays one slot atomic (at its end) instead of two.
pub(crate) fn loop_begin_deferred(isa: Isa, k: usize) -> String {
    format!(
        "\tmov.u32 %ikp_trip{k}, 0;
{{ // ikp: loop begin (recorded at its end)
\t.reg .pred %iq<1>;
\t.reg .b32 %ia<3>;
\tmov.u32 %ikp_t{k}, %globaltimer_lo;
{leader}\tmov.pred %ikp_own{k}, %iq0;
}}
",
        leader = leader(isa, "%ikp_on"),
    )
}

/// The end of a loop begun by [`loop_begin_deferred`], by its owner: the begin (its
/// timer kept since), the end and the trip-count sample ([`loop_end_records`]).
pub(crate) fn loop_end_deferred(isa: Isa, symbol: &str, k: usize, region: u32) -> String {
    let begin = (
        (region << wire::REGION_SHIFT) | Kind::Begin as u32,
        format!("%ikp_t{k}"),
    );
    loop_end_records(isa, symbol, k, region, Some(begin))
}

/// Counts one run of loop `k`'s header.
pub(crate) fn loop_trip(k: usize) -> String {
    format!("\tadd.u32 %ikp_trip{k}, %ikp_trip{k}, 1; // ikp: trip\n")
}

/// A loop's end, recorded by its begin's owner, who then owns it no more: the end record
/// and, right after it, a counter sample of the loop's counter `k` (`MetaKind::CounterSample`,
/// value = the trip count, timed by the end before it) ([`loop_end_records`]).
pub(crate) fn loop_end(isa: Isa, symbol: &str, k: usize, region: u32) -> String {
    loop_end_records(isa, symbol, k, region, None)
}

/// A loop end's records by the loop's owner: `begin` first where the begin was deferred
/// (its tag and the register holding its timer), then the end and the trip-count sample, in
/// consecutive slots taken by one atomic add. A slot past the lane's capacity is not
/// written (a drop-newest lane keeps the oldest: a lane with one slot left keeps the first
/// record), and the add's excess is handed back in one reduction (`written` down, `dropped`
/// up by as many). The trip count is also added to the counter's total in the lane's
/// trailer, as `ikp.cuh`'s counted waits do, right behind the slot atomic; its operand
/// carries the lane mask below the owner (0 for it) as the slot atomics' do: with the trip
/// count alone ptxas wrapped the add in warp aggregation (a vote, a leader, a population
/// count and a multiply: 5 SASS instructions more per loop end on sm_90) that one owner
/// never needs. On sm_90 the owner was elected (`elect.sync`) and the operand's extra is
/// its lane index selected away (0 for the owner): behind the branch past the probe ptxas
/// no longer knows the owner predicate for one thread, and aggregated both atomics with a
/// constant 0 there (some 24 instructions a loop end).
fn loop_end_records(
    isa: Isa,
    symbol: &str,
    k: usize,
    region: u32,
    begin: Option<(u32, String)>,
) -> String {
    let end_tag = (region << wire::REGION_SHIFT) | Kind::End as u32;
    let sample_tag = ((k as u32) << wire::PAYLOAD_SHIFT)
        | ((MetaKind::CounterSample as u32) << wire::REGION_SHIFT)
        | Kind::Meta as u32;
    let records: Vec<(u32, String)> = begin
        .into_iter()
        .chain([
            (end_tag, "%ia0".to_string()),
            (sample_tag, format!("%ikp_trip{k}")),
        ])
        .collect();
    let n = records.len();
    let what = if n == 3 { " (and its begin)" } else { "" };
    let mut s = format!(
        "{locate}{{ // ikp: loop end{what}
\t.reg .pred %iq<{preds}>;
\t.reg .b32 %ia<7>;
\t.reg .b64 %ib<4>;
\tmov.u32 %ia0, %globaltimer_lo;
\tand.pred %iq0, %ikp_own{k}, %ikp_on;
{below}\tadd.s32 %ia5, %ia2, {n};
\tcvt.u64.u32 %ib1, %ia5;
\t@%iq0 atom.global.add.u64 %ib0, [%ikp_cnt], %ib1;
\tcvt.u32.u64 %ia3, %ib0;
\tsub.s32 %ia4, %ikp_r, %ia3;
\tmax.s32 %ia5, %ia4, 0;
\tmin.s32 %ia5, %ia5, {n};
\tsub.s32 %ia5, {n}, %ia5;
",
        locate = locate(symbol),
        preds = n + 2,
        below = if isa.elect {
            "\tmov.u32 %ia2, %laneid;\n\tselp.b32 %ia2, 0, %ia2, %iq0;\n"
        } else {
            "\tactivemask.b32 %ia1;\n\tmov.u32 %ia2, %lanemask_lt;\n\tand.b32 %ia2, %ia2, %ia1;\n\tselp.b32 %ia2, 0, %ia2, %iq0;\n"
        },
    );
    // %ia4: the slots left before the add (negative: none); slot j fits when more than j
    // were left; %ia5: the slots that do not fit.
    for j in 1..=n {
        s += &format!(
            "\tsetp.gt.and.s32 %iq{j}, %ia4, {off}, %iq0;\n",
            off = j - 1
        );
    }
    s += &format!(
        "\tsetp.ne.and.u32 %iq{h}, %ia5, 0, %iq0;
\tcvt.u64.u32 %ib1, %ia5;
\tmul.lo.u64 %ib1, %ib1, 4294967295;
\tcvt.u64.u32 %ib2, %ia2;
\tadd.s64 %ib1, %ib1, %ib2;
\t@%iq{h} red.global.add.u64 [%ikp_cnt], %ib1;
\tcvt.u64.u32 %ib3, %ikp_trip{k};
\tadd.s64 %ib3, %ib3, %ib2;
\t@%iq0 red.global.add.u64 [%ikp_cnt+{total}], %ib3;
\tmul.wide.u32 %ib0, %ia3, 8;
\tadd.s64 %ib0, %ikp_lane, %ib0;
",
        h = n + 1,
        total = (lane::T_COUNTERS - lane::T_COUNT + k as u32) * 8,
    );
    for (j, (tag, value)) in records.iter().enumerate() {
        s += &format!(
            "\tmov.b32 %ia4, {tag};\n\tmov.b64 %ib1, {{%ia4, {value}}};\n\t@%iq{p} st.global.u64 [%ib0+{at}], %ib1;\n",
            p = j + 1,
            at = (lane::EVENTS as usize + j) * 8
        );
    }
    s += &format!("\tsetp.ne.u32 %ikp_own{k}, %ia3, %ia3;\n}}\n");
    s
}

/// An instant at a source line.
pub(crate) fn instant(isa: Isa, symbol: &str, region: u32) -> String {
    record(isa, symbol, Kind::Instant, region, "")
}

/// Lane finalize before a `ret` / `exit`, one atomic per exit: the lane's end timer is
/// the latest exit's (`red.max`), its end clock the last one stored (the same exit
/// unless a warp's diverged parts leave at different times).
pub(crate) fn finalize(isa: Isa, symbol: &str) -> String {
    format!(
        "{locate}{{ // ikp: lane finalize
\t.reg .pred %iq<1>;
\t.reg .b32 %ia<3>;
\t.reg .b64 %ib<2>;
{leader}\tmov.u64 %ib0, %globaltimer;
\tmov.u64 %ib1, %clock64;
\t@%iq0 red.global.max.u64 [%ikp_cnt+{gt}], %ib0;
\t@%iq0 st.global.u64 [%ikp_cnt+{clk}], %ib1;
}}
",
        locate = locate(symbol),
        leader = leader(isa, "%ikp_on"),
        gt = (lane::T_END_GT as i64 - lane::T_COUNT as i64) * 8,
        clk = (lane::T_END_CLK as i64 - lane::T_COUNT as i64) * 8,
    )
}
