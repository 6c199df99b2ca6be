//! GPU architectures as NVRTC and nvcc name them (`sm_XY`, `compute_XY`), parsed from
//! every spelling a user may type.
//!
//! Plain data, outside the CUDA room: the SASS measurements ([`crate::sass`]) and the
//! compilers of [`crate::cuda`] both take an [`Arch`], and only the latter needs a driver.

use std::fmt;
use std::str::FromStr;

/// An architecture string that did not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("cannot parse GPU architecture {0:?}: expected sm_XY, compute_XY (optional a/f suffix), XY or X.Y")]
pub struct ArchError(pub String);

/// A GPU architecture: compute capability `major.minor` plus an optional feature-set
/// suffix (`a` for architecture-specific, `f` for family-specific features).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Arch {
    /// Compute capability major.
    pub major: u32,
    /// Compute capability minor.
    pub minor: u32,
    /// `Some('a')` or `Some('f')` for `sm_90a`-style targets.
    pub suffix: Option<char>,
}

impl Arch {
    /// Compute capability `major.minor`, no suffix.
    pub const fn new(major: u32, minor: u32) -> Arch {
        Arch {
            major,
            minor,
            suffix: None,
        }
    }

    /// `major * 10 + minor`, the number NVRTC lists as a supported architecture.
    pub const fn number(self) -> u32 {
        self.major * 10 + self.minor
    }

    fn suffix_str(self) -> String {
        self.suffix.map(String::from).unwrap_or_default()
    }

    /// The real architecture name, e.g. `sm_80` (cubin target).
    pub fn sm(self) -> String {
        format!("sm_{}{}", self.number(), self.suffix_str())
    }

    /// The virtual architecture name, e.g. `compute_80` (PTX target).
    pub fn compute(self) -> String {
        format!("compute_{}{}", self.number(), self.suffix_str())
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.sm())
    }
}

impl FromStr for Arch {
    type Err = ArchError;

    /// Accepts `sm_80`, `compute_90a`, `sm_100f`, `86` and `8.6`.
    fn from_str(s: &str) -> Result<Arch, ArchError> {
        let bad = || ArchError(s.to_owned());
        let t = s.trim();
        if let Some((ma, mi)) = t.split_once('.') {
            let major = ma.parse().map_err(|_| bad())?;
            let minor: u32 = mi.parse().map_err(|_| bad())?;
            if minor > 9 {
                return Err(bad());
            }
            return Ok(Arch::new(major, minor));
        }
        let body = t
            .strip_prefix("sm_")
            .or_else(|| t.strip_prefix("compute_"))
            .unwrap_or(t);
        let (digits, suffix) = match body.chars().last() {
            Some(c @ ('a' | 'f')) => (&body[..body.len() - 1], Some(c)),
            _ => (body, None),
        };
        if digits.len() < 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        let n: u32 = digits.parse().map_err(|_| bad())?;
        Ok(Arch {
            major: n / 10,
            minor: n % 10,
            suffix,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arch_parses_every_spelling() {
        assert_eq!("sm_80".parse::<Arch>().unwrap(), Arch::new(8, 0));
        assert_eq!("compute_86".parse::<Arch>().unwrap(), Arch::new(8, 6));
        assert_eq!("8.9".parse::<Arch>().unwrap(), Arch::new(8, 9));
        assert_eq!("120".parse::<Arch>().unwrap(), Arch::new(12, 0));
        let a: Arch = "sm_90a".parse().unwrap();
        assert_eq!((a.major, a.minor, a.suffix), (9, 0, Some('a')));
        assert_eq!(a.sm(), "sm_90a");
        assert_eq!(a.compute(), "compute_90a");
        for bad in ["", "sm_", "sm_8", "8.10", "sm_8x", "gfx90a", "x.y"] {
            assert!(
                bad.parse::<Arch>() == Err(ArchError(bad.to_string())),
                "{bad:?} parsed"
            );
        }
    }
}
