//! Where each probe goes in a kernel, as text edits on the module.
//!
//! Probes sit on control-flow edges and before exits: a loop's begin on every edge that
//! enters it, its end on every edge that leaves it (and before a `ret` inside it), a trip
//! count after its header's label, a line's instant before the first instruction of a
//! block at that line. An edge that a branch takes gets a trampoline (the branch is pointed
//! at a new label after the body's last instruction, whose probes end in a branch to the
//! old target); a fall-through edge gets its probes in place, before the label it falls
//! into. A loop's begin on an edge from a block that leads only into the loop (its
//! preheader) goes at the top of that block's basic block instead, before the loop's
//! set-up, where ptxas's unrolling never sees it (see `emit`). A guarded `ret` becomes a
//! guarded branch to a trampoline that finalizes and returns. The lane init's first half
//! goes before the body's first instruction, its second half (`emit::place`, which waits
//! for the epoch claim) at the end of the kernel's entry (`entry_end`), before any probe
//! that writes. Everything else in the text stays as it was.

use std::collections::HashMap;

use ikp_device::wire::{MAX_COUNTERS, MAX_REGIONS};

use super::cfg::{Cfg, Edge};
use super::emit;
use super::ptx::{branch_target, loc_of, Kernel, Module, Stmt};
use super::{InstrumentError, KernelProbes, Probe, ProbeKind, ProbeSet};

/// A text edit: insert `text` at `at` (edits at one offset in `order`), or replace
/// `at..end` with `text`.
#[derive(Clone, Debug)]
pub(crate) struct Edit {
    pub at: usize,
    pub order: u8,
    pub end: Option<usize>,
    pub text: String,
}

// Orders of edits made at the same offset.
const INIT: u8 = 0;
const PLACE: u8 = 1;
const EDGE: u8 = 2;
const LINE: u8 = 3;
const EXIT: u8 = 4;
const REPLACE: u8 = 9;

/// Declarations that may lead a body before its first instruction.
fn is_declaration(s: &Stmt) -> bool {
    matches!(s, Stmt::Directive { name, .. } if matches!(name.as_str(), "reg" | "local" | "shared" | "param" | "loc" | "pragma"))
}

