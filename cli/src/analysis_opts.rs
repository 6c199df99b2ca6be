//! How to interpret regions (shared by `ikp analyze` and `ikp report`): category table,
//! annotations, GPU.
use anyhow::Context;
use ikp_host::analysis::categories::CategoryTable;
use ikp_host::analysis::roofline::{self, GpuPreset, Work};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// How to interpret regions.
#[derive(Debug, clap::Args)]
pub struct AnalysisOpts {
    /// Region categories: JSON {"region": "compute|wait|load|store|comm|other"}; names not
    /// listed are categorised by their dotted prefix or keywords.
    #[arg(long, value_name = "FILE")]
    pub categories: Option<PathBuf>,
    /// Work per region occurrence for the roofline: JSON {"region": {"flops": .., "bytes": ..,
    /// "dtype": "bf16", "per_payload": false}}.
    #[arg(long, value_name = "FILE")]
    pub annotations: Option<PathBuf>,
    /// GPU whose peaks the roofline uses: a100, h100, h200, b200.
    #[arg(long, default_value = roofline::DEFAULT_GPU)]
    pub gpu: String,
}

/// The text of `p`, or an error naming it.
fn read(p: &Path) -> anyhow::Result<String> {
    std::fs::read_to_string(p).with_context(|| format!("{}: cannot read", p.display()))
}

impl AnalysisOpts {
    /// The category table.
    pub fn categories(&self) -> anyhow::Result<CategoryTable> {
        match &self.categories {
            None => Ok(CategoryTable::default()),
            Some(p) => CategoryTable::from_json(&read(p)?)
                .map_err(|e| anyhow::anyhow!("{}: {e}", p.display())),
        }
    }

    /// The roofline annotations (empty without a file).
    pub fn work(&self) -> anyhow::Result<HashMap<String, Work>> {
        match &self.annotations {
            None => Ok(HashMap::new()),
            Some(p) => roofline::parse_annotations(&read(p)?)
                .with_context(|| format!("{}: invalid annotation file", p.display())),
        }
    }

    /// The GPU preset.
    pub fn gpu(&self) -> anyhow::Result<&'static GpuPreset> {
        roofline::preset(&self.gpu).with_context(|| {
            let names: Vec<_> = roofline::PRESETS.iter().map(|p| p.name).collect();
            format!(
                "--gpu {}: unknown GPU (known: {})",
                self.gpu,
                names.join(", ")
            )
        })
    }
}
