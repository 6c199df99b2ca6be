//! `cuobjdump -sass` listings as instruction lists.
//!
//! Only the instruction text is kept (no addresses in the comparison, no encodings, no
//! register-usage headers), so two kernels compare equal exactly when they issue the same
//! instructions. Each kernel ends at its self-branch (`BRA` to its own address); the `NOP`
//! padding after it is not code and is dropped.

use super::SassError;
use std::collections::BTreeMap;

/// One instruction: its address and its text (`@!P1 STG.E.64 desc[UR6][R2.64], R4`).
pub type Insn = (u64, String);

/// A loop as indices into its kernel's instructions: the backward branch's target, the
/// branch.
type LoopSpan = (usize, usize);

/// The SASS of every kernel of a cubin.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sass {
    /// Kernel name to instructions, in address order.
    pub kernels: BTreeMap<String, Vec<Insn>>,
}

/// The kernel being parsed: name, instructions, and whether its end was seen.
type Current = Option<(String, Vec<Insn>, bool)>;

impl Sass {
    /// Parses `cuobjdump -sass` output. Lines that are not instructions are ignored, so
    /// any text parses (to no kernels at worst).
    pub fn parse(text: &str) -> Sass {
        let mut kernels = BTreeMap::new();
        let mut current: Current = None;
        for line in text.lines() {
            let t = line.trim();
            if let Some(name) = t.strip_prefix("Function : ") {
                if let Some((n, ins, _)) = current.take() {
                    kernels.insert(n, ins);
                }
                current = Some((name.trim().to_owned(), Vec::new(), false));
                continue;
            }
            let Some((_, ins, done)) = current.as_mut() else {
                continue;
            };
            // `/*0a30*/   @!P1 STG.E.64 desc[UR6][R2.64], R4 ;   /* 0x... */`
            let Some(rest) = t.strip_prefix("/*") else {
                continue;
            };
            let Some((addr, rest)) = rest.split_once("*/") else {
                continue;
            };
            let Ok(addr) = u64::from_str_radix(addr, 16) else {
                continue; // an encoding-only line: `/* 0x000fe2... */`
            };
            if *done {
                continue;
            }
            let text = rest.split(';').next().unwrap_or("").trim().to_owned();
            if text.is_empty() {
                continue;
            }
            if branch_target(&text) == Some(addr) {
                *done = true; // `BRA self`: end of the kernel, padding follows
                continue;
            }
            ins.push((addr, text));
        }
        if let Some((n, ins, _)) = current.take() {
            kernels.insert(n, ins);
        }
        Sass { kernels }
    }

    /// Instructions of kernel `name`, text only.
    pub fn kernel(&self, name: &str) -> Result<Vec<String>, SassError> {
        Ok(self.insns(name)?.iter().map(|(_, t)| t.clone()).collect())
    }

    fn insns(&self, name: &str) -> Result<&[Insn], SassError> {
        self.kernels
            .get(name)
            .map(Vec::as_slice)
            .ok_or_else(|| SassError::MissingKernel {
                kernel: name.to_owned(),
                have: self.kernels.keys().cloned().collect(),
            })
    }

    /// Every loop of kernel `name`: the instructions from a backward branch's target to the
    /// branch itself, in the order of the branches (an inner loop's branch comes first).
    pub fn loops(&self, name: &str) -> Result<Vec<Vec<String>>, SassError> {
        let (ins, loops) = self.back_edges(name)?;
        Ok(loops
            .into_iter()
            .map(|(start, end)| ins[start..=end].iter().map(|(_, t)| t.clone()).collect())
            .collect())
    }

    /// Kernel `name`'s instructions and its loops as index pairs (the backward branch's
    /// target, the branch), in the order of the branches.
    fn back_edges(&self, name: &str) -> Result<(&[Insn], Vec<LoopSpan>), SassError> {
        let ins = self.insns(name)?;
        let mut loops = Vec::new();
        for (i, (addr, text)) in ins.iter().enumerate() {
            if let Some(target) = branch_target(text).filter(|t| t < addr) {
                let start = ins.iter().position(|(a, _)| *a == target).ok_or_else(|| {
                    SassError::BranchTarget {
                        kernel: name.to_owned(),
                        target,
                    }
                })?;
                loops.push((start, i));
            }
        }
        Ok((ins, loops))
    }

