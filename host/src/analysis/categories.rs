//! Region categories: what kind of work a region is.
//!
//! A region is categorised by, in order: an explicit [`CategoryTable`] entry; the prefix of
//! a dotted name `category.name[.sub]` (the op naming of the dPRO trace format,
//! docs/references.md); keywords in the name (`tma`, `load` → load; `mma`, `gemm`,
//! `softmax`, `rowmax` → compute; `wait`, `barrier`, `syncthreads` → wait; `store`,
//! `epilogue` → store; `allreduce`, `nccl` → comm); else `other`.

use crate::model::Trace;
use std::collections::HashMap;

/// What kind of work a region does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Category {
    /// Math: MMA, softmax, reductions.
    Compute,
    /// Blocked: spin waits, barriers, pipeline waits.
    Wait,
    /// Memory traffic into the SM: loads, TMA, copies.
    Load,
    /// Memory traffic out of the SM: stores, epilogues.
    Store,
    /// Communication with other devices.
    Comm,
    /// Anything else.
    Other,
}

impl Category {
    /// All categories, in breakdown priority order (earlier hides later when overlapping),
    /// which is their declaration order: `c as usize` is the index of `c`.
    pub const ALL: [Category; 6] = [
        Category::Compute,
        Category::Wait,
        Category::Load,
        Category::Store,
        Category::Comm,
        Category::Other,
    ];

    /// Parses a category name (`compute`, `mma`, `wait`, `barrier`, `load`, `store`, `comm`,
    /// `other`), case-insensitively.
    pub fn parse(s: &str) -> Option<Category> {
        Some(match s.to_ascii_lowercase().as_str() {
            "compute" | "mma" | "math" => Category::Compute,
            "wait" | "barrier" | "sync" | "blocked" => Category::Wait,
            "load" | "tma" | "copy" | "memory" | "mem" => Category::Load,
            "store" | "epilogue" => Category::Store,
            "comm" | "communication" => Category::Comm,
            "other" => Category::Other,
            _ => return None,
        })
    }

    /// Lower-case name.
    pub fn name(self) -> &'static str {
        ["compute", "wait", "load", "store", "comm", "other"][self as usize]
    }
}

const KEYWORDS: &[(&str, Category)] = &[
    ("wait", Category::Wait),
    ("barrier", Category::Wait),
    ("syncthreads", Category::Wait),
    ("tma", Category::Load),
    ("load", Category::Load),
    ("prefetch", Category::Load),
    ("copy", Category::Load),
    ("mma", Category::Compute),
    ("wgmma", Category::Compute),
    ("hmma", Category::Compute),
    ("umma", Category::Compute),
    ("gemm", Category::Compute),
    ("softmax", Category::Compute),
    ("compute", Category::Compute),
    ("exp", Category::Compute),
    ("correction", Category::Compute),
    ("rowmax", Category::Compute),
    ("reduce", Category::Compute),
    ("store", Category::Store),
    ("epilogue", Category::Store),
    ("writeback", Category::Store),
    ("allreduce", Category::Comm),
    ("nccl", Category::Comm),
    ("comm", Category::Comm),
];

/// Explicit region-name → category assignments that override the defaults.
#[derive(Clone, Debug, Default)]
pub struct CategoryTable {
    by_name: HashMap<String, Category>,
}

impl CategoryTable {
    /// Assigns `name` to `cat`.
    pub fn insert(&mut self, name: impl Into<String>, cat: Category) {
        self.by_name.insert(name.into(), cat);
    }

    /// Parses a category table file.
    ///
    /// # Format
    /// A JSON object mapping region names to category names (`compute`, `wait`, `load`,
    /// `store`, `comm`, `other`, or their aliases such as `mma`, `barrier`, `tma`):
    /// `{"softmax_max": "compute", "kv_ready": "wait"}`.
    pub fn from_json(json: &str) -> Result<CategoryTable, String> {
        let map: std::collections::BTreeMap<String, String> =
            serde_json::from_str(json).map_err(|e| format!("not a JSON object of strings: {e}"))?;
        let mut t = CategoryTable::default();
        for (name, cat) in map {
            let c = Category::parse(&cat)
                .ok_or_else(|| format!("region {name:?}: unknown category {cat:?}"))?;
            t.insert(name, c);
        }
        Ok(t)
    }

    /// The category of a region called `name`.
    pub fn classify(&self, name: &str) -> Category {
        if let Some(&c) = self.by_name.get(name) {
            return c;
        }
        if let Some((prefix, _)) = name.split_once('.') {
            if let Some(c) = Category::parse(prefix) {
                return c;
            }
        }
        // Keywords match at the start of a word (`async_load`, `issue-tma-k`, `exp2`), not
        // anywhere: `softmax` holds "tma" but is no load.
        let lower = name.to_ascii_lowercase();
        let words: Vec<&str> = lower
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty())
            .collect();
        KEYWORDS
            .iter()
            .find(|(k, _)| words.iter().any(|w| w.starts_with(k)))
            .map_or(Category::Other, |&(_, c)| c)
    }
}

/// The category of every region id of `trace`.
pub fn region_categories(trace: &Trace, table: &CategoryTable) -> Vec<Category> {
    let used = trace
        .spans
        .region
        .iter()
        .max()
        .map_or(0, |&m| m as usize + 1);
    (0..used.max(trace.names.regions.len()))
        .map(|id| table.classify(&trace.names.region(id as u16)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_then_dotted_prefix_then_keywords() {
        let mut t = CategoryTable::default();
        assert_eq!(t.classify("compute.softmax_max"), Category::Compute);
        assert_eq!(t.classify("wait.full_barrier"), Category::Wait);
        assert_eq!(t.classify("issue-tma-k"), Category::Load);
        assert_eq!(t.classify("mma_qk"), Category::Compute);
        assert_eq!(t.classify("epilogue"), Category::Store);
        assert_eq!(t.classify("wait_kv_full"), Category::Wait);
        assert_eq!(t.classify("setup"), Category::Other);
        // Whole-word prefixes only: "softmax" contains "tma", "mainloop" no keyword.
        assert_eq!(t.classify("softmax"), Category::Compute);
        assert_eq!(t.classify("mainloop"), Category::Other);
        assert_eq!(t.classify("wgmma_qk"), Category::Compute);
        assert_eq!(t.classify("exp2"), Category::Compute);
        assert_eq!(t.classify("async_load"), Category::Load);
        // Dotted prefix that is not a category falls through to keywords.
        assert_eq!(t.classify("attn.load_q"), Category::Load);
        t.insert("setup", Category::Compute);
        let f = CategoryTable::from_json(r#"{"kv_ready": "barrier", "x": "tma"}"#).unwrap();
        assert_eq!(
            (f.classify("kv_ready"), f.classify("x")),
            (Category::Wait, Category::Load)
        );
        assert!(CategoryTable::from_json(r#"{"a": "gpu"}"#)
            .unwrap_err()
            .contains("unknown category"));
        assert_eq!(t.classify("setup"), Category::Compute);
    }
}
