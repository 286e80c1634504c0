"""What an ELF file executes, as one digest: the code identity of a kernel.

Two builds of a kernel execute the same code when the bytes the loader maps (code, constants,
initialised data) are the same and, in a relocatable object, the same relocations name the same
symbols. Everything else is left out: symbol and string tables (names), notes (build ids), debug
and comment sections (paths, compiler banners, timestamps), unwind tables and the dynamic
section's bookkeeping. The section names come from the ELF specification (System V gABI, "Sections")
and its type numbers; nothing here depends on TVM.

A digest that is the same means the same executed code; a digest that differs may still be the
same code laid out anew (a longer symbol name moves what follows it): the safe direction, since a
"changed" kernel is only measured again, never excused.
"""

from __future__ import annotations

import hashlib
import struct
from pathlib import Path

SHF_ALLOC = 0x2
#: Section types whose content is executed or read by the code: PROGBITS, INIT_ARRAY, FINI_ARRAY,
#: PREINIT_ARRAY.
EXECUTED_TYPES = {1, 14, 15, 16}
#: Relocation sections (RELA, REL): in an object file they complete the code.
RELOCATION_TYPES = {4, 9}
#: Mapped, but bookkeeping rather than code: unwind tables and the GOT of a shared library (its
#: slots are filled by the loader).
LEFT_OUT = {".eh_frame", ".eh_frame_hdr", ".gcc_except_table", ".got", ".got.plt", ".comment"}
ET_REL = 1


class NotELF(ValueError):
    pass


def code_digest(path: Path) -> str:
    """sha256 of what the ELF file at ``path`` executes (see the module's docstring)."""
    return hashlib.sha256(_executed(Path(path).read_bytes())).hexdigest()


def _executed(data: bytes) -> bytes:
    if len(data) < 52 or data[:4] != b"\x7fELF":
        raise NotELF("not an ELF file")
    wide, little = data[4] == 2, data[5] == 1
    if data[4] not in (1, 2) or not little:
        raise NotELF("not a little-endian ELF32 or ELF64 file")
    header = "<HHIQQQIHHHHHH" if wide else "<HHIIIIIHHHHHH"
    (e_type, _machine, _version, _entry, _phoff, shoff, _flags, _ehsize, _phentsize, _phnum,
     shentsize, shnum, shstrndx) = struct.unpack_from(header, data, 16)
    section = "<IIQQQQIIQQ" if wide else "<IIIIIIIIII"
    sections = [struct.unpack_from(section, data, shoff + i * shentsize) for i in range(shnum)]
    names = sections[shstrndx] if shstrndx < shnum else None

    def name_of(offset: int) -> str:
        if names is None:
            return ""
        start = names[4] + offset
        return data[start:data.index(b"\x00", start)].decode("latin-1")

    def content(sh) -> bytes:
        return data[sh[4]:sh[4] + sh[5]]

    parts = []
    for index, sh in enumerate(sections):
        sh_name, sh_type, flags = sh[0], sh[1], sh[2]
        name = name_of(sh_name)
        if sh_type in EXECUTED_TYPES and flags & SHF_ALLOC and name not in LEFT_OUT:
            parts.append((name, content(sh)))
        elif sh_type in RELOCATION_TYPES and e_type == ET_REL:
            target = sections[sh[7]] if sh[7] < shnum else None  # sh_info: the section relocated
            if target is not None and name_of(target[0]) not in LEFT_OUT and target[2] & SHF_ALLOC:
                parts.append((name, _relocations(data, sh, sections, sh_type == 4, wide, name_of)))
    digest = hashlib.sha256()
    for name, blob in sorted(parts):
        digest.update(f"{name}\0{len(blob)}\0".encode())
        digest.update(blob)
    return digest.digest()


def _relocations(data: bytes, sh, sections, addend: bool, wide: bool, name_of) -> bytes:
    """The relocations of one section as (offset, type, symbol name, addend) lines: symbol
    indices and the symbol table's order are noise, the names they stand for are not."""
    symtab = sections[sh[6]]  # sh_link: the symbol table
    strtab = sections[symtab[6]]
    entry = ("<QQq" if addend else "<QQ") if wide else ("<IIi" if addend else "<II")
    symbol = "<IBBHQQ" if wide else "<IIIBBH"
    size = struct.calcsize(entry)
    lines = []
    for offset in range(sh[4], sh[4] + sh[5], size):
        fields = struct.unpack_from(entry, data, offset)
        r_offset, info = fields[0], fields[1]
        sym, kind = (info >> 32, info & 0xFFFFFFFF) if wide else (info >> 8, info & 0xFF)
        sym_entry = struct.unpack_from(symbol, data, symtab[4] + sym * struct.calcsize(symbol))
        st_name = sym_entry[0]
        st_shndx = sym_entry[3] if wide else sym_entry[5]
        start = strtab[4] + st_name
        name = data[start:data.index(b"\x00", start)].decode("latin-1")
        if not name and 0 < st_shndx < len(sections):  # a section symbol: the section's name
            name = name_of(sections[st_shndx][0])
        lines.append(f"{r_offset:x} {kind} {name} {fields[2] if addend else ''}")
    return "\n".join(lines).encode()
