//! Where an NVRTC library may be installed, in the order ikp tries them.
//!
//! [`search`] is a pure function of a [`SearchEnv`] (the environment variables it reads
//! and the file system under a root directory) and the driver's CUDA major version, so the
//! unit tests below run it on a fake tree in a temporary directory. It only lists
//! candidates; [`super::loader`] opens them.

use std::cmp::Reverse;
use std::collections::{BTreeMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::{Path, PathBuf};

/// The environment variable that names the NVRTC library (a file, or a directory holding
/// one) and overrides the search.
pub const ENV_VAR: &str = "IKP_NVRTC";

/// File names looked for in each directory, newest CUDA first: CUDA 13's pip package
/// ships only `libnvrtc.so.13`, CUDA 12's only `libnvrtc.so.12`, toolkits add the
/// unversioned development link.
pub(crate) const NAMES: [&str; 3] = ["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"];

/// Which rule of the search found the NVRTC library (see the [module
/// documentation](super) for the order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FoundBy {
    /// `IKP_NVRTC` named it (or its directory).
    IkpNvrtc,
    /// It is in a directory of `LD_LIBRARY_PATH`.
    LdLibraryPath,
    /// It is in a CUDA toolkit (`$CUDA_HOME`, `$CUDA_PATH`, `/usr/local/cuda*`) or a
    /// system library directory.
    CudaDirs,
    /// It comes from NVIDIA's pip package (`nvidia/cu13/lib`, `nvidia/cuda_nvrtc/lib`,
    /// ...) in a Python environment.
    PythonPackage,
    /// The dynamic loader found it by name (ld.so cache or default directories).
    DynamicLoader,
}

impl fmt::Display for FoundBy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FoundBy::IkpNvrtc => "named by IKP_NVRTC",
            FoundBy::LdLibraryPath => "found on LD_LIBRARY_PATH",
            FoundBy::CudaDirs => "found in a CUDA or system library directory",
            FoundBy::PythonPackage => "found in a pip package of a Python environment",
            FoundBy::DynamicLoader => "found by name by the dynamic loader",
        })
    }
}

/// The variables the search reads.
const VARS: [&str; 6] = [
    ENV_VAR,
    "LD_LIBRARY_PATH",
    "CUDA_HOME",
    "CUDA_PATH",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
];

/// What the search looks at: environment variables and a file system root.
///
/// Absolute paths (from variables or built in, like `/usr/local/cuda`) are looked up
/// under `root`; the real search uses `/`, tests a temporary directory.
#[derive(Clone, Debug)]
pub(crate) struct SearchEnv {
    vars: BTreeMap<String, OsString>,
    root: PathBuf,
}

impl SearchEnv {
    /// This process's environment and the real file system.
    pub(crate) fn from_process() -> SearchEnv {
        SearchEnv::new(
            "/",
            VARS.iter()
                .filter_map(|&v| std::env::var_os(v).map(|value| (v, value))),
        )
    }

    /// The variables `vars` over the tree under `root`; variables the search does not
    /// read are ignored.
    pub(crate) fn new<'a>(
        root: impl Into<PathBuf>,
        vars: impl IntoIterator<Item = (&'a str, OsString)>,
    ) -> SearchEnv {
        SearchEnv {
            vars: vars
                .into_iter()
                .filter(|(k, _)| VARS.contains(k))
                .map(|(k, v)| (k.to_owned(), v))
                .collect(),
            root: root.into(),
        }
    }

    /// A variable, `None` when unset or empty.
    fn var(&self, name: &str) -> Option<&OsStr> {
        self.vars
            .get(name)
            .map(OsString::as_os_str)
            .filter(|v| !v.is_empty())
    }

    /// The entries of a `:`-separated list variable, empty ones dropped.
    fn list(&self, name: &str) -> Vec<PathBuf> {
        let value = self.var(name).unwrap_or_default();
        std::env::split_paths(value)
            .filter(|p| !p.as_os_str().is_empty())
            .collect()
    }

    /// Where `path` is in this environment's file system.
    fn at(&self, path: &Path) -> PathBuf {
        (path.strip_prefix("/")).map_or_else(|_| path.to_owned(), |rel| self.root.join(rel))
    }
}

/// One file the loader may open.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Candidate {
    /// The file (a bare name for [`FoundBy::DynamicLoader`]).
    pub path: PathBuf,
    /// The CUDA major version its name (or its link target's) carries.
    pub major: Option<u32>,
    /// The rule that listed it.
    pub found_by: FoundBy,
}

