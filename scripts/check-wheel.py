#!/usr/bin/env python3
"""Checks that an ikp wheel installs wherever Triton does: exits 1 naming each problem.

    check-wheel.py WHEEL [--max-glibc 2.28]
    check-wheel.py --elf FILE [--max-glibc 2.28]     (one ELF file, for the test of this check)

What it checks, from the wheel alone (no pip, no auditwheel; Python 3.9+, standard library):

- the tags, in the file name and in ``*.dist-info/WHEEL``: ``cp3X-abi3`` (one wheel for
  every CPython from 3.X on) and a ``manylinux_A_B`` platform (or a legacy alias of one:
  ``manylinux2014`` is ``manylinux_2_17``) no newer than ``--max-glibc``;
- the native module ``ikp/_ikp.abi3.so``: an ELF shared object whose symbol versions
  (the ELF ``.gnu.version_r`` needs, and for each undefined symbol of ``.dynsym`` the
  version ``.gnu.version`` binds it to) require no ``GLIBC_`` newer than ``--max-glibc``,
  each offender named with its symbol; and whose ``DT_NEEDED`` libraries are all in the
  manylinux policy's list (no libpython: abi3 extension modules link none);
- the ``ikp`` console script in ``entry_points.txt``.

The ELF reading is the format's own (the System V gABI and the LSB's symbol versioning:
``Elf64_Verneed`` / ``Elf64_Vernaux``, ``Elf64_Sym``, ``Elf64_Dyn``), 64-bit little-endian
only (x86_64, aarch64): what this wheel is built for.
"""

import argparse
import re
import struct
import sys
import zipfile
from typing import Dict, List, Optional, Tuple

# Libraries a manylinux wheel may need from the system (PEP 600's policy, as auditwheel's
# policy.json lists them for x86_64 and aarch64).
ALLOWED_NEEDED = {
    "libgcc_s.so.1",
    "libstdc++.so.6",
    "libm.so.6",
    "libdl.so.2",
    "librt.so.1",
    "libc.so.6",
    "libnsl.so.1",
    "libutil.so.1",
    "libpthread.so.0",
    "libresolv.so.2",
    "libX11.so.6",
    "libXext.so.6",
    "libXrender.so.1",
    "libICE.so.6",
    "libSM.so.6",
    "libGL.so.1",
    "libgobject-2.0.so.0",
    "libgthread-2.0.so.0",
    "libglib-2.0.so.0",
    "ld-linux-x86-64.so.2",
    "ld-linux-aarch64.so.1",
}
# PEP 599's names for the manylinux tags before PEP 600.
LEGACY = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}
NATIVE = "ikp/_ikp.abi3.so"

SHT_DYNSYM = 11
SHT_DYNAMIC = 6
SHT_GNU_VERNEED = 0x6FFFFFFE
SHT_GNU_VERSYM = 0x6FFFFFFF
DT_NEEDED = 1
ET_DYN = 3


def version_key(v: str) -> Tuple[int, ...]:
    return tuple(int(p) for p in v.split("."))


