"""What an ELF file executes and what it calls, as one identity: the code identity of a kernel.

Two builds of a kernel run the same code when

- the bytes the loader maps with content are the same (code, constants, initialised data), and so
  are the sizes of what it maps zeroed (``.bss``);
- in a relocatable object (the ``.o`` of Hexagon), the same relocations name the same symbols;
- in a shared object (the ``.so`` of llvm and CUDA), the same dynamic symbols (their names, symbol
  versions, kinds, bindings, and where each defined one lies) are bound by the same dynamic
  relocations, the same libraries are needed, with the same binding flags and initialiser, and the
  segments are mapped with the same permissions. The loader and TVM's runtime bind a shared object
  by names alone: a call to ``memset`` goes where the name and its version say, and
  ``__TVMBackendAllocWorkspace`` is a pointer the runtime fills by its name. The code's own bytes
  are the same whatever the name: a call through the PLT or the GOT is an offset to a slot, which
  a relocation fills by name.

Left out, as what varies between builds of the same code: the symbol and string tables only
debuggers read (``.symtab``, ``.strtab``: so a renamed function of an object keeps its identity),
notes (build ids), debug and comment sections (paths, compiler banners, timestamps), unwind tables,
the hash tables of the dynamic symbols (made from their names), the GOT's first content (the loader
fills its slots), the dynamic section's addresses and sizes, its search paths (``DT_RPATH``,
``DT_RUNPATH``: directories of a build) and the library's own name (``DT_SONAME``). An address the
parts above hold (where a relocation applies, where a symbol lies, where a relative relocation
points, the initialiser) counts as its section's name and the offset in it, so a section that only
moves keeps the identity. The section names come from the ELF specification (System V gABI,
"Sections", "Dynamic Section", and the GNU symbol versioning of the LSB) and its type numbers;
nothing here depends on TVM.

An identity that is the same means the same executed code and calls; one that differs may still be
the same code laid out anew (a section that grows moves the code after it, and with it the offsets
the code holds): the safe direction, since a "changed" kernel is only measured again, never excused.

An identity names its scheme, ``v2:<sha256>`` (:data:`SCHEME`): 64 hex digits alone are scheme 1,
kept by suites before dynamic symbols and relocations counted (shared objects calling three
different functions had one identity). Two identities of two schemes say nothing of each other's
code (:func:`scheme_of`).
"""

from __future__ import annotations

import hashlib
import re
import struct
from pathlib import Path
from typing import NamedTuple

#: The scheme of the identities :func:`code_digest` makes; a change of what they cover is a new one.
SCHEME = 2
_BARE = re.compile(r"[0-9a-f]{64}")  # scheme 1
_NAMED = re.compile(r"v([1-9][0-9]*):[0-9a-f]{64}")

SHF_ALLOC = 0x2
#: Section types whose content is executed or read by the code: PROGBITS, INIT_ARRAY, FINI_ARRAY,
#: PREINIT_ARRAY.
EXECUTED_TYPES = {1, 14, 15, 16}
SHT_NOBITS = 8
#: Relocation sections (RELA, REL): in an object file they complete the code; in a shared object
#: (linked to its dynamic symbols) they bind it.
RELOCATION_TYPES = {4, 9}
SHT_RELA = 4
SHT_DYNAMIC = 6
SHT_DYNSYM = 11
SHT_RELR = 19  #: packed relative relocations: addresses alone
SHT_GNU_VERDEF, SHT_GNU_VERNEED, SHT_GNU_VERSYM = 0x6FFFFFFD, 0x6FFFFFFE, 0x6FFFFFFF
SHN_UNDEF, SHN_LORESERVE, SHN_ABS, SHN_COMMON = 0, 0xFF00, 0xFFF1, 0xFFF2
STT_TLS = 6
#: Mapped, but bookkeeping rather than code: unwind tables and the GOT of a shared library (its
#: slots are filled by the loader, as its relocations say).
LEFT_OUT = {".eh_frame", ".eh_frame_hdr", ".gcc_except_table", ".got", ".got.plt", ".comment"}
#: Entries of the dynamic section that name what the code binds to: the libraries needed, in
#: their search order (NEEDED, AUXILIARY, FILTER).
DYNAMIC_NAMES = {1: "needed", 0x7FFFFFFD: "auxiliary", 0x7FFFFFFF: "filter"}
#: Entries that say how it binds (SYMBOLIC, TEXTREL, BIND_NOW, FLAGS, FLAGS_1).
DYNAMIC_FLAGS = {16: "symbolic", 22: "textrel", 24: "bind_now", 30: "flags", 0x6FFFFFFB: "flags_1"}
#: Entries that are a function the loader calls (INIT, FINI).
DYNAMIC_CALLED = {12: "init", 13: "fini"}
#: Segments that are no code, as their sections are not: notes, unwind tables, the program
#: headers themselves (NOTE, PHDR, GNU_EH_FRAME, GNU_PROPERTY).
SEGMENTS_LEFT_OUT = {4, 6, 0x6474E550, 0x6474E553}
ET_REL = 1


