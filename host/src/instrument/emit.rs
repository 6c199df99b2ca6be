//! The PTX text of each probe. Every constant of the record and lane layout comes from
//! [`ikp_device::wire`], so instrumented PTX writes the same buffer `ikp.cuh` writes and
//! the native decoder reads it unchanged.
//!
//! **Lanes are warps.** At entry every thread computes its warp's lane segment from the
//! layout the host wrote into the kernel's symbol at attach time (the buffer header's
//! lanes, records per lane, warps per block, epochs; constant loads) and keeps its address
//! in `%ikp_lane`. At a probe the *lowest active thread* records
//! (`activemask` and `%lanemask_lt`), so a probe reached by a divergent part of a warp is
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

use ikp_device::wire::{self, lane, Kind, MetaKind, LANE_MARK};

/// The module-scope block the host sets at attach time (`cuModuleGetGlobal`, then one
/// copy): the buffer's address, then header words 1 to [`super::SYMBOL_WORDS`]` - 1` as
/// the host wrote them at the buffer's start ([`super::symbol_words`]). It lives in the
/// constant bank, so a lane's init reads its layout from there (no global load, none
/// waiting on another); all zero, as loaded, it turns every probe off.
pub(crate) fn symbol_decl(symbol: &str) -> String {
    let n = super::SYMBOL_WORDS;
    let zeros = vec!["0"; n].join(", ");
    format!(".visible .const .align 16 .u64 {symbol}[{n}] = {{{zeros}}};\n")
}

/// Registers every probe uses, declared once at the top of the body.
pub(crate) fn decls(loops: usize) -> String {
    let mut s = String::from(
        "\t// ikp: probe registers\n\t.reg .b64 \t%ikp_lane, %ikp_cnt;\n\t.reg .b32 \t%ikp_r;\n\t.reg .pred \t%ikp_on;\n",
    );
    if loops > 0 {
        s += &format!("\t.reg .b32 \t%ikp_trip<{loops}>, %ikp_t<{loops}>;\n\t.reg .pred \t%ikp_own<{loops}>;\n");
    }
    s
}