/// The outcome of [`search`].
#[derive(Clone, Debug)]
pub(crate) struct Search {
    /// The files to try, in order.
    pub candidates: Vec<Candidate>,
    /// Directories looked in, or the pattern where a wildcard matched nothing, in order.
    pub places: Vec<String>,
    /// `IKP_NVRTC`'s value when it is set: then the candidates come from it alone.
    pub override_value: Option<PathBuf>,
}

/// The sort key that puts the preferred CUDA major first: majors the driver supports
/// (not newer than `driver_major`), highest first; then newer majors, highest first;
/// then files whose major is unknown. Without a driver every known major is acceptable.
/// (Why: the [module documentation](super).)
pub(crate) fn preference(major: Option<u32>, driver_major: Option<u32>) -> (u8, Reverse<u32>) {
    match (major, driver_major) {
        (None, _) => (2, Reverse(0)),
        (Some(m), Some(d)) if m > d => (1, Reverse(m)),
        (Some(m), _) => (0, Reverse(m)),
    }
}

/// Lists the NVRTC libraries `env` offers, in the order the loader should try them.
///
/// `IKP_NVRTC`, when set, is the only source. Otherwise the files of places 2 to 4 of
/// the [module documentation](super) are ordered by [`preference`] (the rule order breaks
/// ties), and the bare names for the dynamic loader come last.
pub(crate) fn search(env: &SearchEnv, driver_major: Option<u32>) -> Search {
    let mut c = Collector {
        env,
        candidates: Vec::new(),
        places: Vec::new(),
        seen: HashSet::new(),
    };
    let override_value = env.var(ENV_VAR).map(PathBuf::from);
    if let Some(value) = &override_value {
        let at = env.at(value);
        c.places.push(at.display().to_string());
        if at.is_dir() {
            c.dir(&at, FoundBy::IkpNvrtc);
        } else if at.exists() {
            c.file(at, FoundBy::IkpNvrtc);
        }
    } else {
        for dir in env.list("LD_LIBRARY_PATH") {
            c.dir(&env.at(&dir), FoundBy::LdLibraryPath);
        }
        c.cuda_dirs();
        c.python_packages();
    }
    c.candidates
        .sort_by_key(|c| preference(c.major, driver_major));
    if override_value.is_none() {
        let mut bare: Vec<Candidate> = NAMES
            .iter()
            .map(|n| Candidate {
                path: PathBuf::from(n),
                major: major_in_name(n),
                found_by: FoundBy::DynamicLoader,
            })
            .collect();
        bare.sort_by_key(|b| preference(b.major, driver_major));
        c.candidates.extend(bare);
    }
    Search {
        candidates: c.candidates,
        places: c.places,
        override_value,
    }
}

struct Collector<'a> {
    env: &'a SearchEnv,
    candidates: Vec<Candidate>,
    places: Vec<String>,
    seen: HashSet<PathBuf>,
}