    /// The body of the only loop of kernel `name` without its out-of-line calls' blocks:
    /// the instructions an iteration runs when no call is made. A call's block is what a
    /// forward branch before the call jumps over (from that branch to its target), the
    /// shape ptxas gives a rarely taken path: `@P BRA past; ... CALL ...; past:`.
    pub fn single_loop_without_calls(&self, name: &str) -> Result<Vec<String>, SassError> {
        let ins = self.insns(name)?;
        let body = self.single_loop_range(name)?;
        let body = &ins[body];
        let mut skipped = vec![false; body.len()];
        for (c, (call_addr, text)) in body.iter().enumerate() {
            if !opcode(text).starts_with("CALL") {
                continue;
            }
            let jump = body[..c].iter().rev().find_map(|(addr, t)| {
                branch_target(t)
                    .filter(|target| target > call_addr)
                    .map(|target| (*addr, target))
            });
            let Some((from, to)) = jump else {
                return Err(SassError::BranchTarget {
                    kernel: name.to_owned(),
                    target: *call_addr,
                });
            };
            for (k, (addr, _)) in body.iter().enumerate() {
                if *addr > from && *addr < to {
                    skipped[k] = true;
                }
            }
        }
        Ok(body
            .iter()
            .zip(skipped)
            .filter(|(_, s)| !s)
            .map(|((_, t), _)| t.clone())
            .collect())
    }

    /// One pass through each outermost loop of kernel `name` that holds another loop, every
    /// inner loop left at its first test: a predicated forward branch over a whole inner
    /// loop is taken (the first try the compiler peels off a retry loop, which jumps past
    /// it when the try passes), an unconditional forward branch within the loop is taken,
    /// and every other instruction falls through (an inner loop's back edge included, so
    /// an inner loop that is not peeled runs its body once). What a loop around a wait
    /// issues per iteration when the wait never spins.
    pub fn first_passes(&self, name: &str) -> Result<Vec<Vec<String>>, SassError> {
        let (ins, loops) = self.back_edges(name)?;
        let index = |target: u64| {
            ins.iter()
                .position(|(a, _)| *a == target)
                .ok_or_else(|| SassError::BranchTarget {
                    kernel: name.to_owned(),
                    target,
                })
        };
        let inside = |a: LoopSpan, b: LoopSpan| a != b && b.0 <= a.0 && a.1 <= b.1;
        let mut passes = Vec::new();
        for &(start, end) in &loops {
            let holds = loops.iter().any(|&l| inside(l, (start, end)));
            if !holds || loops.iter().any(|&l| inside((start, end), l)) {
                continue;
            }
            let mut pass = Vec::new();
            let mut i = start;
            while i <= end {
                let (addr, text) = &ins[i];
                pass.push(text.clone());
                let forward = branch_target(text).filter(|t| t > addr);
                let next = forward.map(index).transpose()?.filter(|&t| {
                    let skips_loop = loops.iter().any(|&(s, e)| i < s && e < t);
                    t <= end && (!text.starts_with('@') || skips_loop)
                });
                i = next.unwrap_or(i + 1);
            }
            passes.push(pass);
        }
        Ok(passes)
    }

    /// Index range of the only loop of kernel `name` in its instructions.
    fn single_loop_range(&self, name: &str) -> Result<std::ops::Range<usize>, SassError> {
        match self.back_edges(name)?.1[..] {
            [(start, end)] => Ok(start..end + 1),
            ref found => Err(SassError::LoopCount {
                kernel: name.to_owned(),
                found: found.len(),
            }),
        }
    }

    /// The instructions one warp issues along a path through kernel `name`, each loop's
    /// body once: from the kernel's first instruction, a backward branch falls through, an
    /// unconditional forward branch is taken, and a predicated forward branch or `EXIT` is
    /// taken where `take` says so; the path ends at an `EXIT` taken. `take` sees every
    /// instruction of the path in order, with its address (so it can follow the
    /// predicates it cares about), and is asked about each; it decides only the predicated
    /// branches and exits. What a warp that records nothing runs, say, against what a
    /// recording warp runs.
    pub fn path(
        &self,
        name: &str,
        mut take: impl FnMut(u64, &str) -> bool,
    ) -> Result<Vec<String>, SassError> {
        let ins = self.insns(name)?;
        let mut path = Vec::new();
        let mut i = 0;
        while let Some((addr, text)) = ins.get(i) {
            path.push(text.clone());
            let taken = take(*addr, text);
            let predicated = text.starts_with('@');
            let op = opcode(text);
            if op == "EXIT" && (!predicated || taken) {
                break;
            }
            match branch_target(text).filter(|t| t > addr) {
                Some(target) if !predicated || taken => {
                    i = ins.iter().position(|(a, _)| *a == target).ok_or_else(|| {
                        SassError::BranchTarget {
                            kernel: name.to_owned(),
                            target,
                        }
                    })?;
                }
                _ => i += 1,
            }
        }
        Ok(path)
    }