/// Lane init: locate the warp's segment, stamp its start and ids (lowest active thread).
/// The layout comes from the symbol's constant loads, none depending on another load, so
/// the kernel's own first instruction waits on no memory round trip; the epoch claim (an
/// atomic whose result places the segment) runs only when the buffer has more than one
/// epoch.
pub(crate) fn init(symbol: &str, loops: usize) -> String {
    let w = |word: usize| word * 8;
    let mut s = format!(
        "{{ // ikp: lane init
\t.reg .pred %iq<4>;
\t.reg .b32 %ia<16>;
\t.reg .b64 %ib<12>;
\tld.const.u64 %ib0, [{symbol}];
\tld.const.u64 %ib1, [{symbol}+{hw}];
\tld.const.u64 %ib2, [{symbol}+{lanes}];
\tld.const.u64 %ib3, [{symbol}+{groups}];
\tld.const.u64 %ib11, [{symbol}+{stride}];
\tld.const.u32 %ia10, [{symbol}+{epochs}];
\tsetp.ne.u64 %iq2, %ib0, 0;
\tmov.b64 {{%ia0, %ia1}}, %ib1;
\tmov.b64 {{%ia2, %ia3}}, %ib2;
\tcvt.u32.u64 %ia4, %ib3;
\tcvt.u32.u64 %ia15, %ib11;
{thread}\tshr.u32 %ia5, %ia5, 5;
{block}\tmad.lo.u32 %ia6, %ia6, %ia4, %ia5;
\tsetp.lt.and.u32 %iq0, %ia5, %ia4, %iq2;
\tsetp.lt.and.u32 %iq0, %ia6, %ia2, %iq0;
\tactivemask.b32 %ia7;
\tmov.u32 %ia8, %lanemask_lt;
\tand.b32 %ia8, %ia8, %ia7;
\tsetp.eq.and.u32 %iq1, %ia8, 0, %iq0;
\tsetp.gt.and.u32 %iq3, %ia10, 1, %iq1;
\tmov.u32 %ia9, 0;
\tadd.s32 %ia11, %ia1, %ia6;
\tmul.wide.u32 %ib4, %ia11, 8;
\tadd.s64 %ib4, %ib0, %ib4;
\t@%iq3 atom.global.add.u32 %ia9, [%ib4], 1;
\tneg.s32 %ia11, %ia7;
\tand.b32 %ia11, %ia11, %ia7;
\tbfind.u32 %ia11, %ia11;
\tshfl.sync.idx.b32 %ia9, %ia9, %ia11, 31, %ia7;
\tmax.u32 %ia10, %ia10, 1;
\tsetp.lt.and.u32 %iq0, %ia9, %ia10, %iq0;
\tand.pred %iq1, %iq1, %iq0;
\tmad.lo.u32 %ia12, %ia9, %ia2, %ia6;
\tadd.s32 %ia13, %ia1, %ia2;
\tcvt.u64.u32 %ib5, %ia13;
\tmul.wide.u32 %ib6, %ia12, %ia15;
\tadd.s64 %ib5, %ib5, %ib6;
\tshl.b64 %ib5, %ib5, 3;
\tadd.s64 %ib5, %ib0, %ib5;
\tselp.b64 %ikp_lane, %ib5, 0, %iq0;
\tmov.pred %ikp_on, %iq0;
\tmov.u32 %ikp_r, %ia3;
\tadd.s32 %ia14, %ia3, {count_word};
\tmul.wide.u32 %ib7, %ia14, 8;
\tadd.s64 %ikp_cnt, %ikp_lane, %ib7;
\tmov.u64 %ib8, %globaltimer;
\tmov.u64 %ib9, %clock64;
\tmov.u32 %ia14, %smid;
\tshl.b32 %ia13, %ia5, {warp_shift};
\tor.b32 %ia14, %ia14, %ia13;
\tcvt.u64.u32 %ib10, %ia14;
\tor.b64 %ib10, %ib10, {mark};
\t@%iq1 st.global.u64 [%ikp_lane+{start_gt}], %ib8;
\t@%iq1 st.global.u64 [%ikp_lane+{start_clk}], %ib9;
\t@%iq1 st.global.u64 [%ikp_lane+{ids}], %ib10;
",
        thread = linear("%ia5", "%tid", "%ntid"),
        block = linear("%ia6", "%ctaid", "%nctaid"),
        hw = w(wire::hdr::VERSION),
        lanes = w(wire::hdr::LANES),
        groups = w(wire::hdr::GROUPS),
        stride = w(wire::hdr::STRIDE),
        epochs = w(wire::hdr::EPOCHS),
        count_word = lane::EVENTS + lane::T_COUNT,
        warp_shift = wire::IDS_WARP_SHIFT,
        mark = (LANE_MARK as u64) << wire::IDS_MARK_SHIFT,
        start_gt = lane::START_GT * 8,
        start_clk = lane::START_CLK * 8,
        ids = lane::IDS * 8,
    );
    for k in 0..loops {
        s += &format!("\tsetp.ne.u32 %ikp_own{k}, %ia4, %ia4;\n\tmov.u32 %ikp_trip{k}, 0;\n");
    }
    s += "}\n";
    s
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

/// One record by the lowest active thread: stamp, take a slot, store (or count a drop).
/// `extra` runs inside the probe's scope with `%iq0` the recording thread's predicate.
pub(crate) fn record(kind: Kind, region: u32, extra: &str) -> String {
    let tag = (region << wire::REGION_SHIFT) | kind as u32;
    let mut s = String::from(
        "{ // ikp: record\n\t.reg .pred %iq<3>;\n\t.reg .b32 %ia<6>;\n\t.reg .b64 %ib<3>;\n\tmov.u32 %ia0, %globaltimer_lo;\n",
    );
    s += "\tactivemask.b32 %ia1;\n\tmov.u32 %ia2, %lanemask_lt;\n\tand.b32 %ia2, %ia2, %ia1;\n\tsetp.eq.and.u32 %iq0, %ia2, 0, %ikp_on;\n";
    // The atomics' operands carry the lane mask below the recording thread (0 for it):
    // with constant operands ptxas cannot know one thread adds and wraps each atomic in
    // warp aggregation (some 15 instructions) that a one-thread atomic never needs.
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
pub(crate) fn loop_begin(k: usize, region: u32) -> String {
    let extra = format!("\tmov.pred %ikp_own{k}, %iq0;\n");
    format!(
        "\tmov.u32 %ikp_trip{k}, 0;\n{}",
        record(Kind::Begin, region, &extra)
    )
}

/// The begin of a loop with no other record inside it (innermost, no line probes): no
/// record yet, no atomic, nothing to wait for. The lowest active thread owns the loop and
/// keeps the begin's timer in `%ikp_t<k>`; the end writes the begin with its own records
/// ([`loop_end_deferred`]), in slots in time order as no record comes between. Each entry
/// into the loop then pays one slot atomic (at its end) instead of two.
pub(crate) fn loop_begin_deferred(k: usize) -> String {
    format!(
        "\tmov.u32 %ikp_trip{k}, 0;
{{ // ikp: loop begin (recorded at its end)
\t.reg .b32 %ia<3>;
\tmov.u32 %ikp_t{k}, %globaltimer_lo;
\tactivemask.b32 %ia1;
\tmov.u32 %ia2, %lanemask_lt;
\tand.b32 %ia2, %ia2, %ia1;
\tsetp.eq.and.u32 %ikp_own{k}, %ia2, 0, %ikp_on;
}}
"
    )
}

/// The end of a loop begun by [`loop_begin_deferred`], by its owner: the begin (its
/// timer kept since), the end and the trip-count sample, in three slots taken by one
/// atomic add, as many as fit (a full lane drops the newest, as [`loop_end`]); the add's
/// excess is handed back (`written` down, `dropped` up by as many, in one reduction).
pub(crate) fn loop_end_deferred(k: usize, region: u32) -> String {
    let begin_tag = (region << wire::REGION_SHIFT) | Kind::Begin as u32;
    let end_tag = (region << wire::REGION_SHIFT) | Kind::End as u32;
    let sample_tag = ((k as u32) << wire::PAYLOAD_SHIFT)
        | ((MetaKind::CounterSample as u32) << wire::REGION_SHIFT)
        | Kind::Meta as u32;
    format!(
        "{{ // ikp: loop end (and its begin)
\t.reg .pred %iq<5>;
\t.reg .b32 %ia<7>;
\t.reg .b64 %ib<5>;
\tmov.u32 %ia0, %globaltimer_lo;
\tand.pred %iq0, %ikp_own{k}, %ikp_on;
\tactivemask.b32 %ia1;
\tmov.u32 %ia2, %lanemask_lt;
\tand.b32 %ia2, %ia2, %ia1;
\tselp.b32 %ia2, 0, %ia2, %iq0;
\tadd.s32 %ia5, %ia2, 3;
\tcvt.u64.u32 %ib4, %ia5;
\t@%iq0 atom.global.add.u64 %ib0, [%ikp_cnt], %ib4;
\tcvt.u32.u64 %ia3, %ib0;
\tsetp.lt.and.u32 %iq1, %ia3, %ikp_r, %iq0;
\tadd.s32 %ia4, %ia3, 1;
\tsetp.lt.and.u32 %iq2, %ia4, %ikp_r, %iq0;
\tadd.s32 %ia4, %ia3, 2;
\tsetp.lt.and.u32 %iq3, %ia4, %ikp_r, %iq0;
\tselp.u32 %ia5, 0, 1, %iq1;
\tselp.u32 %ia6, 0, 1, %iq2;
\tadd.s32 %ia5, %ia5, %ia6;
\tselp.u32 %ia6, 0, 1, %iq3;
\tadd.s32 %ia5, %ia5, %ia6;
\tsetp.ne.and.u32 %iq4, %ia5, 0, %iq0;
\tcvt.u64.u32 %ib4, %ia5;
\tmul.lo.u64 %ib4, %ib4, 4294967295;
\tcvt.u64.u32 %ib3, %ia2;
\tadd.s64 %ib4, %ib4, %ib3;
\t@%iq4 red.global.add.u64 [%ikp_cnt], %ib4;
\tmov.b32 %ia4, {begin_tag};
\tmov.b64 %ib1, {{%ia4, %ikp_t{k}}};
\tmov.b32 %ia4, {end_tag};
\tmov.b64 %ib2, {{%ia4, %ia0}};
\tmov.b32 %ia4, {sample_tag};
\tmov.b64 %ib3, {{%ia4, %ikp_trip{k}}};
\tmul.wide.u32 %ib0, %ia3, 8;
\tadd.s64 %ib0, %ikp_lane, %ib0;
\t@%iq1 st.global.u64 [%ib0+{events}], %ib1;
\t@%iq2 st.global.u64 [%ib0+{next}], %ib2;
\t@%iq3 st.global.u64 [%ib0+{after}], %ib3;
\tcvt.u64.u32 %ib3, %ikp_trip{k};
\t@%iq0 red.global.add.u64 [%ikp_cnt+{total}], %ib3;
\tsetp.ne.u32 %ikp_own{k}, %ia3, %ia3;
}}
",
        events = lane::EVENTS * 8,
        next = (lane::EVENTS + 1) * 8,
        after = (lane::EVENTS + 2) * 8,
        total = (lane::T_COUNTERS - lane::T_COUNT + k as u32) * 8,
    )
}