impl Collector<'_> {
    fn place(&mut self, place: String) {
        if !self.places.contains(&place) {
            self.places.push(place);
        }
    }

    /// The files of [`NAMES`] in `dir`.
    fn dir(&mut self, dir: &Path, found_by: FoundBy) {
        self.place(dir.display().to_string());
        self.files(dir, found_by);
    }

    /// The files of [`NAMES`] in `dir`, without listing `dir` as a place.
    fn files(&mut self, dir: &Path, found_by: FoundBy) {
        for path in NAMES.map(|name| dir.join(name)) {
            if path.is_file() {
                self.file(path, found_by);
            }
        }
    }

    /// One file, unless the same file (after following links) is already listed.
    fn file(&mut self, path: PathBuf, found_by: FoundBy) {
        let key = path.canonicalize().unwrap_or_else(|_| path.clone());
        if self.seen.insert(key) {
            self.candidates.push(Candidate {
                major: major_of(&path),
                path,
                found_by,
            });
        }
    }

    /// Place 3: CUDA toolkits, then the system library directories.
    fn cuda_dirs(&mut self) {
        let env = self.env;
        for var in ["CUDA_HOME", "CUDA_PATH"] {
            if let Some(home) = env.var(var) {
                self.dir(&env.at(Path::new(home)).join("lib64"), FoundBy::CudaDirs);
            }
        }
        self.dir(
            &env.at(Path::new("/usr/local/cuda/lib64")),
            FoundBy::CudaDirs,
        );
        let local = env.at(Path::new("/usr/local"));
        let versions = children(&local, "cuda-");
        if versions.is_empty() {
            self.place(local.join("cuda-*/lib64").display().to_string());
        }
        for dir in versions {
            self.dir(&dir.join("lib64"), FoundBy::CudaDirs);
        }
        for sys in ["/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib"] {
            self.dir(&env.at(Path::new(sys)), FoundBy::CudaDirs);
        }
    }

    /// Place 4: NVIDIA's pip packages in the active Python environment (a virtual
    /// environment, else a conda one); no other interpreter's.
    fn python_packages(&mut self) {
        let env = self.env;
        for var in ["VIRTUAL_ENV", "CONDA_PREFIX"] {
            if let Some(prefix) = env.var(var) {
                self.site_packages(&env.at(Path::new(prefix)).join("lib"));
            }
        }
    }

    /// `lib/python3*/site-packages` under `lib`, newest Python first.
    fn site_packages(&mut self, lib: &Path) {
        let sites: Vec<PathBuf> = children(lib, "python3")
            .into_iter()
            .map(|p| p.join("site-packages"))
            .filter(|p| p.is_dir())
            .collect();
        if sites.is_empty() {
            let glob = lib.join("python3*/site-packages/nvidia/*/lib");
            self.place(glob.display().to_string());
        }
        for site in sites {
            self.nvidia_libs(&site);
        }
    }

    /// `nvidia/cu13/lib` (CUDA 13's wheels), `nvidia/cuda_nvrtc/lib` (CUDA 12's), then
    /// any other `nvidia/*/lib`, under one site-packages directory.
    fn nvidia_libs(&mut self, site: &Path) {
        let nvidia = site.join("nvidia");
        self.place(nvidia.join("*/lib").display().to_string());
        let mut dirs = vec![nvidia.join("cu13"), nvidia.join("cuda_nvrtc")];
        let entries = std::fs::read_dir(&nvidia).into_iter().flatten().flatten();
        let mut others: Vec<PathBuf> = entries.map(|e| e.path()).collect();
        others.sort();
        others.retain(|d| !dirs.contains(d));
        dirs.extend(others);
        for dir in dirs {
            self.files(&dir.join("lib"), FoundBy::PythonPackage);
        }
    }
}

/// The directories under `dir` whose names start with `prefix`, highest version first
/// (the numbers in the rest of the name compare as numbers: `cuda-12.10` before
/// `cuda-12.4`).
fn children(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut found: Vec<(Vec<u32>, String, PathBuf)> = (std::fs::read_dir(dir).into_iter())
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_owned();
            let rest = name.strip_prefix(prefix)?;
            let numbers = rest
                .split(|c: char| !c.is_ascii_digit())
                .filter_map(|n| n.parse().ok())
                .collect();
            Some((numbers, name.clone(), e.path()))
        })
        .filter(|(_, _, p)| p.is_dir())
        .collect();
    found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    found.into_iter().map(|(_, _, p)| p).collect()
}

/// The CUDA major in a file name like `libnvrtc.so.13` or `libnvrtc.so.12.9.86`.
fn major_in_name(name: &str) -> Option<u32> {
    name.strip_prefix("libnvrtc.so.")?
        .split('.')
        .next()?
        .parse()
        .ok()
}