    /// The code a warp runs around the longest loop of kernel `name` besides the loop
    /// itself, where the loop is a branch of its own (a counted wait's spin loop, say):
    /// `(head, tail)`, the instructions from the branch target that leads into the loop
    /// (the nearest target of a forward branch at or before the loop's first instruction)
    /// up to that instruction, and those after the loop's back edge up to the join (the
    /// first target of a forward branch from before the loop, or an `EXIT`). What a wait
    /// that spun runs once besides its spins.
    pub fn loop_entry_exit(&self, name: &str) -> Result<(Vec<String>, Vec<String>), SassError> {
        let (ins, loops) = self.back_edges(name)?;
        // The first of the longest (max_by_key would take the last).
        let longest = loops
            .iter()
            .copied()
            .reduce(|a, b| if b.1 - b.0 > a.1 - a.0 { b } else { a });
        let (start, end) = longest.ok_or_else(|| SassError::LoopCount {
            kernel: name.to_owned(),
            found: 0,
        })?;
        // Targets of the forward branches before the loop.
        let targets: Vec<u64> = ins[..start]
            .iter()
            .filter_map(|(addr, text)| branch_target(text).filter(|t| t > addr))
            .collect();
        let head_from = (0..=start)
            .rev()
            .find(|&k| targets.contains(&ins[k].0))
            .unwrap_or(start);
        let tail_to = (end + 1..ins.len())
            .find(|&k| targets.contains(&ins[k].0) || opcode(&ins[k].1) == "EXIT")
            .unwrap_or(ins.len());
        let texts = |r: std::ops::Range<usize>| ins[r].iter().map(|(_, t)| t.clone()).collect();
        Ok((texts(head_from..start), texts(end + 1..tail_to)))
    }

    /// The bodies of the two loops of kernel `name`, (shorter, longer): the two copies of a
    /// loop the compiler built, one for each side of a branch before it (a counted wait's
    /// spin loop and the bare one, `Lane::dispatch`'s recording copy and the other).
    pub fn two_copies(&self, name: &str) -> Result<(Vec<String>, Vec<String>), SassError> {
        let mut loops = self.loops(name)?;
        if loops.len() != 2 {
            return Err(SassError::LoopCount {
                kernel: name.to_owned(),
                found: loops.len(),
            });
        }
        loops.sort_by_key(Vec::len);
        let long = loops.pop().unwrap_or_default();
        Ok((loops.pop().unwrap_or_default(), long))
    }

    /// The body of the only loop of kernel `name`.
    pub fn single_loop(&self, name: &str) -> Result<Vec<String>, SassError> {
        let mut loops = self.loops(name)?;
        if loops.len() != 1 {
            return Err(SassError::LoopCount {
                kernel: name.to_owned(),
                found: loops.len(),
            });
        }
        Ok(loops.pop().unwrap_or_default())
    }
}

/// The target of a (possibly predicated) `BRA 0x...`.
fn branch_target(text: &str) -> Option<u64> {
    if opcode(text) != "BRA" {
        return None;
    }
    let target = text.split_whitespace().last()?;
    u64::from_str_radix(target.strip_prefix("0x")?, 16).ok()
}

/// The opcode of an instruction, without its predicate (`@!P1 STG.E.64 [R2.64], R4` ->
/// `STG.E.64`).
pub fn opcode(ins: &str) -> &str {
    let mut words = ins.split_whitespace().peekable();
    words.next_if(|w| w.starts_with('@'));
    words.next().unwrap_or("")
}