class NotELF(ValueError):
    pass


def code_digest(path: Path) -> str:
    """The code identity of the ELF file at ``path`` (see the module's docstring): ``v2:`` and the
    sha256 of what it executes and calls."""
    digest = hashlib.sha256()
    for name, blob in sorted(_parts(Path(path).read_bytes())):
        digest.update(f"{name}\0{len(blob)}\0".encode())
        digest.update(blob)
    return f"v{SCHEME}:{digest.hexdigest()}"


def scheme_of(identity: str) -> int | None:
    """The scheme of a code identity: 1 for 64 hex digits alone (kept by older suites), N for
    ``vN:`` and 64 hex digits; None where ``identity`` is no code identity."""
    if _BARE.fullmatch(identity):
        return 1
    named = _NAMED.fullmatch(identity)
    return int(named[1]) if named and int(named[1]) > 1 else None


class Section(NamedTuple):
    name: int
    type: int
    flags: int
    addr: int
    offset: int
    size: int
    link: int
    info: int
    addralign: int
    entsize: int


class Symbol(NamedTuple):
    name: str
    value: int
    size: int
    info: int
    other: int
    shndx: int


class _File:
    """An ELF file's header, sections and segments, read as the gABI lays them out."""

    def __init__(self, data: bytes):
        if len(data) < 52 or data[:4] != b"\x7fELF":
            raise NotELF("not an ELF file")
        if data[4] not in (1, 2) or data[5] != 1:
            raise NotELF("not a little-endian ELF32 or ELF64 file")
        self.data, self.wide = data, data[4] == 2
        header = "<HHIQQQIHHHHHH" if self.wide else "<HHIIIIIHHHHHH"
        (self.type, _machine, _version, _entry, phoff, shoff, _flags, _ehsize, phentsize, phnum,
         shentsize, shnum, shstrndx) = struct.unpack_from(header, data, 16)
        section = "<IIQQQQIIQQ" if self.wide else "<IIIIIIIIII"
        self.sections = [Section(*struct.unpack_from(section, data, shoff + i * shentsize)) for i in range(shnum)]
        self.names = self.sections[shstrndx] if shstrndx < shnum else None
        segment = "<IIQQQQQQ" if self.wide else "<IIIIIIII"
        self.segments = []
        for i in range(phnum):
            fields = struct.unpack_from(segment, data, phoff + i * phentsize)
            self.segments.append((fields[0], fields[1] if self.wide else fields[6]))  # p_type, p_flags
        self.word = 8 if self.wide else 4

    def string(self, table: Section | None, offset: int) -> str:
        if table is None:
            return ""
        start = table.offset + offset
        return self.data[start:self.data.index(b"\x00", start)].decode("latin-1")

    def name_of(self, section: Section) -> str:
        return self.string(self.names, section.name)

    def content(self, section: Section) -> bytes:
        if section.offset + section.size > len(self.data):
            raise NotELF(f"section {self.name_of(section)!r} runs past the end of the file")
        return self.data[section.offset:section.offset + section.size]

    def linked(self, section: Section) -> Section | None:
        return self.sections[section.link] if 0 < section.link < len(self.sections) else None

    def where(self, address: int) -> str:
        """An address as its section's name and the offset in it (the section that only moves
        keeps it), else as a number."""
        mapped = [s for s in self.sections if s.flags & SHF_ALLOC and s.size]
        for section in mapped:
            if section.addr <= address < section.addr + section.size:
                return f"{self.name_of(section)}+{address - section.addr:x}"
        for section in mapped:  # one past a section's end (a symbol such as _end)
            if address == section.addr + section.size:
                return f"{self.name_of(section)}+{section.size:x}"
        return f"{address:x}"

    def symbols(self, table: Section) -> list[Symbol]:
        layout = "<IBBHQQ" if self.wide else "<IIIBBH"
        size = struct.calcsize(layout)
        strings = self.linked(table)
        found = []
        for offset in range(table.offset, table.offset + table.size - size + 1, size):
            fields = struct.unpack_from(layout, self.data, offset)
            if self.wide:
                st_name, info, other, shndx, value, st_size = fields
            else:
                st_name, value, st_size, info, other, shndx = fields
            found.append(Symbol(self.string(strings, st_name), value, st_size, info, other, shndx))
        return found


