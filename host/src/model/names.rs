//! Region and counter names, by id.

/// Names of regions and counters, by id.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Names {
    /// Region names; a missing or empty entry is shown as `region_<id>`.
    pub regions: Vec<String>,
    /// Counter names; a missing or empty entry is shown as `counter_<id>`.
    pub counters: Vec<String>,
}

impl Names {
    /// Display name of region `id`.
    pub fn region(&self, id: u16) -> std::borrow::Cow<'_, str> {
        match self.regions.get(id as usize) {
            Some(n) if !n.is_empty() => n.as_str().into(),
            _ => format!("region_{id}").into(),
        }
    }

    /// Display name of counter `id`.
    pub fn counter(&self, id: u16) -> std::borrow::Cow<'_, str> {
        match self.counters.get(id as usize) {
            Some(n) if !n.is_empty() => n.as_str().into(),
            _ => format!("counter_{id}").into(),
        }
    }
}