/// Opcodes of `a` that `b` lacks, counted as multisets: what a site added to a loop body.
pub fn opcode_difference<'a>(a: &'a [String], b: &[String]) -> Vec<&'a str> {
    let mut rest: Vec<&str> = b.iter().map(|i| opcode(i)).collect();
    let mut extra = Vec::new();
    for op in a.iter().map(|i| opcode(i)) {
        match rest.iter().position(|r| *r == op) {
            Some(i) => {
                rest.swap_remove(i);
            }
            None => extra.push(op),
        }
    }
    extra
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A path's opcodes, space-separated.
    fn ops(p: &[String]) -> String {
        p.iter().map(|i| opcode(i)).collect::<Vec<_>>().join(" ")
    }

    // Shaped like `cuobjdump -sass` output of two kernels (one with a loop), trimmed.
    const LISTING: &str = "
	code for sm_80
		Function : spin
	.headerflags	@\"EF_CUDA_TEXMODE_UNIFIED EF_CUDA_64BIT_ADDRESS EF_CUDA_SM80 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM80)\"
        /*0000*/                   IMAD.MOV.U32 R1, RZ, RZ, c[0x0][0x28] ;        /* 0x00000a0000017a02 */
                                                                                  /* 0x000fe40000000f00 */
        /*0010*/                   LDG.E.STRONG.SYS R0, [R2.64] ;                 /* 0x0000000402007981 */
        /*0020*/                   UIADD3 UR4, UR4, 0x1, URZ ;                    /* 0x0000000104047890 */
        /*0030*/              @!P0 BRA 0x10 ;                                     /* 0xffffffd000008947 */
        /*0040*/                   EXIT ;                                         /* 0x000000000000794d */
        /*0050*/                   BRA 0x50;                                      /* 0xfffffff000007947 */
        /*0060*/                   NOP;                                           /* 0x0000000000007918 */
		..........
		Function : empty
        /*0000*/                   EXIT ;                                         /* 0x000000000000794d */
        /*0010*/                   BRA 0x10;                                      /* 0xfffffff000007947 */