/// The edits that instrument kernel `k` of `m`, and what they record.
pub(crate) fn kernel(
    m: &Module,
    k: &Kernel,
    probes: &ProbeSet,
    symbol: &str,
) -> Result<(Vec<Edit>, KernelProbes), InstrumentError> {
    if let Some(s) = k.stmts.iter().find(|s| s.op() == Some("setmaxnreg")) {
        return Err(InstrumentError::Unsupported {
            line: s.line,
            reason: format!(
                "kernel {} sets its warps' register count (setmaxnreg): probes need registers of \
                 their own and could break the count its warp groups were given",
                k.name
            ),
        });
    }
    let cfg = Cfg::of(k)?;
    let isa = emit::Isa::of(m);
    // The .loc in effect at each statement.
    let mut loc = Vec::with_capacity(k.stmts.len());
    let mut current = None;
    for s in &k.stmts {
        if let Stmt::Directive { name, rest } = &s.stmt {
            if name == "loc" {
                current = loc_of(rest);
            }
        }
        loc.push(current);
    }
    let source = |i: usize| -> Option<String> {
        let (file, line) = loc.get(i).copied().flatten()?;
        Some(format!("{}:{line}", m.file_name(file).unwrap_or("?")))
    };
    let first_instr = |b: usize| {
        cfg.blocks[b]
            .stmts
            .clone()
            .find(|&i| matches!(k.stmts[i].stmt, Stmt::Instr { .. }))
    };

    let mut out = KernelProbes {
        name: k.name.clone(),
        symbol: symbol.to_string(),
        warps_per_block: k.threads_per_block.map(|t| t.div_ceil(32)),
        lanes: probes.lanes,
        regions: Vec::new(),
        counters: Vec::new(),
        probes: Vec::new(),
    };
    let mut region_of_name: HashMap<String, u32> = HashMap::new();
    let mut region =
        |out: &mut KernelProbes, name: String, unique: bool| -> Result<u32, InstrumentError> {
            if !unique {
                if let Some(&r) = region_of_name.get(&name) {
                    return Ok(r);
                }
            }
            let mut named = name.clone();
            let mut n = 2;
            while unique && region_of_name.contains_key(&named) {
                named = format!("{name} #{n}");
                n += 1;
            }
            let r = out.regions.len() as u32;
            if r >= MAX_REGIONS {
                return Err(InstrumentError::TooManyRegions {
                    kernel: k.name.clone(),
                    max: MAX_REGIONS,
                });
            }
            region_of_name.insert(named.clone(), r);
            out.regions.push(named);
            Ok(r)
        };

    // Loop regions, in the order of their headers.
    // Every loop is probed or none: probe index = the cfg's loop index.
    let loops = if probes.loops { cfg.loops.len() } else { 0 };
    let mut loop_region = Vec::new();
    for l in 0..loops {
        let header = cfg.loops[l].header;
        let at = first_instr(header).unwrap_or(cfg.blocks[header].stmts.start);
        // Named for its first source line in the header's file: the loop statement's
        // line, usually, as the compiler charges the loop's test and step to it.
        let line = loc[at].and_then(|(file, _)| {
            cfg.loops[l]
                .body
                .iter()
                .flat_map(|&b| cfg.blocks[b].stmts.clone())
                .filter(|&i| matches!(k.stmts[i].stmt, Stmt::Instr { .. }))
                .filter_map(|i| loc[i].filter(|&(f, n)| f == file && n > 0))
                .map(|(_, n)| n)
                .min()
                .map(|n| format!("{}:{n}", m.file_name(file).unwrap_or("?")))
        });
        let name = match &line {
            Some(s) => format!("{s} loop"),
            None => format!(
                "{} loop at {}",
                k.name,
                cfg.blocks[header].label.as_deref().unwrap_or("?")
            ),
        };
        let r = region(&mut out, name, true)?;
        if out.counters.len() as u32 >= MAX_COUNTERS {
            return Err(InstrumentError::TooManyLoops {
                kernel: k.name.clone(),
                max: MAX_COUNTERS,
            });
        }
        out.counters
            .push(format!("{} trips", out.regions[r as usize]));
        out.probes.push(Probe {
            kind: ProbeKind::Loop,
            region: r,
            ptx_line: k.stmts[cfg.blocks[header].stmts.start].line,
            source: line,
        });
        loop_region.push(r);
    }
    let probed = |l: usize| (l < loops).then_some(l);
    // Loops with no other record inside (innermost, no line probes): recorded whole at
    // their end (`emit::loop_begin_deferred`).
    let deferred: Vec<bool> = (0..loops)
        .map(|l| {
            probes.lines.is_empty()
                && !cfg.loops.iter().enumerate().any(|(o, other)| {
                    o != l && other.body.iter().all(|b| cfg.loops[l].body.contains(b))
                })
        })
        .collect();
    let begin = |l: usize| {
        if deferred[l] {
            emit::loop_begin_deferred(isa, l)
        } else {
            emit::loop_begin(isa, symbol, l, loop_region[l])
        }
    };
    let end = |l: usize| {
        if deferred[l] {
            emit::loop_end_deferred(isa, symbol, l, loop_region[l])
        } else {
            emit::loop_end(isa, symbol, l, loop_region[l])
        }
    };

    let mut edits = Vec::new();
    // The warps that record nothing branch past every probe that writes (`emit::skipped`).
    let skips = std::cell::Cell::new(0usize);
    let next_skip = || {
        skips.set(skips.get() + 1);
        skips.get()
    };
    let skipped = |probe: String| emit::skipped(next_skip(), &probe);
    let mut trampolines = String::new();
    let mut n_tramp = 0usize;
    let tramp_label = |n: &mut usize| {
        *n += 1;
        format!("$ikp_t{n}")
    };

    // Declarations and init.
    edits.push(Edit {
        at: k.body.start + 1,
        order: INIT,
        end: None,
        text: format!("\n{}", emit::decls(loops)),
    });
    let init_at = k
        .stmts
        .iter()
        .find(|s| !is_declaration(&s.stmt))
        .map(|s| s.at.start)
        .ok_or_else(|| InstrumentError::Unsupported {
            line: k.stmts.first().map_or(0, |s| s.line),
            reason: format!("kernel {} has no instruction", k.name),
        })?;
    edits.push(Edit {
        at: init_at,
        order: INIT,
        end: None,
        text: emit::init(symbol, loops, probes.lanes),
    });

    let ends = |b_loops: &[usize], keep: &[usize]| -> String {
        b_loops
            .iter()
            .filter(|l| !keep.contains(l))
            .filter_map(|&l| probed(l).map(end))
            .collect()
    };

    // Edges. Block 0 is entered from the kernel's start (after init, which precedes the
    // first label), so a loop headed there is entered by that path too.
    let reachable = reachable(&cfg);
    let preds = predecessors(&cfg);
    let block_top = |u: usize| -> Option<usize> {
        // A label nothing branches to (Triton's `$L__tmp` debug labels) splits no block
        // of ptxas's: walk up through such joints, never past a guarded `ret` (a thread
        // leaving there would leave a begin without its end).
        let mut top = u;
        while top > 0
            && preds[top] == 1
            && cfg.blocks[top - 1].succs
                == [Edge {
                    to: top,
                    branch: false,
                }]
            && !cfg.blocks[top - 1].exits
        {
            top -= 1;
        }
        (cfg.blocks[top].stmts.start..cfg.blocks[u].stmts.end)
            .find(|&i| matches!(k.stmts[i].stmt, Stmt::Instr { .. }))
    };
    let mut entry_edges: Vec<(Option<usize>, usize, bool)> = vec![(None, 0, false)];
    for (u, b) in cfg.blocks.iter().enumerate() {
        if reachable[u] {
            entry_edges.extend(b.succs.iter().map(|e| (Some(u), e.to, e.branch)));
        }
    }
    // Offsets of the probes that write to the lane (all but deferred begins and trip
    // adds): the lane is placed before the first of them.
    let mut writes = Vec::new();
    for (u, v, branch) in entry_edges {
        let from = u.map(|u| cfg.loops_of(u)).unwrap_or_default();
        let to = cfg.loops_of(v);
        let mut text = ends(&from, &to);
        let mut write = !text.is_empty();
        // A deferred begin (a timer read and the owner chosen, no memory operation) runs
        // predicated, after the branch past the rest: branched past too, it cost both
        // kinds of warp more on most fixtures (Triton's looped softmax, SASS added to a
        // recording warp's path sm_80 / sm_90a 210 / 193 -> 173 / 175, to a warp
        // without a lane's 61 / 37 -> 28 / 28; nested loops on sm_90a the other way,
        // 192 -> 208 and 18 -> 35).
        let mut deferred_begins = String::new();
        for &l in to.iter().rev().filter(|l| !from.contains(l)) {
            if cfg.loops[l].header != v {
                let line = k.stmts.get(cfg.blocks[v].stmts.start).map_or(0, |s| s.line);
                return Err(InstrumentError::Unsupported {
                    line,
                    reason: "a loop is entered other than through its header".into(),
                });
            }
            if let Some(s) = probed(l) {
                if deferred[s] {
                    deferred_begins += &begin(s);
                } else {
                    text += &begin(s);
                    write = true;
                }
            }
        }
        if text.is_empty() && deferred_begins.is_empty() {
            continue;
        }
        let text = if text.is_empty() {
            deferred_begins
        } else {
            skipped(text) + &deferred_begins
        };
        // The only way into `v` from `u`: the begins go at the top of `u`'s basic block,
        // before the loop's own set-up. A probe's atomics are branches in SASS (`BSSY;
        // @!P BRA; ATOMG; BSYNC`); between the set-up and the header they split the
        // preheader, and ptxas no longer unrolls the loop.
        if let Some(top) = u
            .filter(|&u| cfg.blocks[u].succs.len() == 1 && !cfg.blocks[u].exits)
            .and_then(block_top)
        {
            if write {
                writes.push(k.stmts[top].at.start);
            }
            edits.push(Edit {
                at: k.stmts[top].at.start,
                order: EDGE,
                end: None,
                text,
            });
            continue;
        }
        let v_start = k
            .stmts
            .get(cfg.blocks[v].stmts.start)
            .map(|s| s.at.start)
            .unwrap_or(k.body.end - 1);
        if branch {
            let u = u.expect("a branch has a source");
            let last = cfg.blocks[u]
                .stmts
                .clone()
                .rev()
                .find(|&i| k.stmts[i].op() == Some("bra"))
                .expect("branch edge");
            let Stmt::Instr {
                operands,
                operands_at,
                ..
            } = &k.stmts[last].stmt
            else {
                unreachable!()
            };
            let (target, range) = branch_target(operands, operands_at).expect("cfg read it");
            let label = tramp_label(&mut n_tramp);
            edits.push(Edit {
                at: range.start,
                order: REPLACE,
                end: Some(range.end),
                text: label.clone(),
            });
            trampolines += &format!("{label}:\n{text}\tbra \t{target};\n");
        } else {
            if write {
                writes.push(v_start);
            }
            edits.push(Edit {
                at: v_start,
                order: EDGE,
                end: None,
                text,
            });
        }
    }

    // Trip counts after each loop header's label.
    for l in 0..loops {
        let h = cfg.loops[l].header;
        let first = &k.stmts[cfg.blocks[h].stmts.start];
        let at = match first.stmt {
            Stmt::Label(_) => first.at.end,
            _ => first.at.start,
        };
        edits.push(Edit {
            at,
            order: INIT,
            end: None,
            text: format!("\n{}", emit::loop_trip(l)),
        });
    }

    // Exits: close the loops still open, finalize the lane.
    let mut exits = Vec::new();
    for (b, block) in cfg.blocks.iter().enumerate() {
        if !block.exits || !reachable[b] {
            continue;
        }
        let i = block
            .stmts
            .clone()
            .rev()
            .find(|&i| matches!(k.stmts[i].op(), Some("ret" | "exit")))
            .expect("exit block");
        let s = &k.stmts[i];
        let Stmt::Instr { guard, opcode, .. } = &s.stmt else {
            unreachable!()
        };
        let raw = ends(&cfg.loops_of(b), &[]) + &emit::finalize(isa, symbol);
        let skip = next_skip();
        let text = emit::skipped(skip, &raw);
        writes.push(s.at.start);
        match guard {
            None => {
                exits.push((edits.len(), skip, raw));
                edits.push(Edit {
                    at: s.at.start,
                    order: EXIT,
                    end: None,
                    text,
                })
            }
            Some(g) => {
                let label = tramp_label(&mut n_tramp);
                edits.push(Edit {
                    at: s.at.start,
                    order: REPLACE,
                    end: Some(s.at.end),
                    text: format!("@{g} bra \t{label};"),
                });
                trampolines += &format!("{label}:\n{text}\t{opcode};\n");
            }
        }
    }

    // Source lines: an instant before a block's first instruction in a chosen range.
    if !probes.lines.is_empty() {
        for (b, block) in cfg.blocks.iter().enumerate() {
            if !reachable[b] {
                continue;
            }
            let hit = block.stmts.clone().find(|&i| {
                matches!(k.stmts[i].stmt, Stmt::Instr { .. })
                    && loc[i].is_some_and(|(f, line)| {
                        probes
                            .lines
                            .iter()
                            .any(|r| r.contains(m.file_path(f).unwrap_or(""), line))
                    })
            });
            if let Some(i) = hit {
                let name = source(i).expect("a hit has a .loc");
                let r = region(&mut out, name.clone(), false)?;
                out.probes.push(Probe {
                    kind: ProbeKind::Line,
                    region: r,
                    ptx_line: k.stmts[i].line,
                    source: Some(name),
                });
                writes.push(k.stmts[i].at.start);
                edits.push(Edit {
                    at: k.stmts[i].at.start,
                    order: LINE,
                    end: None,
                    text: skipped(emit::instant(isa, symbol, r)),
                });
            }
        }
    }

    // The lane's placement: at the end of the entry's straight-line code, or before its
    // first probe that writes, whichever comes first. Every probe that writes is then
    // after it, on every path (anything past the entry is reached through its end).
    let place_at = writes.iter().copied().filter(|&w| w >= init_at).fold(
        entry_end(k, &cfg, &preds, init_at, probes.lines.is_empty()),
        usize::min,
    );
    // Where it falls on an exit with nothing else there (straight-line code), the
    // finalize takes it in: one branch past both, and no vote between them.
    let alone = |e: &Edit| e.at != place_at || e.order == EXIT;
    match exits.iter().find(|(i, ..)| edits[*i].at == place_at) {
        Some((i, skip, raw)) if edits.iter().all(alone) => {
            edits[*i].text = emit::skipped(*skip, &(emit::place(symbol, false) + raw));
        }
        _ => edits.push(Edit {
            at: place_at,
            order: PLACE,
            end: None,
            text: skipped(emit::place(symbol, true)),
        }),
    }

    if !trampolines.is_empty() {
        let last = k
            .stmts
            .iter()
            .rev()
            .find(|s| s.op().is_some())
            .expect("a kernel with an exit has an instruction");
        let falls_through = match &last.stmt {
            Stmt::Instr { guard, .. } => {
                guard.is_some() || !matches!(last.op(), Some("ret" | "exit" | "bra" | "trap"))
            }
            _ => true,
        };
        if falls_through {
            return Err(InstrumentError::Unsupported {
                line: last.line,
                reason: format!("kernel {} does not end in ret, exit or a branch", k.name),
            });
        }
        edits.push(Edit {
            at: last.at.end,
            order: 10,
            end: None,
            text: format!("\n// ikp: trampolines\n{trampolines}"),
        });
    }
    Ok((edits, out))
}