class Elf:
    """The dynamic-linking facts of a 64-bit little-endian ELF file."""

    def __init__(self, data: bytes, name: str) -> None:
        self.name = name
        if data[:4] != b"\x7fELF":
            raise ValueError(f"{name}: not an ELF file")
        if data[4] != 2 or data[5] != 1:
            raise ValueError(f"{name}: not a 64-bit little-endian ELF file (class {data[4]}, data {data[5]})")
        self.data = data
        (self.type,) = struct.unpack_from("<H", data, 16)
        shoff, = struct.unpack_from("<Q", data, 40)
        shentsize, shnum = struct.unpack_from("<HH", data, 58)
        self.sections = []
        for i in range(shnum):
            # sh_name, sh_type, sh_flags, sh_addr, sh_offset, sh_size, sh_link, sh_info,
            # sh_addralign, sh_entsize
            self.sections.append(struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize))

    def _section(self, kind: int) -> Optional[Tuple[int, ...]]:
        return next((s for s in self.sections if s[1] == kind), None)

    def _string(self, strtab: int, off: int) -> str:
        base = self.sections[strtab][4] + off
        end = self.data.index(b"\0", base)
        return self.data[base:end].decode()

    def version_needs(self) -> Dict[int, Tuple[str, str]]:
        """Version index -> (library, version name), from ``.gnu.version_r``."""
        out: Dict[int, Tuple[str, str]] = {}
        sec = self._section(SHT_GNU_VERNEED)
        if sec is None:
            return out
        off, link, count = sec[4], sec[6], sec[7]
        for _ in range(count):
            _ver, cnt, file_, aux, nxt = struct.unpack_from("<HHIII", self.data, off)
            lib = self._string(link, file_)
            a = off + aux
            for _ in range(cnt):
                _hash, _flags, other, name, anext = struct.unpack_from("<IHHII", self.data, a)
                out[other] = (lib, self._string(link, name))
                a += anext
            if nxt == 0:
                break
            off += nxt
        return out

    def undefined_symbol_versions(self) -> List[Tuple[str, str]]:
        """(symbol, version) of each undefined dynamic symbol bound to a needed version."""
        dynsym, versym = self._section(SHT_DYNSYM), self._section(SHT_GNU_VERSYM)
        if dynsym is None or versym is None:
            return []
        needs = self.version_needs()
        out = []
        n = dynsym[5] // 24
        for i in range(n):
            name, _info, _other, shndx = struct.unpack_from("<IBBH", self.data, dynsym[4] + 24 * i)
            (ver,) = struct.unpack_from("<H", self.data, versym[4] + 2 * i)
            ver &= 0x7FFF
            if shndx == 0 and ver in needs:
                out.append((self._string(dynsym[6], name), needs[ver][1]))
        return out

    def needed(self) -> List[str]:
        sec = self._section(SHT_DYNAMIC)
        if sec is None:
            return []
        out = []
        for off in range(sec[4], sec[4] + sec[5], 16):
            tag, val = struct.unpack_from("<qQ", self.data, off)
            if tag == 0:
                break
            if tag == DT_NEEDED:
                out.append(self._string(sec[6], val))
        return out


def elf_problems(elf: Elf, max_glibc: str) -> List[str]:
    """What keeps `elf` from loading on a glibc `max_glibc` system with only the manylinux
    libraries."""
    problems = []
    limit = version_key(max_glibc)
    too_new = sorted(
        {v for _lib, v in elf.version_needs().values() if v.startswith("GLIBC_") and re.fullmatch(r"GLIBC_[0-9.]+", v)
         and version_key(v[6:]) > limit},
        key=lambda v: version_key(v[6:]),
    )
    if too_new:
        syms = sorted({f"{s}@{v}" for s, v in elf.undefined_symbol_versions() if v in too_new})
        problems.append(
            f"{elf.name} needs {', '.join(too_new)} (newer than glibc {max_glibc}): "
            + (", ".join(syms[:12]) + (f" and {len(syms) - 12} more" if len(syms) > 12 else "") if syms else "no symbol named")
        )
    extra = [n for n in elf.needed() if n not in ALLOWED_NEEDED]
    if extra:
        problems.append(f"{elf.name} links {', '.join(extra)}, outside the manylinux policy's libraries")
    return problems


def platform_glibc(platform: str) -> Optional[Tuple[int, int]]:
    m = re.fullmatch(r"manylinux_(\d+)_(\d+)_\w+", platform)
    if m:
        return int(m.group(1)), int(m.group(2))
    m = re.fullmatch(r"(manylinux\d+)_\w+", platform)
    return LEGACY.get(m.group(1)) if m else None