/// Counts one run of loop `k`'s header.
pub(crate) fn loop_trip(k: usize) -> String {
    format!("\tadd.u32 %ikp_trip{k}, %ikp_trip{k}, 1; // ikp: trip\n")
}

/// A loop's end, recorded by its begin's owner, who then owns it no more: the end record
/// and, right after it, a counter sample of the loop's counter `k` (`MetaKind::CounterSample`,
/// value = the trip count, timed by the end before it), in two slots taken by one atomic
/// add. A lane with one slot left keeps the end and drops the sample (a drop-newest lane
/// drops only once full); the add's excess is handed back (`-1` or `-2` written, as many
/// more dropped). The trip count is also added to the counter's total in the lane's
/// trailer, as `ikp.cuh`'s counted waits do.
pub(crate) fn loop_end(k: usize, region: u32) -> String {
    let end_tag = (region << wire::REGION_SHIFT) | Kind::End as u32;
    let sample_tag = ((k as u32) << wire::PAYLOAD_SHIFT)
        | ((MetaKind::CounterSample as u32) << wire::REGION_SHIFT)
        | Kind::Meta as u32;
    format!(
        "{{ // ikp: loop end
\t.reg .pred %iq<6>;
\t.reg .b32 %ia<6>;
\t.reg .b64 %ib<5>;
\tmov.u32 %ia0, %globaltimer_lo;
\tand.pred %iq0, %ikp_own{k}, %ikp_on;
\tactivemask.b32 %ia1;
\tmov.u32 %ia2, %lanemask_lt;
\tand.b32 %ia2, %ia2, %ia1;
\tselp.b32 %ia2, 0, %ia2, %iq0;
\tadd.s32 %ia5, %ia2, 2;
\tcvt.u64.u32 %ib2, %ia5;
\t@%iq0 atom.global.add.u64 %ib0, [%ikp_cnt], %ib2;
\tcvt.u32.u64 %ia3, %ib0;
\tadd.s32 %ia5, %ia3, 1;
\tsetp.lt.and.u32 %iq1, %ia5, %ikp_r, %iq0;
\tsetp.lt.and.u32 %iq3, %ia3, %ikp_r, %iq0;
\tsetp.ge.and.u32 %iq2, %ia3, %ikp_r, %iq0;
\txor.pred %iq4, %iq3, %iq1;
\tor.pred %iq5, %iq2, %iq4;
\tselp.b64 %ib4, 8589934590, 4294967295, %iq2;
\tcvt.u64.u32 %ib2, %ia2;
\tadd.s64 %ib4, %ib4, %ib2;
\t@%iq5 red.global.add.u64 [%ikp_cnt], %ib4;
\tmov.b32 %ia4, {end_tag};
\tmov.b64 %ib1, {{%ia4, %ia0}};
\tmov.b32 %ia4, {sample_tag};
\tmov.b64 %ib3, {{%ia4, %ikp_trip{k}}};
\tmul.wide.u32 %ib2, %ia3, 8;
\tadd.s64 %ib2, %ikp_lane, %ib2;
\t@%iq3 st.global.u64 [%ib2+{events}], %ib1;
\t@%iq1 st.global.u64 [%ib2+{next}], %ib3;
\tcvt.u64.u32 %ib3, %ikp_trip{k};
\t@%iq0 red.global.add.u64 [%ikp_cnt+{total}], %ib3;
\tsetp.ne.u32 %ikp_own{k}, %ia3, %ia3;
}}
",
        events = lane::EVENTS * 8,
        next = (lane::EVENTS + 1) * 8,
        total = (lane::T_COUNTERS - lane::T_COUNT + k as u32) * 8,
    )
}