/// Where the kernel's entry ends, the lane's latest place: every path from the kernel's
/// start runs the entry, and nothing in it writes to the lane.
///
/// The entry is straight-line code (block 0 and each block that the one before alone falls
/// into, across labels nothing else branches to), and, where `skip_loops` (no line probes),
/// the innermost loops it runs whole: a loop entered from it with no exit but one
/// fall-through edge into a block nothing else enters, and no `ret` or `exit` inside (its
/// probes are trip adds, its end on that edge; the entry goes on after it). The entry ends
/// at its last block's branch, `ret`, `exit` or `trap`, or where it falls into a label
/// that something else branches to. Where it leads into a loop it cannot run whole, it
/// ends at that loop's preheader's top (the lane's stores after the loop's set-up, and
/// ptxas no longer unrolls the loop; the loop's begin sits there too, see `block_top`);
/// an entry block that is itself a loop's header ends the entry at once.
fn entry_end(k: &Kernel, cfg: &Cfg, preds: &[usize], init_at: usize, skip_loops: bool) -> usize {
    if preds[0] > 0 {
        return init_at;
    }
    let start_of = |b: usize| {
        k.stmts
            .get(cfg.blocks[b].stmts.start)
            .map_or(k.body.end - 1, |s| s.at.start)
    };
    let (mut b, mut top) = (0, init_at);
    loop {
        while cfg.blocks[b].succs
            == [Edge {
                to: b + 1,
                branch: false,
            }]
            && !cfg.blocks[b].exits
            && preds[b + 1] == 1
        {
            b += 1;
        }
        let block = &cfg.blocks[b];
        let Some(l) = cfg
            .loops
            .iter()
            .find(|l| block.succs.iter().any(|e| e.to == l.header))
        else {
            break;
        };
        let exits: Vec<Edge> = l
            .body
            .iter()
            .flat_map(|&u| &cfg.blocks[u].succs)
            .filter(|e| l.body.binary_search(&e.to).is_err())
            .copied()
            .collect();
        let innermost = !cfg
            .loops
            .iter()
            .any(|o| o.header != l.header && l.body.contains(&o.header));
        match exits[..] {
            [Edge { to, branch: false }]
                if skip_loops
                    && innermost
                    && block.succs.len() == 1
                    && !block.exits
                    && preds[to] == 1
                    && l.body.iter().all(|&u| !cfg.blocks[u].exits) =>
            {
                b = to;
                top = start_of(to);
            }
            _ => return top,
        }
    }
    let block = &cfg.blocks[b];
    let last = block
        .stmts
        .clone()
        .rev()
        .find(|&i| k.stmts[i].op().is_some());
    let end = match last {
        Some(i)
            if matches!(
                k.stmts[i].op(),
                Some("bra" | "brx" | "ret" | "exit" | "trap")
            ) =>
        {
            k.stmts[i].at.start
        }
        _ => k
            .stmts
            .get(block.stmts.end)
            .map_or(k.body.end - 1, |s| s.at.start),
    };
    end.max(init_at)
}

