//! A kernel body's control flow: basic blocks, their edges, dominators and natural loops.
//!
//! Loops are found the textbook way (a back edge `u → h` where `h` dominates `u`; the
//! loop is every block that reaches `u` without passing `h`), so they are the loops the
//! compiler laid out, whatever the source language. A body whose control flow is
//! irreducible (a cycle entered other than through one header) or that jumps through a
//! table (`brx.idx`) is refused: a region's begin and end could not be placed on it.

use std::collections::HashMap;

use super::ptx::{branch_target, Kernel, Located, Stmt};
use super::InstrumentError;

/// One basic block: statements `stmts` of the kernel, and its successors.
#[derive(Clone, Debug)]
pub(crate) struct Block {
    /// Statement indices (into `Kernel::stmts`).
    pub stmts: std::ops::Range<usize>,
    /// The label that starts it, if any.
    pub label: Option<String>,
    /// Successors: the taken branch first, then the fall-through.
    pub succs: Vec<Edge>,
    /// Ends in a `ret` / `exit` (guarded or not): the kernel may leave here.
    pub exits: bool,
}

/// A control-flow edge out of a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Edge {
    pub to: usize,
    /// Taken by the block's final branch (else: falls through).
    pub branch: bool,
}

/// A natural loop.
#[derive(Clone, Debug)]
pub(crate) struct Loop {
    pub header: usize,
    /// Every block of the loop, header included, sorted.
    pub body: Vec<usize>,
}

/// The control flow of one kernel.
#[derive(Clone, Debug)]
pub(crate) struct Cfg {
    pub blocks: Vec<Block>,
    /// Loops, by header position in the text (an outer loop before the loops it holds).
    pub loops: Vec<Loop>,
}

fn is_terminator(op: &str) -> bool {
    matches!(op, "bra" | "brx" | "ret" | "exit" | "trap")
}

impl Cfg {
    /// Builds blocks, edges and loops of `k`.
    pub fn of(k: &Kernel) -> Result<Cfg, InstrumentError> {
        let blocks = split(k)?;
        let loops = loops(&blocks, k)?;
        Ok(Cfg { blocks, loops })
    }

    /// Loops containing block `b`, innermost first.
    pub fn loops_of(&self, b: usize) -> Vec<usize> {
        let mut ls: Vec<usize> = (0..self.loops.len())
            .filter(|&l| self.loops[l].body.binary_search(&b).is_ok())
            .collect();
        ls.sort_by_key(|&l| self.loops[l].body.len());
        ls
    }
}

/// Splits the body into blocks: a label starts one, a branch, `ret` or `exit` ends one.
fn split(k: &Kernel) -> Result<Vec<Block>, InstrumentError> {
    let mut starts = vec![0];
    for (i, s) in k.stmts.iter().enumerate() {
        match &s.stmt {
            Stmt::Label(_) if i > 0 => starts.push(i),
            _ if s.op().is_some_and(is_terminator) => starts.push(i + 1),
            _ => {}
        }
    }
    starts.push(k.stmts.len());
    starts.dedup();
    let ranges: Vec<_> = starts.windows(2).map(|w| w[0]..w[1]).collect();
    let mut by_label = HashMap::new();
    for (b, r) in ranges.iter().enumerate() {
        if let Some(Located {
            stmt: Stmt::Label(l),
            line,
            ..
        }) = k.stmts.get(r.start)
        {
            if by_label.insert(l.clone(), b).is_some() {
                return Err(InstrumentError::Unsupported {
                    line: *line,
                    reason: format!("label {l} is defined twice"),
                });
            }
        }
    }
    let n = ranges.len();
    let mut blocks = Vec::with_capacity(n);
    for (b, r) in ranges.iter().enumerate() {
        let label = match k.stmts.get(r.start).map(|s| &s.stmt) {
            Some(Stmt::Label(l)) => Some(l.clone()),
            _ => None,
        };
        let last = k.stmts[r.clone()].iter().rev().find(|s| s.op().is_some());
        let next = (b + 1 < n).then_some(Edge {
            to: b + 1,
            branch: false,
        });
        let (succs, exits) = match last.map(|s| (s, &s.stmt)) {
            Some((
                s,
                Stmt::Instr {
                    guard,
                    operands,
                    operands_at,
                    ..
                },
            )) => {
                let guarded = guard.is_some();
                match s.op().unwrap_or("") {
                    "bra" => {
                        let (target, _) =
                            branch_target(operands, operands_at).ok_or_else(|| {
                                InstrumentError::Unsupported {
                                    line: s.line,
                                    reason: format!("branch to `{operands}`"),
                                }
                            })?;
                        let to =
                            *by_label
                                .get(&target)
                                .ok_or_else(|| InstrumentError::Unsupported {
                                    line: s.line,
                                    reason: format!(
                                        "branch to {target}, which is not a label of the kernel"
                                    ),
                                })?;
                        let mut succs = vec![Edge { to, branch: true }];
                        if guarded {
                            succs.extend(next);
                        }
                        (succs, false)
                    }
                    "brx" => {
                        return Err(InstrumentError::Unsupported {
                            line: s.line,
                            reason: "indirect branch (brx.idx): its targets cannot be followed"
                                .into(),
                        })
                    }
                    "ret" | "exit" => (
                        if guarded {
                            next.into_iter().collect()
                        } else {
                            vec![]
                        },
                        true,
                    ),
                    "trap" if !guarded => (vec![], false),
                    _ => (next.into_iter().collect(), false),
                }
            }
            _ => (next.into_iter().collect(), false),
        };
        blocks.push(Block {
            stmts: r.clone(),
            label,
            succs,
            exits,
        });
    }
    Ok(blocks)
}