def tag_problems(tags: List[str], where: str, max_glibc: str) -> List[str]:
    problems = []
    limit = version_key(max_glibc)
    if not tags:
        return [f"{where} names no tag"]
    for tag in tags:
        parts = tag.split("-")
        if len(parts) != 3:
            problems.append(f"{where}: tag {tag!r} is not python-abi-platform")
            continue
        py, abi, plats = parts
        if abi != "abi3" or not re.fullmatch(r"cp3\d+", py):
            problems.append(f"{where}: tag {tag} is not cp3X-abi3 (one wheel for every CPython 3)")
        for plat in plats.split("."):
            glibc = platform_glibc(plat)
            if glibc is None:
                problems.append(f"{where}: platform {plat} is not a manylinux tag")
            elif glibc > limit:
                problems.append(f"{where}: platform {plat} needs glibc {glibc[0]}.{glibc[1]}, newer than {max_glibc}")
    return problems


def wheel_problems(path: str, max_glibc: str) -> Tuple[List[str], Dict[str, object]]:
    problems: List[str] = []
    facts: Dict[str, object] = {}
    name = path.rsplit("/", 1)[-1]
    m = re.fullmatch(r"ikp-[^-]+-([^-]+)-([^-]+)-([^-]+)\.whl", name)
    if not m:
        return [f"{name}: not an ikp wheel's file name (ikp-VERSION-PY-ABI-PLATFORM.whl)"], facts
    problems += tag_problems([f"{m.group(1)}-{m.group(2)}-{m.group(3)}"], f"{name} (file name)", max_glibc)
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
        wheel_meta = [n for n in names if re.fullmatch(r"ikp-[^/]+\.dist-info/WHEEL", n)]
        if len(wheel_meta) != 1:
            problems.append(f"{name}: {len(wheel_meta)} .dist-info/WHEEL files, expected one")
        else:
            text = z.read(wheel_meta[0]).decode()
            tags = [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Tag:")]
            facts["tags"] = tags
            problems += tag_problems(tags, wheel_meta[0], max_glibc)
        entry = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        scripts = z.read(entry[0]).decode() if entry else ""
        if not re.search(r"^ikp\s*=\s*ikp\._cli:main\s*$", scripts, re.M):
            problems.append(f"{name}: no `ikp` console script (ikp = ikp._cli:main) in entry_points.txt")
        natives = [n for n in names if re.fullmatch(r"ikp/_ikp\..*so", n)]
        if natives != [NATIVE]:
            problems.append(f"{name}: native modules {natives}, expected [{NATIVE}]")
        if NATIVE in names:
            elf = Elf(z.read(NATIVE), f"{name}:{NATIVE}")
            if elf.type != ET_DYN:
                problems.append(f"{elf.name} is not a shared object (ELF type {elf.type})")
            glibc = sorted({v for _l, v in elf.version_needs().values() if v.startswith("GLIBC_")}, key=lambda v: version_key(v[6:]) if re.fullmatch(r"GLIBC_[0-9.]+", v) else (0,))
            facts["newest_glibc"] = glibc[-1] if glibc else None
            facts["needed"] = elf.needed()
            problems += elf_problems(elf, max_glibc)
    return problems, facts


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("wheel", nargs="?")
    ap.add_argument("--elf", help="check one ELF file's glibc versions and libraries instead")
    ap.add_argument("--max-glibc", default="2.28")
    args = ap.parse_args(argv)
    if (args.wheel is None) == (args.elf is None):
        ap.error("give a wheel or --elf FILE")
    try:
        if args.elf:
            with open(args.elf, "rb") as f:
                problems, facts = elf_problems(Elf(f.read(), args.elf), args.max_glibc), {}
        else:
            problems, facts = wheel_problems(args.wheel, args.max_glibc)
    except (OSError, ValueError, struct.error, zipfile.BadZipFile) as e:
        problems, facts = [f"cannot read {args.wheel or args.elf}: {e}"], {}
    for p in problems:
        print(f"check-wheel: {p}", file=sys.stderr)
    if problems:
        return 1
    what = args.wheel or args.elf
    detail = "; ".join(f"{k} {v}" for k, v in facts.items())
    print(f"check-wheel: {what}: glibc <= {args.max_glibc}" + (f" ({detail})" if detail else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
