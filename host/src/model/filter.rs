//! Which blocks of a launch to keep: a decode option ([`crate::DecodeOptions::blocks`]),
//! applied once to the model so that every output and analysis sees the same lanes.

/// A set of block ids; empty keeps every block.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct BlockFilter(Vec<u32>);

/// A block list that did not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BlockFilterError {
    /// A part is not a block id.
    #[error("{part:?} is not a block id (in block list {list:?})")]
    NotAnId {
        /// The part.
        part: String,
        /// The whole list.
        list: String,
    },
    /// A range runs backwards or is larger than 2^24 blocks.
    #[error("bad block range {part:?} (in block list {list:?}): expected A-B with A <= B and fewer than 2^24 blocks")]
    BadRange {
        /// The range.
        part: String,
        /// The whole list.
        list: String,
    },
}

impl BlockFilter {
    /// A filter of these blocks (sorted and deduplicated); empty = all.
    pub fn new(mut blocks: Vec<u32>) -> BlockFilter {
        blocks.sort_unstable();
        blocks.dedup();
        BlockFilter(blocks)
    }

    /// Parses `"0,1,4-7"` (ids and inclusive ranges, comma-separated; empty = all).
    pub fn parse(list: &str) -> Result<BlockFilter, BlockFilterError> {
        let mut v = Vec::new();
        for part in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let num = |x: &str| {
                x.trim()
                    .parse::<u32>()
                    .map_err(|_| BlockFilterError::NotAnId {
                        part: x.trim().to_string(),
                        list: list.to_string(),
                    })
            };
            match part.split_once('-') {
                Some((a, b)) => {
                    let (a, b) = (num(a)?, num(b)?);
                    if a > b || b - a >= 1 << 24 {
                        return Err(BlockFilterError::BadRange {
                            part: part.to_string(),
                            list: list.to_string(),
                        });
                    }
                    v.extend(a..=b);
                }
                None => v.push(num(part)?),
            }
        }
        Ok(BlockFilter::new(v))
    }

    /// The blocks, ascending (empty = all).
    pub fn blocks(&self) -> &[u32] {
        &self.0
    }

    /// Whether every block is kept.
    pub fn keeps_all(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `block` is kept.
    pub fn contains(&self, block: u32) -> bool {
        self.0.is_empty() || self.0.binary_search(&block).is_ok()
    }
}

impl std::str::FromStr for BlockFilter {
    type Err = BlockFilterError;

    fn from_str(s: &str) -> Result<BlockFilter, BlockFilterError> {
        BlockFilter::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ids_and_ranges() {
        let f = BlockFilter::parse("7, 0-2,1").unwrap();
        assert_eq!(f.blocks(), [0, 1, 2, 7]);
        assert!(f.contains(2) && !f.contains(3));
        assert!(BlockFilter::parse("").unwrap().contains(12345));
        assert!(BlockFilter::parse("").unwrap().keeps_all());
        assert!(matches!(
            BlockFilter::parse("3-1"),
            Err(BlockFilterError::BadRange { .. })
        ));
        let e = BlockFilter::parse("1,x").unwrap_err();
        assert_eq!(
            e.to_string(),
            "\"x\" is not a block id (in block list \"1,x\")"
        );
    }
}
