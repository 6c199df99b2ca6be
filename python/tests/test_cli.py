"""The wheel as users get it: its tags and glibc symbol versions (scripts/check-wheel.py),
and its `ikp` console script, run from the venv the wheel is installed in with no cargo
on PATH, against the cargo-built CLI: the same output files, standard output, standard
error and exit codes on the shipped samples and on bad input.

scripts/test-python.sh sets IKP_CARGO_CLI (the cargo-built binary) and IKP_WHEEL (the
wheel installed here); without them these tests skip."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples"
CHECK = ROOT / "scripts" / "check-wheel.py"
CARGO_CLI = os.environ.get("IKP_CARGO_CLI")
WHEEL = os.environ.get("IKP_WHEEL")

needs_cli = pytest.mark.skipif(not CARGO_CLI, reason="IKP_CARGO_CLI (the cargo-built ikp) is not set")


def installed_ikp() -> str:
    """The wheel's console script, where pip put it: beside this venv's python."""
    exe = shutil.which("ikp")
    assert exe is not None, "no `ikp` on PATH"
    assert Path(exe).resolve().parent == Path(sys.executable).resolve().parent or Path(exe).parent == Path(
        sys.executable
    ).parent, f"`ikp` on PATH is {exe}, not the console script of the venv of {sys.executable}"
    return exe


def run(exe: str, args, cwd: Path):
    r = subprocess.run([exe, *map(str, args)], cwd=cwd, capture_output=True, timeout=120)
    return r.returncode, r.stdout, r.stderr


def test_no_cargo_on_path():
    """The test command runs these tests as a user without a Rust toolchain would."""
    if not CARGO_CLI:
        pytest.skip("not run by scripts/test-python.sh")
    assert shutil.which("cargo") is None and shutil.which("rustc") is None, os.environ["PATH"]


# Each case: the arguments, the files it writes (compared byte for byte), the exit code.
CASES = [
    ("summary", ["summary", SAMPLES / "attention.ikp"], [], 0),
    (
        "decode",
        ["decode", SAMPLES / "attention.ikp", "--chrome", "t.json", "--summary", "s.json", "--csv", "s.csv"],
        ["t.json", "s.json", "s.csv"],
        0,
    ),
    ("decode-perfetto", ["decode", SAMPLES / "attention.ikp", "--perfetto", "t.pftrace"], ["t.pftrace"], 0),
    (
        "decode-tvm",
        ["decode", SAMPLES / "attention_tvm.bin", "--names", SAMPLES / "attention_names.txt", "--summary", "-"],
        [],
        0,
    ),
    ("analyze", ["analyze", SAMPLES / "attention.ikp"], [], 0),
    ("report-xlsx", ["report", SAMPLES / "attention.ikp", "-o", "rep", "--xlsx"], ["rep/report.html"], 0),
    ("header", ["header", "-o", "inc"], ["inc/ikp.cuh"], 0),
    ("diff-regression", ["diff", SAMPLES / "attention.ikp", "seed1.ikp", "--threshold", "0.01", "--fail-on-regression"], [], 3),
    ("version", ["--version"], [], 0),
    ("help", ["decode", "--help"], [], 0),
    ("bad-file", ["decode", "bad.bin", "--summary", "out.json"], [], 1),
    ("missing-file", ["summary", "nonexistent.ikp"], [], 1),
    ("bad-command-line", ["decode"], [], 2),
    ("unknown-subcommand", ["bogus"], [], 2),
    ("usage-error", ["decode", SAMPLES / "attention.ikp", SAMPLES / "attention.ikp", "--chrome", "x.json"], [], 2),
]


@needs_cli
@pytest.mark.parametrize("name,args,files,code", CASES, ids=[c[0] for c in CASES])
def test_console_script_is_the_cli(tmp_path, name, args, files, code):
    ours, theirs = tmp_path / "wheel", tmp_path / "cargo"
    results = {}
    for where, exe in ((ours, installed_ikp()), (theirs, CARGO_CLI)):
        where.mkdir()
        (where / "bad.bin").write_bytes(b"\x01\x02\x03")
        # Another run of the sample kernel, for `ikp diff` to find regressions in.
        assert run(CARGO_CLI, ["sample", "seed1.ikp", "--seed", "1"], where)[0] == 0
        results[where] = run(exe, args, where)
    (rc, out, err), (rc_c, out_c, err_c) = results[ours], results[theirs]
    assert (rc, rc_c) == (code, code), (err.decode(), err_c.decode())
    assert out == out_c
    assert err == err_c
    for f in files:
        a, b = (ours / f).read_bytes(), (theirs / f).read_bytes()
        assert len(a) > 0 and a == b, f
    if code != 0:
        # Nothing half-written beside the bad input.
        assert not (ours / "out.json").exists()


@needs_cli
def test_python_m_ikp_and_a_closed_pipe(tmp_path):
    """`python -m ikp` is the same command (named `ikp` in its usage line), and a reader
    that closes the pipe early ends it with 0, as the binary does."""
    rc, out, err = run(sys.executable, ["-m", "ikp", "decode"], tmp_path)
    assert rc == 2 and b"Usage: ikp decode" in err, err
    for exe in (installed_ikp(), CARGO_CLI):
        p = subprocess.Popen(
            [exe, "decode", str(SAMPLES / "attention.ikp"), "--chrome", "-"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert p.stdout.read(64)
        p.stdout.close()
        assert p.wait(timeout=120) == 0, (exe, p.stderr.read())


def test_wheel_tags_and_glibc_versions():
    """scripts/check-wheel.py passes the installed wheel (abi3, manylinux_2_28, no
    GLIBC_ symbol newer than 2.28) and rejects what breaks those rules."""
    if not WHEEL:
        pytest.skip("IKP_WHEEL (the wheel under test) is not set")
    r = subprocess.run([sys.executable, CHECK, WHEEL], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "manylinux_2_28" in Path(WHEEL).name and "-abi3-" in Path(WHEEL).name
    # A stricter limit than the wheel was built for must fail it, naming symbols.
    r = subprocess.run([sys.executable, CHECK, WHEEL, "--max-glibc", "2.17"], capture_output=True, text=True)
    assert r.returncode == 1 and "newer than glibc 2.17" in r.stderr and "@GLIBC_2." in r.stderr, r.stderr


@needs_cli
def test_the_glibc_check_rejects_a_binary_linked_here():
    """The cargo-built CLI links this machine's glibc: newer than 2.28 here (Debian 12:
    2.36, `__libc_start_main@GLIBC_2.34`), so the check must name it."""
    glibc = os.confstr("CS_GNU_LIBC_VERSION").split()[-1]
    if tuple(int(p) for p in glibc.split(".")) < (2, 34):
        pytest.skip(f"glibc {glibc} here: a binary linked here may well need nothing newer than 2.28")
    r = subprocess.run([sys.executable, CHECK, "--elf", CARGO_CLI], capture_output=True, text=True)
    assert r.returncode == 1, r.stdout
    assert "__libc_start_main@GLIBC_2.34" in r.stderr, r.stderr