def _parts(data: bytes) -> list[tuple[str, bytes]]:
    try:
        elf = _File(data)
        return _executed(elf) + _dynamic(elf)
    except (struct.error, IndexError, ValueError) as err:
        if isinstance(err, NotELF):
            raise
        raise NotELF(f"a damaged ELF file ({err})") from None


def _executed(elf: _File) -> list[tuple[str, bytes]]:
    """The mapped content, the sizes of what is mapped zeroed, and an object's relocations."""
    parts = []
    for sh in elf.sections:
        name = elf.name_of(sh)
        if sh.flags & SHF_ALLOC and name not in LEFT_OUT and sh.type in EXECUTED_TYPES:
            parts.append((name, elf.content(sh)))
        elif sh.flags & SHF_ALLOC and name not in LEFT_OUT and sh.type == SHT_NOBITS:
            parts.append((name, f"zeroed {sh.size:x}".encode()))
        elif sh.type in RELOCATION_TYPES and elf.type == ET_REL:
            target = elf.sections[sh.info] if sh.info < len(elf.sections) else None  # the section relocated
            if target is not None and elf.name_of(target) not in LEFT_OUT and target.flags & SHF_ALLOC:
                parts.append((name, _object_relocations(elf, sh)))
    return parts


def _object_relocations(elf: _File, sh: Section) -> bytes:
    """The relocations of one section of an object as (offset, type, symbol name, addend) lines:
    symbol indices and the symbol table's order are noise, the names they stand for are not."""
    symbols = elf.symbols(elf.sections[sh.link])
    lines = []
    for r_offset, kind, sym, addend in _relocations(elf, sh):
        symbol = symbols[sym]
        name = symbol.name
        if not name and 0 < symbol.shndx < len(elf.sections):  # a section symbol: the section's name
            name = elf.name_of(elf.sections[symbol.shndx])
        lines.append(f"{r_offset:x} {kind} {name} {'' if addend is None else addend}")
    return "\n".join(lines).encode()


def _relocations(elf: _File, sh: Section):
    """(offset, type, symbol index, addend or None) of each relocation of ``sh``."""
    addend = sh.type == SHT_RELA
    entry = ("<QQq" if addend else "<QQ") if elf.wide else ("<IIi" if addend else "<II")
    size = struct.calcsize(entry)
    for offset in range(sh.offset, sh.offset + sh.size - size + 1, size):
        fields = struct.unpack_from(entry, elf.data, offset)
        info = fields[1]
        sym, kind = (info >> 32, info & 0xFFFFFFFF) if elf.wide else (info >> 8, info & 0xFF)
        yield fields[0], kind, sym, fields[2] if addend else None


def _dynamic(elf: _File) -> list[tuple[str, bytes]]:
    """What a shared object (or a dynamically linked program) binds, and how: nothing in an object."""
    parts = []
    tables = [i for i, sh in enumerate(elf.sections) if sh.type == SHT_DYNSYM]
    for index in tables:
        sh = elf.sections[index]
        named = _named_symbols(elf, index)
        lines = [f"{named[i]} {_kind(s)} {_place(elf, s)} size {s.size:x}"
                 for i, s in enumerate(elf.symbols(sh)) if i]
        parts.append((elf.name_of(sh), "\n".join(sorted(lines)).encode()))
        for rel in elf.sections:
            if rel.type in RELOCATION_TYPES and rel.link == index and elf.type != ET_REL:
                lines = [f"{elf.where(r_offset)} {kind} {named[sym] if sym else ''} "
                         f"{_addend(elf, sym, addend)}" for r_offset, kind, sym, addend in _relocations(elf, rel)]
                parts.append((elf.name_of(rel), "\n".join(sorted(lines)).encode()))
    for sh in elf.sections:
        if sh.type == SHT_RELR:
            parts.append((elf.name_of(sh), "\n".join(sorted(_relr(elf, sh))).encode()))
        elif sh.type == SHT_DYNAMIC:
            parts.append((elf.name_of(sh), "\n".join(_binding(elf, sh)).encode()))
    if tables:
        segments = [f"{kind:x} {flags:x}" for kind, flags in elf.segments if kind not in SEGMENTS_LEFT_OUT]
        parts.append(("segments", "\n".join(segments).encode()))
    return parts


def _kind(symbol: Symbol) -> str:
    return f"bind {symbol.info >> 4} type {symbol.info & 0xF} visibility {symbol.other & 0x3}"