/// The CUDA major of `path`: from its name, else from the file it links to
/// (`libnvrtc.so -> libnvrtc.so.13.0.88`).
fn major_of(path: &Path) -> Option<u32> {
    let of = |p: &Path| major_in_name(p.file_name()?.to_str()?);
    of(path).or_else(|| of(&path.canonicalize().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake file system: `files` are created empty (`a -> b` makes a symlink).
    fn tree(files: &[&str]) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        for f in files {
            let (path, target) = match f.split_once(" -> ") {
                Some((p, t)) => (p, Some(t)),
                None => (*f, None),
            };
            let path = root.path().join(path.trim_start_matches('/'));
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            match target {
                Some(t) => std::os::unix::fs::symlink(t, &path).unwrap(),
                None if f.ends_with('/') => std::fs::create_dir_all(&path).unwrap(),
                None => std::fs::write(&path, b"").unwrap(),
            }
        }
        root
    }

    fn env(root: &tempfile::TempDir, vars: &[(&'static str, &str)]) -> SearchEnv {
        SearchEnv::new(
            root.path(),
            vars.iter().map(|&(k, v)| (k, OsString::from(v))),
        )
    }

    /// The candidates as `rule:path` with the root stripped, for readable assertions.
    fn order(root: &tempfile::TempDir, s: &Search) -> Vec<String> {
        s.candidates
            .iter()
            .map(|c| {
                let rule = match c.found_by {
                    FoundBy::IkpNvrtc => "ikp",
                    FoundBy::LdLibraryPath => "ld",
                    FoundBy::CudaDirs => "cuda",
                    FoundBy::PythonPackage => "pip",
                    FoundBy::DynamicLoader => "bare",
                };
                let path = c
                    .path
                    .strip_prefix(root.path())
                    .map(|p| format!("/{}", p.display()))
                    .unwrap_or_else(|_| c.path.display().to_string());
                format!("{rule}:{path}")
            })
            .collect()
    }

    const BARE: [&str; 3] = [
        "bare:libnvrtc.so.13",
        "bare:libnvrtc.so.12",
        "bare:libnvrtc.so",
    ];

    fn with_bare(files: &[&str]) -> Vec<String> {
        files
            .iter()
            .copied()
            .chain(BARE)
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn ikp_nvrtc_naming_a_file_is_the_only_candidate() {
        let root = tree(&[
            "/opt/n/libnvrtc.so.12",
            "/ld/libnvrtc.so.13",
            "/usr/local/cuda/lib64/libnvrtc.so.13",
        ]);
        let s = search(
            &env(
                &root,
                &[
                    ("IKP_NVRTC", "/opt/n/libnvrtc.so.12"),
                    ("LD_LIBRARY_PATH", "/ld"),
                ],
            ),
            None,
        );
        assert_eq!(order(&root, &s), ["ikp:/opt/n/libnvrtc.so.12"]);
        assert_eq!(s.candidates[0].major, Some(12));
        assert_eq!(
            s.override_value.as_deref(),
            Some(Path::new("/opt/n/libnvrtc.so.12"))
        );
    }

    #[test]
    fn ikp_nvrtc_naming_a_directory_lists_its_libraries_newest_first() {
        let root = tree(&[
            "/opt/n/libnvrtc.so.12",
            "/opt/n/libnvrtc.so.13",
            "/opt/n/libnvrtc.so -> libnvrtc.so.13",
            "/ld/libnvrtc.so.13",
        ]);
        let s = search(
            &env(
                &root,
                &[("IKP_NVRTC", "/opt/n"), ("LD_LIBRARY_PATH", "/ld")],
            ),
            None,
        );
        // The unversioned link is the same file as libnvrtc.so.13: listed once.
        assert_eq!(
            order(&root, &s),
            ["ikp:/opt/n/libnvrtc.so.13", "ikp:/opt/n/libnvrtc.so.12"]
        );
    }

    #[test]
    fn ikp_nvrtc_naming_nothing_gives_no_candidates_and_no_fallback() {
        let root = tree(&["/empty/", "/ld/libnvrtc.so.12"]);
        for value in ["/empty", "/missing/libnvrtc.so.13"] {
            let s = search(
                &env(&root, &[("IKP_NVRTC", value), ("LD_LIBRARY_PATH", "/ld")]),
                None,
            );
            assert!(s.candidates.is_empty(), "{value}: {:?}", s.candidates);
            assert_eq!(s.override_value.as_deref(), Some(Path::new(value)));
        }
        // An empty IKP_NVRTC counts as unset.
        let s = search(
            &env(&root, &[("IKP_NVRTC", ""), ("LD_LIBRARY_PATH", "/ld")]),
            None,
        );
        assert_eq!(s.override_value, None);
        assert_eq!(order(&root, &s)[0], "ld:/ld/libnvrtc.so.12");
    }

    #[test]
    fn ld_library_path_comes_before_cuda_and_system_directories_in_its_order() {
        let root = tree(&[
            "/b/libnvrtc.so.12",
            "/a/libnvrtc.so.12",
            "/usr/local/cuda/lib64/libnvrtc.so.12",
            "/usr/lib/x86_64-linux-gnu/libnvrtc.so.12",
        ]);
        let s = search(
            &env(&root, &[("LD_LIBRARY_PATH", "/b::/a:/nonexistent")]),
            None,
        );
        assert_eq!(
            order(&root, &s),
            with_bare(&[
                "ld:/b/libnvrtc.so.12",
                "ld:/a/libnvrtc.so.12",
                "cuda:/usr/local/cuda/lib64/libnvrtc.so.12",
                "cuda:/usr/lib/x86_64-linux-gnu/libnvrtc.so.12",
            ])
        );
        let places: Vec<String> = s
            .places
            .iter()
            .map(|p| p.replace(&root.path().display().to_string(), ""))
            .collect();
        assert_eq!(&places[..3], ["/b", "/a", "/nonexistent"]);
        assert!(
            places.contains(&"/usr/local/cuda-*/lib64".to_owned()),
            "{places:?}"
        );
    }

    #[test]
    fn cuda_directories_come_newest_version_first_after_cuda_home_and_cuda_path() {
        let root = tree(&[
            "/usr/local/cuda-12.4/lib64/libnvrtc.so.12",
            "/usr/local/cuda-12.10/lib64/libnvrtc.so.12",
            "/usr/local/cuda-11.8/lib64/libnvrtc.so.11",
            "/usr/local/cuda-12.9/lib64/libnvrtc.so.12",
            "/home/cuda/lib64/libnvrtc.so.12",
            "/cp/lib64/libnvrtc.so.12",
            "/usr/lib64/libnvrtc.so.12",
        ]);
        let s = search(
            &env(&root, &[("CUDA_HOME", "/home/cuda"), ("CUDA_PATH", "/cp")]),
            None,
        );
        assert_eq!(
            order(&root, &s),
            with_bare(&[
                "cuda:/home/cuda/lib64/libnvrtc.so.12",
                "cuda:/cp/lib64/libnvrtc.so.12",
                "cuda:/usr/local/cuda-12.10/lib64/libnvrtc.so.12",
                "cuda:/usr/local/cuda-12.9/lib64/libnvrtc.so.12",
                "cuda:/usr/local/cuda-12.4/lib64/libnvrtc.so.12",
                "cuda:/usr/lib64/libnvrtc.so.12",
            ])
        );
    }

    #[test]
    fn a_cuda_symlink_and_its_target_are_one_candidate() {
        let root = tree(&[
            "/usr/local/cuda-13.0/lib64/libnvrtc.so.13",
            "/usr/local/cuda -> cuda-13.0",
        ]);
        let s = search(&env(&root, &[]), None);
        assert_eq!(
            order(&root, &s),
            with_bare(&["cuda:/usr/local/cuda/lib64/libnvrtc.so.13"])
        );
    }

    #[test]
    fn pip_layouts_of_cuda_13_and_12_in_a_virtual_env() {
        let site = "/venv/lib/python3.11/site-packages/nvidia";
        let root = tree(&[
            &format!("{site}/cu13/lib/libnvrtc.so.13"),
            &format!("{site}/cu13/lib/libnvrtc-builtins.so.13.5"),
            &format!("{site}/cuda_nvrtc/lib/libnvrtc.so.12"),
            &format!("{site}/cublas/lib/libcublas.so.12"),
            "/venv/lib/python3.9/site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.12",
        ]);
        let s = search(&env(&root, &[("VIRTUAL_ENV", "/venv")]), None);
        assert_eq!(
            order(&root, &s),
            with_bare(&[
                &format!("pip:{site}/cu13/lib/libnvrtc.so.13"),
                &format!("pip:{site}/cuda_nvrtc/lib/libnvrtc.so.12"),
                "pip:/venv/lib/python3.9/site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.12",
            ])
        );
    }

    #[test]
    fn only_the_active_python_environment_is_searched() {
        let lib = "nvidia/cuda_nvrtc/lib/libnvrtc.so.12";
        let root = tree(&[
            &format!("/venv/lib/python3.12/site-packages/{lib}"),
            &format!("/conda/lib/python3.12/site-packages/{lib}"),
            "/opt/torch/.venv/bin/python3",
            &format!("/opt/torch/.venv/lib/python3.12/site-packages/{lib}"),
            &format!("/usr/local/lib/python3.11/dist-packages/{lib}"),
            &format!("/home/u/.local/lib/python3.10/site-packages/{lib}"),
        ]);
        // A virtual environment inside a conda one: both are active, the venv first.
        let s = search(
            &env(
                &root,
                &[
                    ("VIRTUAL_ENV", "/venv"),
                    ("CONDA_PREFIX", "/conda"),
                    ("PATH", "/opt/torch/.venv/bin"),
                    ("HOME", "/home/u"),
                ],
            ),
            None,
        );
        assert_eq!(
            order(&root, &s),
            with_bare(&[
                &format!("pip:/venv/lib/python3.12/site-packages/{lib}"),
                &format!("pip:/conda/lib/python3.12/site-packages/{lib}"),
            ])
        );
    }

    #[test]
    fn the_driver_major_picks_the_newest_nvrtc_it_can_run() {
        let root = tree(&[
            "/ld/libnvrtc.so.12",
            "/usr/local/cuda-13.0/lib64/libnvrtc.so.13.0.88",
            "/usr/local/cuda-13.0/lib64/libnvrtc.so.13 -> libnvrtc.so.13.0.88",
            "/usr/local/cuda-13.0/lib64/libnvrtc.so -> libnvrtc.so.13",
            "/venv/lib/python3.11/site-packages/nvidia/cu13/lib/libnvrtc.so.13",
            "/venv/lib/python3.11/site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.12",
            "/odd/libnvrtc.so.12.4.99",
            "/odd/libnvrtc.so -> libnvrtc.so.12.4.99",
            "/unknown/libnvrtc.so",
        ]);
        let e = env(
            &root,
            &[
                ("LD_LIBRARY_PATH", "/ld:/odd:/unknown"),
                ("VIRTUAL_ENV", "/venv"),
            ],
        );
        let ld12 = "ld:/ld/libnvrtc.so.12";
        // Unversioned, but links to a CUDA 12 file.
        let odd12 = "ld:/odd/libnvrtc.so";
        let unknown = "ld:/unknown/libnvrtc.so";
        let cu13 = "cuda:/usr/local/cuda-13.0/lib64/libnvrtc.so.13";
        let pip13 = "pip:/venv/lib/python3.11/site-packages/nvidia/cu13/lib/libnvrtc.so.13";
        let pip12 = "pip:/venv/lib/python3.11/site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.12";
        // A CUDA 12 driver: every CUDA 12 NVRTC first (in rule order), CUDA 13 after,
        // the file of unknown major last; the bare names after all files. The toolkit's
        // libnvrtc.so is the same file as its libnvrtc.so.13: listed once.
        let got = order(&root, &search(&e, Some(12)));
        assert_eq!(
            got,
            [
                ld12,
                odd12,
                pip12,
                cu13,
                pip13,
                unknown,
                "bare:libnvrtc.so.12",
                "bare:libnvrtc.so.13",
                "bare:libnvrtc.so"
            ]
        );
        // A CUDA 13 driver, or none at all: the highest major first.
        for driver in [Some(13), None] {
            let got = order(&root, &search(&e, driver));
            assert_eq!(
                &got[..6],
                [cu13, pip13, ld12, odd12, pip12, unknown],
                "driver {driver:?}"
            );
            assert_eq!(&got[6..], BARE);
        }
        // A driver older than every NVRTC: the highest major too.
        let got = order(&root, &search(&e, Some(11)));
        assert_eq!(&got[..6], [cu13, pip13, ld12, odd12, pip12, unknown]);
    }

    #[test]
    fn preference_ranks_supported_majors_then_newer_then_unknown() {
        assert!(preference(Some(13), Some(13)) < preference(Some(12), Some(13)));
        assert!(preference(Some(12), Some(12)) < preference(Some(13), Some(12)));
        assert!(preference(Some(13), Some(11)) < preference(Some(12), Some(11)));
        assert!(preference(Some(13), None) < preference(Some(12), None));
        assert!(preference(Some(14), Some(12)) < preference(None, Some(12)));
    }

    #[test]
    fn an_empty_environment_searches_the_fixed_places_and_then_the_loader() {
        let root = tree(&[]);
        let s = search(&env(&root, &[]), None);
        assert_eq!(order(&root, &s), BARE);
        let r = root.path().display().to_string();
        for place in [
            "/usr/local/cuda/lib64",
            "/usr/local/cuda-*/lib64",
            "/usr/lib/x86_64-linux-gnu",
            "/usr/lib64",
            "/usr/lib",
        ] {
            assert!(
                s.places.contains(&format!("{r}{place}")),
                "{place} missing from {:?}",
                s.places
            );
        }
    }
}