";

    #[test]
    fn parses_kernels_up_to_the_self_branch() {
        let s = Sass::parse(LISTING);
        assert_eq!(s.kernels.len(), 2);
        assert_eq!(
            s.kernel("spin").unwrap(),
            [
                "IMAD.MOV.U32 R1, RZ, RZ, c[0x0][0x28]",
                "LDG.E.STRONG.SYS R0, [R2.64]",
                "UIADD3 UR4, UR4, 0x1, URZ",
                "@!P0 BRA 0x10",
                "EXIT"
            ]
        );
        assert_eq!(s.kernel("empty").unwrap(), ["EXIT"]);
        let err = s.kernel("nope").unwrap_err().to_string();
        assert!(err.contains("empty, spin"), "{err}");
    }

    #[test]
    fn finds_the_loop_between_a_backward_branch_and_its_target() {
        let s = Sass::parse(LISTING);
        assert_eq!(
            s.single_loop("spin").unwrap(),
            [
                "LDG.E.STRONG.SYS R0, [R2.64]",
                "UIADD3 UR4, UR4, 0x1, URZ",
                "@!P0 BRA 0x10"
            ]
        );
        assert!(matches!(
            s.single_loop("empty"),
            Err(SassError::LoopCount { found: 0, .. })
        ));
        // A branch into the middle of an instruction is reported, not a panic.
        let bad = LISTING.replace("@!P0 BRA 0x10", "@!P0 BRA 0x8");
        assert!(matches!(
            Sass::parse(&bad).loops("spin"),
            Err(SassError::BranchTarget { target: 8, .. })
        ));
    }

    #[test]
    fn a_path_runs_each_loop_once_and_takes_the_branches_it_is_told_to() {
        let listing = "\
        Function : k
        /*0000*/                   ISETP.GE.U32.AND P0, PT, R5, R2, PT ;
        /*0010*/               @P0 BRA 0x40 ;
        /*0020*/                   ATOMG.E.INC.STRONG.GPU PT, R11, desc[UR6][R2.64], R11 ;
        /*0030*/                   CS2R R4, SR_GLOBALTIMERLO ;
        /*0040*/                   LDG.E R6, desc[UR6][R8.64] ;
        /*0050*/              @!P1 BRA 0x40 ;
        /*0060*/                   BRA 0x80 ;
        /*0070*/                   MOV R0, RZ ;
        /*0080*/               @P0 EXIT ;
        /*0090*/                   STG.E desc[UR6][R8.64], R6 ;
        /*00a0*/                   EXIT ;
        /*00b0*/                   BRA 0xb0;
";
        let s = Sass::parse(listing);
        // Falling through every predicated branch and exit: the whole kernel but what the
        // unconditional branch jumps, the loop once.
        let all = s.path("k", |_, _| false).unwrap();
        assert_eq!(
            ops(&all),
            "ISETP.GE.U32.AND BRA ATOMG.E.INC.STRONG.GPU CS2R LDG.E BRA BRA EXIT STG.E EXIT"
        );
        // Taking the branch on P0 (by its address: not the exit at 0x80): past the atomic.
        let mut seen = Vec::new();
        let off = s
            .path("k", |a, i| {
                seen.push(i.to_owned());
                i.starts_with("@P0") && a != 0x80
            })
            .unwrap();
        assert_eq!(
            ops(&off),
            "ISETP.GE.U32.AND BRA LDG.E BRA BRA EXIT STG.E EXIT"
        );
        assert_eq!(seen, off, "take sees the path, in order");
        assert!(s.path("nope", |_, _| true).is_err());
    }

    #[test]
    fn a_loops_call_block_is_left_out_of_its_path_without_calls() {
        let listing = "\
        Function : k
        /*0000*/                   MOV R1, RZ ;
        /*0010*/                   ISETP.NE.AND P1, PT, R7, R6, PT ;
        /*0020*/               @P1 STG.E.64 desc[UR8][R10.64], R18 ;
        /*0030*/               @P1 BRA 0x70 ;
        /*0040*/                   MOV R0, 0x60 ;
        /*0050*/                   CALL.REL.NOINC 0xa0 ;
        /*0060*/                   IMAD.MOV.U32 R7, RZ, RZ, R8 ;
        /*0070*/                   VIADD R15, R15, 0x1 ;
        /*0080*/              @!P2 BRA 0x10 ;
        /*0090*/                   EXIT ;
        /*00a0*/                   RET.REL.NODEC R16 0x0 ;
        /*00b0*/                   BRA 0xb0 ;
        ";
        let s = Sass::parse(listing);
        assert_eq!(s.single_loop("k").unwrap().len(), 8);
        assert_eq!(
            s.single_loop_without_calls("k").unwrap(),
            [
                "ISETP.NE.AND P1, PT, R7, R6, PT",
                "@P1 STG.E.64 desc[UR8][R10.64], R18",
                "@P1 BRA 0x70",
                "VIADD R15, R15, 0x1",
                "@!P2 BRA 0x10",
            ]
        );
        // A call no branch jumps over cannot be told apart from the loop's own path.
        let bare = listing.replace("@P1 BRA 0x70", "NOP");
        assert!(Sass::parse(&bare).single_loop_without_calls("k").is_err());
    }

    #[test]
    fn a_first_pass_jumps_past_a_peeled_retry_loop_and_runs_one_that_is_not_once() {
        // A loop around a wait whose first try is peeled off (LDS, then a jump past the
        // retry loop at 0x40), then a try loop that no loop holds (0xb0).
        let listing = "\
        Function : k
        /*0000*/                   VIADD R9, R9, 0x1 ;
        /*0010*/                   LDS R2, [R3] ;
        /*0020*/                   ISETP.GT.U32.AND P0, PT, R2, R4, PT ;
        /*0030*/               @P0 BRA 0x80 ;
        /*0040*/                   LDS R2, [R3] ;
        /*0050*/                   IADD3 R6, P1, R6, 0x1, RZ ;
        /*0060*/                   ISETP.GT.U32.AND P0, PT, R2, R4, PT ;
        /*0070*/              @!P0 BRA 0x40 ;
        /*0080*/                   STS [R3], R9 ;
        /*0090*/               @P2 BRA 0x0 ;
        /*00a0*/                   BRA 0xb0 ;
        /*00b0*/                   LDS R2, [R3] ;
        /*00c0*/                   ISETP.GT.U32.AND P0, PT, R2, R4, PT ;
        /*00d0*/              @!P0 BRA 0xb0 ;
        /*00e0*/                   NOP ;
        /*00f0*/                   EXIT ;
        /*0100*/                   BRA 0x100 ;
        ";
        let s = Sass::parse(listing);
        let passes = s.first_passes("k").unwrap();
        assert_eq!(
            passes.len(),
            1,
            "the loop at 0xb0 holds no other loop: {passes:?}"
        );
        assert_eq!(ops(&passes[0]), "VIADD LDS ISETP.GT.U32.AND BRA STS BRA");
        // Not peeled: the try loop's body runs once, its back edge falls through.
        let unpeeled = listing.replace("@P0 BRA 0x80", "NOP");
        assert_eq!(
            ops(&Sass::parse(&unpeeled).first_passes("k").unwrap()[0]),
            "VIADD LDS ISETP.GT.U32.AND NOP LDS IADD3 ISETP.GT.U32.AND BRA STS BRA"
        );
        assert!(s.first_passes("nope").is_err());
    }

    #[test]
    fn a_counted_wait_spins_its_loop_between_a_head_and_a_tail() {
        // A counted wait as ptxas lays it out: the first try (0x10), the branch to the
        // counting warp's loop (0x30), the bare loop of any other warp (0x40), the count's
        // reset (0x80), the counted loop (0x90 .. 0xc0), its add (0xd0, 0xe0), the join.
        let listing = "\
        Function : k
        /*0000*/                   LDS R2, [R3] ;
        /*0010*/                   ISETP.GT.U32.AND P0, PT, R2, R4, PT ;
        /*0020*/               @P0 BRA 0xf0 ;
        /*0030*/               @P2 BRA 0x80 ;
        /*0040*/                   LDS R2, [R3] ;
        /*0050*/                   ISETP.GT.U32.AND P0, PT, R2, R4, PT ;
        /*0060*/              @!P0 BRA 0x40 ;
        /*0070*/                   BRA 0xf0 ;
        /*0080*/                   IMAD.MOV.U32 R5, RZ, RZ, RZ ;
        /*0090*/                   LDS R2, [R3] ;
        /*00a0*/                   VIADD R5, R5, 0x1 ;
        /*00b0*/                   ISETP.GT.U32.AND P0, PT, R2, R4, PT ;
        /*00c0*/              @!P0 BRA 0x90 ;
        /*00d0*/                   IADD3 R6, P0, R5, R6, RZ ;
        /*00e0*/                   IMAD.X R7, RZ, RZ, R7, P0 ;
        /*00f0*/                   STS [R3], R9 ;
        /*0100*/                   EXIT ;
        /*0110*/                   BRA 0x110 ;
        ";
        let s = Sass::parse(listing);
        let (head, tail) = s.loop_entry_exit("k").unwrap();
        assert_eq!(ops(&head), "IMAD.MOV.U32");
        assert_eq!(ops(&tail), "IADD3 IMAD.X");
        let (bare, counted) = s.two_copies("k").unwrap();
        assert_eq!(ops(&bare), "LDS ISETP.GT.U32.AND BRA");
        assert_eq!(ops(&counted), "LDS VIADD ISETP.GT.U32.AND BRA");
        assert!(Sass::parse(LISTING).two_copies("spin").is_err(), "one loop");
        // Without a join the tail runs to the exit.
        let unjoined = listing
            .replace("@P0 BRA 0xf0", "NOP")
            .replace("BRA 0xf0", "NOP");
        let (_, tail) = Sass::parse(&unjoined).loop_entry_exit("k").unwrap();
        assert_eq!(ops(&tail), "IADD3 IMAD.X STS");
        assert!(
            Sass::parse("Function : k\n/*0000*/ EXIT ;\n/*0010*/ BRA 0x10 ;")
                .loop_entry_exit("k")
                .is_err()
        );
    }

    #[test]
    fn opcodes_and_their_multiset_difference() {
        assert_eq!(opcode("@!P1 STG.E.64 [R2.64], R4"), "STG.E.64");
        assert_eq!(opcode("EXIT"), "EXIT");
        let a: Vec<String> = ["IADD3 R1", "LDG R2", "IADD3 R3", "BRA 0x0"]
            .map(String::from)
            .to_vec();
        let b: Vec<String> = ["LDG R2", "IADD3 R1", "BRA 0x0"].map(String::from).to_vec();
        assert_eq!(opcode_difference(&a, &b), ["IADD3"]);
        assert!(opcode_difference(&b, &a).is_empty());
    }

    #[test]
    fn garbage_parses_to_nothing() {
        assert!(Sass::parse("not a listing\n/* x */\n/*zz*/ FOO ;")
            .kernels
            .is_empty());
    }
}