def _place(elf: _File, symbol: Symbol) -> str:
    """Where a dynamic symbol lies: undefined (another library's), or its section and offset."""
    if symbol.shndx == SHN_UNDEF:
        return "undefined"
    if symbol.shndx == SHN_ABS:
        return f"absolute {symbol.value:x}"
    if symbol.shndx == SHN_COMMON:
        return f"common {symbol.value:x}"
    if symbol.info & 0xF == STT_TLS:  # an offset in the thread's block, not an address
        return f"thread-local {symbol.value:x}"
    if symbol.shndx < min(len(elf.sections), SHN_LORESERVE):
        section = elf.sections[symbol.shndx]
        return f"{elf.name_of(section)}+{symbol.value - section.addr:x}"
    return f"index {symbol.shndx:x} {symbol.value:x}"


def _addend(elf: _File, sym: int, addend: int | None) -> str:
    """A relocation's addend; with no symbol (a relative relocation) it is an address."""
    if addend is None:
        return ""
    return elf.where(addend) if sym == 0 and addend >= 0 else str(addend)


def _named_symbols(elf: _File, index: int) -> list[str]:
    """Each dynamic symbol's name with its version (``memset@GLIBC_2.2.5 (libc.so.6)``; ``@@`` for
    the default version of a defined one), in the table's order."""
    table = elf.sections[index]
    symbols = elf.symbols(table)
    versions = {}  # version index -> its name (and the library that defines it)
    for sh in elf.sections:
        if sh.type == SHT_GNU_VERNEED and sh.link < len(elf.sections):
            strings, at = elf.sections[sh.link], sh.offset
            for _ in range(sh.info):
                _version, count, file, aux, after = struct.unpack_from("<HHIII", elf.data, at)
                library, entry = elf.string(strings, file), at + aux
                for _ in range(count):
                    _hash, _flags, other, name, next_aux = struct.unpack_from("<IHHII", elf.data, entry)
                    versions[other] = f"{elf.string(strings, name)} ({library})"
                    entry += next_aux
                at += after
        elif sh.type == SHT_GNU_VERDEF and sh.link < len(elf.sections):
            strings, at = elf.sections[sh.link], sh.offset
            for _ in range(sh.info):
                _version, _flags, number, _count, _hash, aux, after = struct.unpack_from("<HHHHIII", elf.data, at)
                versions[number] = elf.string(strings, struct.unpack_from("<I", elf.data, at + aux)[0])
                at += after
    found = [s.name for s in symbols]
    for sh in elf.sections:
        if sh.type == SHT_GNU_VERSYM and sh.link == index:
            for i, value in enumerate(struct.unpack_from(f"<{len(symbols)}H", elf.data, sh.offset)):
                number = value & 0x7FFF
                if number > 1:  # 0: local, 1: global, unversioned
                    hidden = value & 0x8000 or symbols[i].shndx == SHN_UNDEF
                    found[i] += f"{'@' if hidden else '@@'}{versions.get(number, f'version {number}')}"
    return found


def _relr(elf: _File, sh: Section) -> list[str]:
    """The places a packed relative relocation section relocates (an address, then bitmaps of the
    words after it)."""
    layout, bits = ("<Q", 64) if elf.wide else ("<I", 32)
    places, following = [], 0
    for offset in range(sh.offset, sh.offset + sh.size - elf.word + 1, elf.word):
        entry = struct.unpack_from(layout, elf.data, offset)[0]
        if entry & 1 == 0:
            places.append(entry)
            following = entry + elf.word
            continue
        for bit in range(1, bits):
            if entry >> bit & 1:
                places.append(following + (bit - 1) * elf.word)
        following += (bits - 1) * elf.word
    return [elf.where(place) for place in places]


def _binding(elf: _File, sh: Section) -> list[str]:
    """The entries of the dynamic section that decide what is bound and how, in their order."""
    layout = "<qQ" if elf.wide else "<iI"
    size = struct.calcsize(layout)
    strings = elf.linked(sh)
    lines = []
    for offset in range(sh.offset, sh.offset + sh.size - size + 1, size):
        tag, value = struct.unpack_from(layout, elf.data, offset)
        if tag == 0:  # DT_NULL ends the section
            break
        if tag in DYNAMIC_NAMES:
            lines.append(f"{DYNAMIC_NAMES[tag]} {elf.string(strings, value)}")
        elif tag in DYNAMIC_FLAGS:
            lines.append(f"{DYNAMIC_FLAGS[tag]} {value:x}")
        elif tag in DYNAMIC_CALLED:
            lines.append(f"{DYNAMIC_CALLED[tag]} {elf.where(value)}")
    return lines