/// Each block's number of incoming edges.
fn predecessors(cfg: &Cfg) -> Vec<usize> {
    let mut n = vec![0; cfg.blocks.len()];
    for e in cfg.blocks.iter().flat_map(|b| &b.succs) {
        n[e.to] += 1;
    }
    n
}

fn reachable(cfg: &Cfg) -> Vec<bool> {
    let mut seen = vec![false; cfg.blocks.len()];
    let mut work = vec![0];
    while let Some(b) = work.pop() {
        if !std::mem::replace(&mut seen[b], true) {
            work.extend(cfg.blocks[b].succs.iter().map(|e| e.to));
        }
    }
    seen
}

/// Applies edits to `text`.
pub(crate) fn apply(text: &str, mut edits: Vec<Edit>) -> String {
    edits.sort_by_key(|e| (e.at, e.order));
    let mut out =
        String::with_capacity(text.len() + edits.iter().map(|e| e.text.len()).sum::<usize>());
    let mut pos = 0;
    for e in edits {
        // Edits sit at statement boundaries or replace within one statement, so none
        // overlaps another: the tests hold that.
        debug_assert!(e.at >= pos, "overlapping edits at {}", e.at);
        if e.at < pos {
            continue;
        }
        out.push_str(&text[pos..e.at]);
        out.push_str(&e.text);
        if !e.text.ends_with('\n') && e.end.is_none() {
            out.push('\t');
        }
        pos = e.end.unwrap_or(e.at);
    }
    out.push_str(&text[pos..]);
    out
}
