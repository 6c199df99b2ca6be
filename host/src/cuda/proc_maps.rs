//! Which shared library file this process actually mapped, read from `/proc/self/maps`.
//!
//! A library opened by bare name (`libcuda.so.1`) is found by the dynamic loader, and
//! the path it chose is known only to it; the kernel's list of mappings names the file.
//! Used to report which `libcuda` and `libnvrtc` a run used.

use std::path::PathBuf;

/// The first file mapped into this process whose file name starts with `prefix`, or
/// `None` when there is none or `/proc/self/maps` cannot be read (not Linux).
pub(crate) fn mapped_library(prefix: &str) -> Option<PathBuf> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    find(&maps, prefix)
}

/// [`mapped_library`] over the text of a maps file.
fn find(maps: &str, prefix: &str) -> Option<PathBuf> {
    maps.lines().find_map(|line| {
        // address perms offset dev inode path: the path is what follows the fifth field
        // (and may contain spaces).
        let path = line
            .splitn(6, ' ')
            .nth(5)
            .map(str::trim_start)
            .filter(|p| p.starts_with('/'))?;
        let name = path.rsplit('/').next()?;
        name.starts_with(prefix).then(|| PathBuf::from(path))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAPS: &str = "\
55d0c0a00000-55d0c0a02000 r--p 00000000 08:01 1234                       /usr/bin/ikp
7f10a0000000-7f10a0021000 rw-p 00000000 00:00 0 
7f10b0000000-7f10b0400000 r--p 00000000 08:01 777                        /usr/lib/x86_64-linux-gnu/libcudart.so.13.0.1
7f10b1000000-7f10b1400000 r--p 00000000 08:01 778                        /opt/my libs/libcuda.so.580.65.06
7f10b2000000-7f10b2400000 r--p 00000000 08:01 779                        /venv/nvidia/cu13/lib/libnvrtc-builtins.so.13.5
7f10b3000000-7f10b3400000 r--p 00000000 08:01 780                        /venv/nvidia/cu13/lib/libnvrtc.so.13
7ffd1c000000-7ffd1c021000 rw-p 00000000 00:00 0                          [stack]
";

    #[test]
    fn finds_the_mapped_file_by_name_prefix() {
        assert_eq!(
            find(MAPS, "libcuda.so"),
            Some(PathBuf::from("/opt/my libs/libcuda.so.580.65.06"))
        );
        assert_eq!(
            find(MAPS, "libnvrtc.so"),
            Some(PathBuf::from("/venv/nvidia/cu13/lib/libnvrtc.so.13"))
        );
        assert_eq!(find(MAPS, "libnvrtc.so.12"), None);
        assert_eq!(find(MAPS, "[stack]"), None);
        assert_eq!(find("", "libcuda.so"), None);
    }

    #[test]
    fn this_process_maps_its_own_libc() {
        // The test binary links libc dynamically; the real maps file names it.
        let libc = mapped_library("libc.so").expect("libc mapped");
        assert!(libc.exists(), "{}", libc.display());
    }
}
