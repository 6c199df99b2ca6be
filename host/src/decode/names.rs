//! Region names from a names file (TVM-format buffers carry none).
//!
//! # Format
//! Either plain text, one region name per line, line `i` (from 0) naming region `i` (an
//! empty line leaves that id unnamed; a trailing newline does not add an entry), or a JSON
//! object mapping region ids (decimal strings) to names, e.g. `{"0": "load", "3": "mma"}`.
//! The file is JSON when its first non-blank character is `{`. A probe manifest of one
//! kernel (`ikp instrument`'s `OUT.probes.json`, [`crate::instrument::Manifest`]) gives its
//! region and counter names.

use crate::model::Names;
use std::path::{Path, PathBuf};

/// Why a names file could not be used.
#[derive(Debug, thiserror::Error)]
#[error("{}: {why}", path.display())]
pub struct NamesError {
    /// The file.
    pub path: PathBuf,
    /// The problem.
    pub why: String,
}

/// Parses a names file's text into region names.
pub fn parse(text: &str) -> Result<Vec<String>, String> {
    if text.trim_start().starts_with('{') {
        let map: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(text).map_err(|e| format!("invalid JSON names object: {e}"))?;
        let mut out: Vec<String> = Vec::new();
        for (k, v) in map {
            let id: u32 = k
                .trim()
                .parse()
                .map_err(|_| format!("key {k:?} is not a region id"))?;
            if id >= ikp_device::wire::MAX_REGIONS {
                return Err(format!(
                    "region id {id} is out of range (ids are 0..{})",
                    ikp_device::wire::MAX_REGIONS
                ));
            }
            let name = v
                .as_str()
                .ok_or_else(|| format!("the name of region {id} is not a string"))?;
            if out.len() <= id as usize {
                out.resize(id as usize + 1, String::new());
            }
            out[id as usize] = name.to_owned();
        }
        return Ok(out);
    }
    let out: Vec<String> = text
        .lines()
        .map(|l| l.trim_end_matches('\r').to_owned())
        .collect();
    if out.len() > ikp_device::wire::MAX_REGIONS as usize {
        return Err(format!(
            "{} lines, but there are at most {} region ids",
            out.len(),
            ikp_device::wire::MAX_REGIONS
        ));
    }
    Ok(out)
}

/// Reads a names file.
pub fn read(path: &Path) -> Result<Names, NamesError> {
    let err = |why: String| NamesError {
        path: path.to_path_buf(),
        why,
    };
    let text = std::fs::read_to_string(path).map_err(|e| err(format!("cannot read: {e}")))?;
    if text.trim_start().starts_with('{') && text.contains("\"ikp_probes\"") {
        let m = crate::instrument::Manifest::from_json(&text).map_err(|e| err(e.to_string()))?;
        return match m.kernels.as_slice() {
            [k] => Ok(Names {
                regions: k.regions.clone(),
                counters: k.counters.clone(),
            }),
            ks => Err(err(format!(
                "a probe manifest of {} kernels: the names of one kernel are needed (its buffer's \
                 header holds them)",
                ks.len()
            ))),
        };
    }
    Ok(Names {
        regions: parse(&text).map_err(err)?,
        counters: Vec::new(),
    })
}

/// Replaces `base`'s names with `over`'s, entry by entry (empty entries keep `base`'s).
pub(crate) fn overlay(base: &mut Names, over: &Names) {
    fn merge(b: &mut Vec<String>, o: &[String]) {
        if b.len() < o.len() {
            b.resize(o.len(), String::new());
        }
        for (b, o) in b.iter_mut().zip(o) {
            if !o.is_empty() {
                b.clone_from(o);
            }
        }
    }
    merge(&mut base.regions, &over.regions);
    merge(&mut base.counters, &over.counters);
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn lines_and_json_give_the_same_names() {
        assert_eq!(
            parse("load\nmma\n\nstore\n").unwrap(),
            ["load", "mma", "", "store"]
        );
        assert_eq!(
            parse(r#" {"0": "load", "3": "store", "1": "mma"}"#).unwrap(),
            ["load", "mma", "", "store"]
        );
        assert!(parse(r#"{"x": "load"}"#)
            .unwrap_err()
            .contains("not a region id"));
        assert!(parse(r#"{"5000": "a"}"#)
            .unwrap_err()
            .contains("out of range"));
        assert!(parse(r#"{"1": 3}"#).unwrap_err().contains("not a string"));
    }
}