/// Reverse post-order of the blocks reachable from block 0.
fn rpo(blocks: &[Block]) -> Vec<usize> {
    let mut seen = vec![false; blocks.len()];
    let mut order = Vec::new();
    // Iterative DFS: (block, next successor index).
    let mut stack = vec![(0usize, 0usize)];
    seen[0] = true;
    while let Some((b, i)) = stack.pop() {
        if let Some(e) = blocks[b].succs.get(i) {
            stack.push((b, i + 1));
            if !seen[e.to] {
                seen[e.to] = true;
                stack.push((e.to, 0));
            }
        } else {
            order.push(b);
        }
    }
    order.reverse();
    order
}

/// Immediate dominators (Cooper, Harvey and Kennedy); `None` for unreachable blocks.
fn dominators(blocks: &[Block], order: &[usize]) -> Vec<Option<usize>> {
    let mut index = vec![usize::MAX; blocks.len()];
    for (i, &b) in order.iter().enumerate() {
        index[b] = i;
    }
    let mut preds = vec![Vec::new(); blocks.len()];
    for &b in order {
        for e in &blocks[b].succs {
            preds[e.to].push(b);
        }
    }
    let mut idom = vec![None; blocks.len()];
    idom[0] = Some(0);
    let mut changed = true;
    while changed {
        changed = false;
        for &b in order.iter().skip(1) {
            let mut new: Option<usize> = None;
            for &p in &preds[b] {
                if idom[p].is_none() {
                    continue;
                }
                new = Some(match new {
                    None => p,
                    Some(mut a) => {
                        let mut c = p;
                        while a != c {
                            while index[a] > index[c] {
                                a = idom[a].expect("processed");
                            }
                            while index[c] > index[a] {
                                c = idom[c].expect("processed");
                            }
                        }
                        a
                    }
                });
            }
            if new.is_some() && idom[b] != new {
                idom[b] = new;
                changed = true;
            }
        }
    }
    idom
}

fn dominates(idom: &[Option<usize>], a: usize, mut b: usize) -> bool {
    loop {
        if a == b {
            return true;
        }
        match idom[b] {
            Some(p) if p != b => b = p,
            _ => return false,
        }
    }
}

fn loops(blocks: &[Block], k: &Kernel) -> Result<Vec<Loop>, InstrumentError> {
    let order = rpo(blocks);
    let idom = dominators(blocks, &order);
    let mut index = vec![usize::MAX; blocks.len()];
    for (i, &b) in order.iter().enumerate() {
        index[b] = i;
    }
    let mut by_header: HashMap<usize, Vec<usize>> = HashMap::new();
    for &u in &order {
        for e in &blocks[u].succs {
            let h = e.to;
            if index[h] <= index[u] {
                if !dominates(&idom, h, u) {
                    let line = k.stmts.get(blocks[h].stmts.start).map_or(0, |s| s.line);
                    return Err(InstrumentError::Unsupported {
                        line,
                        reason: "irreducible control flow: a cycle is entered other than through one header".into(),
                    });
                }
                by_header.entry(h).or_default().push(u);
            }
        }
    }
    let mut preds = vec![Vec::new(); blocks.len()];
    for &b in &order {
        for e in &blocks[b].succs {
            preds[e.to].push(b);
        }
    }
    let mut loops: Vec<Loop> = by_header
        .into_iter()
        .map(|(h, latches)| {
            let mut body = vec![h];
            let mut work = latches;
            while let Some(b) = work.pop() {
                if !body.contains(&b) {
                    body.push(b);
                    work.extend(preds[b].iter().copied());
                }
            }
            body.sort_unstable();
            Loop { header: h, body }
        })
        .collect();
    loops.sort_by_key(|l| (l.header, std::cmp::Reverse(l.body.len())));
    Ok(loops)
}

#[cfg(test)]
mod tests {
    use super::super::ptx::Module;
    use super::*;

    fn cfg_of(body: &str) -> Result<Cfg, InstrumentError> {
        let text = format!(
            ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{{\n{body}\n}}\n"
        );
        let m = Module::parse(&text)?;
        Cfg::of(&m.kernels[0])
    }

    #[test]
    fn finds_nested_loops_and_their_blocks() {
        let cfg = cfg_of(
            "mov.u32 %r1, 0;\n$O:\nmov.u32 %r2, 0;\n$I:\nadd.u32 %r2, %r2, 1;\n@%p1 bra $I;\n\
             add.u32 %r1, %r1, 1;\n@%p2 bra $O;\nret;",
        )
        .unwrap();
        assert_eq!(cfg.loops.len(), 2);
        let (outer, inner) = (&cfg.loops[0], &cfg.loops[1]);
        assert!(outer.body.len() > inner.body.len());
        assert!(inner.body.iter().all(|b| outer.body.contains(b)));
        assert_eq!(cfg.loops_of(inner.header), vec![1, 0]);
        let ret_block = cfg.blocks.iter().position(|b| b.exits).unwrap();
        assert!(cfg.loops_of(ret_block).is_empty());
    }

    #[test]
    fn refuses_irreducible_flow_and_jump_tables() {
        let err = cfg_of("@%p1 bra $B;\n$A:\nadd.u32 %r1, %r1, 1;\n$B:\nadd.u32 %r1, %r1, 2;\n@%p2 bra $A;\nret;")
            .unwrap_err();
        assert!(err.to_string().contains("irreducible"), "{err}");
        // A loop entered only through its header is fine.
        assert_eq!(
            cfg_of("$A:\nadd.u32 %r1, %r1, 1;\n@%p2 bra $A;\nret;")
                .unwrap()
                .loops
                .len(),
            1
        );
        let err = cfg_of("brx.idx %r1, $T;\nret;").unwrap_err();
        assert!(err.to_string().contains("brx.idx"), "{err}");
    }
}
