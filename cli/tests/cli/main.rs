//! The `ikp` command line as users run it: one test binary (linked once) whose modules
//! each cover one command or concern. Where a new test goes:
//!
//! - a command's flags, outputs and errors: the module named for it (`decode`, `analyze`,
//!   `report`, `merge`, `cost`, `commands` for `summary` / `plot` / `diff` / `sample` /
//!   `header`), or `parquet`, `shares`;
//! - a buffer format read by every command: `formats` (ikp's own), `peers` (TVM family,
//!   Mirage, yao-jz, Proton), `epochs`, `async_ranges`, `stream` (stream files);
//! - damaged input (a clear error, never a panic or a half-written file): `hardening`,
//!   `set_aside` and `set_aside_formats` (lanes whose stamps are not of the launch);
//! - the pages' code blocks run or compiled (README.md, CONTRIBUTING.md, docs/): `docs`;
//! - helpers every module uses: [`util`]; headless Chromium for the HTML report: `chromium`.
//!
//! The library's own tests are in `host/tests/`, the device header's in `device/tests/`.

mod chromium;
mod util;

mod analyze;
mod async_ranges;
mod commands;
mod cost;
mod decode;
mod docs;
mod epochs;
mod formats;
mod hardening;
mod instrument;
mod merge;
mod parquet;
mod peers;
mod report;
mod set_aside;
mod set_aside_formats;
mod shares;
mod stream;
