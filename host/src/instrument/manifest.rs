//! The probe manifest: what an instrumented module records, for the host that launches it.
//!
//! # Format
//!
//! A JSON object, written by `ikp instrument` beside the PTX (`OUT.probes.json`) and by
//! the Python package for each module it instruments:
//!
//! ```text
//! {
//!   "ikp_probes": 2,                 // manifest version (MANIFEST_VERSION; 1 had no "lanes")
//!   "target": "sm_90a",              // the module's .target
//!   "probes": "entry,loops",         // the selection that made it (ProbeSet's Display)
//!   "kernels": [{
//!     "name": "matmul_kernel",       // the .entry
//!     "symbol": "ikp_buf_matmul_kernel",  // .visible .const .u64[6] the host sets
//!     "warps_per_block": 4,          // from .reqntid / .maxntid; null when the PTX says none
//!     "lanes": "warp",               // a lane per warp, or "block" (by its first warp)
//!     "regions": ["matmul.py:52 loop"],   // region names, by region id
//!     "counters": ["matmul.py:52 loop trips"],  // counter names, by counter id: loop k's
//!                                    // trip counts are samples of counter k
//!     "probes": [{"kind": "loop", "region": 0, "ptx_line": 210, "source": "matmul.py:52"}]
//!   }]
//! }
//! ```
//!
//! The host lays the kernel's buffer out as for any ikp launch ([`KernelProbes::layout`]):
//! lanes are warps (`groups_per_block = warps_per_block`; with `"lanes": "block"` a lane per
//! block, `groups_per_block = 1`), the grid is given linearly
//! (`[blocks, 1, 1]`, as the probes number blocks `x + grid_x * (y + grid_y * z)`), and
//! the region names go into the buffer header, so the buffer decodes without the
//! manifest. A warp beyond `warps_per_block` or a block beyond the buffer's records
//! nothing. A reader refuses a manifest of a newer version.

use ikp_device::{Layout, Overflow, TimerMode};
use serde::{Deserialize, Serialize};

use super::LaneUnit;

/// Version of the manifest format this build writes and the newest it reads.
pub const MANIFEST_VERSION: u32 = 2;

/// What an instrumented module records, per kernel.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// [`MANIFEST_VERSION`].
    #[serde(rename = "ikp_probes")]
    pub version: u32,
    /// The module's `.target`.
    pub target: String,
    /// The probe selection, as `--at` takes it.
    pub probes: String,
    /// One entry per kernel, in module order.
    pub kernels: Vec<KernelProbes>,
}

/// One instrumented kernel.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelProbes {
    /// The kernel (`.entry`) name.
    pub name: String,
    /// The module-scope `u64` the host sets to the buffer's device address.
    pub symbol: String,
    /// Warps per block, from `.reqntid` / `.maxntid` (`None`: the PTX does not say).
    pub warps_per_block: Option<u32>,
    /// What a lane is: a warp (`"warp"`) or a block (`"block"`, recorded by its first warp).
    /// Version 1 manifests have none: a warp.
    #[serde(default)]
    pub lanes: LaneUnit,
    /// Region names, by region id.
    pub regions: Vec<String>,
    /// Counter names, by counter id: counter `k` holds loop `k`'s trip counts (a sample
    /// after each end of the loop's region; the lane's total in its trailer).
    pub counters: Vec<String>,
    /// The probes inserted.
    pub probes: Vec<Probe>,
}

/// One inserted probe.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Probe {
    /// What it records.
    pub kind: ProbeKind,
    /// Its region id.
    pub region: u32,
    /// Line of the input PTX it was placed at (a loop's header label, a line's instruction).
    pub ptx_line: usize,
    /// `file:line` from `.loc`, when the PTX has line info.
    pub source: Option<String>,
}

/// What a probe records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProbeKind {
    /// A loop: a begin / end pair per entry, then a sample of its trip count.
    Loop,
    /// An instant at a source line.
    Line,
}

/// Why a manifest could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// Not the manifest's JSON.
    #[error("not an ikp probe manifest: {0}")]
    Json(#[from] serde_json::Error),
    /// Written by a newer ikp.
    #[error(
        "probe manifest version {found}, this ikp reads up to {MANIFEST_VERSION}: upgrade ikp"
    )]
    Newer {
        /// Its version.
        found: u32,
    },
}

impl Manifest {
    /// Reads a manifest's JSON.
    pub fn from_json(text: &str) -> Result<Manifest, ManifestError> {
        let m: Manifest = serde_json::from_str(text)?;
        if m.version > MANIFEST_VERSION {
            return Err(ManifestError::Newer { found: m.version });
        }
        Ok(m)
    }

    /// The manifest as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("plain data serializes") + "\n"
    }

    /// The kernel named `name`.
    pub fn kernel(&self, name: &str) -> Option<&KernelProbes> {
        self.kernels.iter().find(|k| k.name == name)
    }
}

impl KernelProbes {
    /// The buffer layout for launches of up to `blocks` blocks of `warps_per_block` warps
    /// (the manifest's, unless `warps` overrides it), `records_per_lane` records per lane,
    /// and `epochs` launches into one buffer: a lane per warp, or with `lanes` `"block"`,
    /// one per block (`groups_per_block` 1, `warps` unused).
    pub fn layout(
        &self,
        blocks: u32,
        warps: Option<u32>,
        records_per_lane: u32,
        epochs: u32,
    ) -> Layout {
        let groups = match self.lanes {
            LaneUnit::Warp => warps.or(self.warps_per_block).unwrap_or(1).max(1),
            LaneUnit::Block => 1,
        };
        Layout {
            grid: [blocks.max(1), 1, 1],
            groups_per_block: groups,
            records_per_lane,
            timer: TimerMode::Globaltimer,
            regions: self.regions.clone(),
            counters: self.counters.clone(),
            overflow: Overflow::DropNewest,
            epochs: epochs.max(1),
            ..Layout::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A version 1 manifest (no `lanes`) reads as a lane per warp; a newer one is refused.
    #[test]
    fn version_1_has_a_lane_per_warp_and_newer_ones_are_refused() {
        let v1 = r#"{"ikp_probes": 1, "target": "sm_90a", "probes": "entry,loops", "kernels": [
            {"name": "k", "symbol": "ikp_buf_k", "warps_per_block": 4, "regions": [],
             "counters": [], "probes": []}]}"#;
        let m = Manifest::from_json(v1).unwrap();
        assert_eq!(m.kernels[0].lanes, LaneUnit::Warp);
        assert_eq!(m.kernels[0].layout(10, None, 8, 1).groups_per_block, 4);
        let newer = v1.replace("\"ikp_probes\": 1", "\"ikp_probes\": 3");
        assert!(Manifest::from_json(&newer)
            .unwrap_err()
            .to_string()
            .contains("upgrade ikp"));
    }
}