/// An instant at a source line.
pub(crate) fn instant(region: u32) -> String {
    record(Kind::Instant, region, "")
}

/// Lane finalize before a `ret` / `exit`, one atomic per exit: the lane's end timer is
/// the latest exit's (`red.max`), its end clock the last one stored (the same exit
/// unless a warp's diverged parts leave at different times).
pub(crate) fn finalize() -> String {
    format!(
        "{{ // ikp: lane finalize
\t.reg .pred %iq<1>;
\t.reg .b32 %ia<3>;
\t.reg .b64 %ib<2>;
\tactivemask.b32 %ia1;
\tmov.u32 %ia2, %lanemask_lt;
\tand.b32 %ia2, %ia2, %ia1;
\tsetp.eq.and.u32 %iq0, %ia2, 0, %ikp_on;
\tmov.u64 %ib0, %globaltimer;
\tmov.u64 %ib1, %clock64;
\t@%iq0 red.global.max.u64 [%ikp_cnt+{gt}], %ib0;
\t@%iq0 st.global.u64 [%ikp_cnt+{clk}], %ib1;
}}
",
        gt = (lane::T_END_GT as i64 - lane::T_COUNT as i64) * 8,
        clk = (lane::T_END_CLK as i64 - lane::T_COUNT as i64) * 8,
    )
}
