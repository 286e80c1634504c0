"""Cache keys follow what the suite's code means: a comment or docstring changes no key, code does."""

import os
import shutil
import time
from pathlib import Path

from suite import cache

TARGETS = Path(cache.__file__).resolve().parent / "targets"
CORE = Path(cache.__file__).resolve().parent / "core"


def copy(source: Path, where: Path) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copy(source, where / source.name))


def digest_after(path: Path, edit) -> str:
    path.write_text(edit(path.read_text()))
    return cache.source_digest(path)


def test_python_comments_and_docstrings_keep_the_digest_code_changes_it(tmp_path):
    for source in (CORE / "measurement.py", TARGETS / "hvx_stubs.py"):
        path = copy(source, tmp_path / source.stem)
        original = cache.source_digest(path)
        assert original is not None and original != cache.file_digest(path)
        text = path.read_text()
        assert digest_after(path, lambda t: "# a new comment\n" + t.replace("\n\n\ndef ", "\n\n\n# why\ndef ", 1)) \
            == original
        path.write_text(text)
        # The module's docstring, and a function's, reworded (and made longer by a line).
        reworded = text.replace('"""', '"""Reworded.\n\n', 1)
        first_def = reworded.index('    """', reworded.index("\ndef "))
        reworded = reworded[:first_def] + reworded[first_def:].replace('    """', '    """Reworded,\n    at length. ', 1)
        assert digest_after(path, lambda t: reworded) == original
        path.write_text(text)
        # Code: one constant changed.
        assert digest_after(path, lambda t: t.replace(" = 16\n", " = 17\n", 1) if " = 16\n" in t
                            else t.replace("return record", "return None", 1)) != original
        path.write_text(text)
        assert cache.source_digest(path) == original


def test_c_comments_and_blanks_keep_the_digest_code_and_literals_change_it(tmp_path):
    path = copy(TARGETS / "vector_model.c", tmp_path)
    original = cache.source_digest(path)
    text = path.read_text()
    assert digest_after(path, lambda t: "/* a new\n   block comment */\n" + t.replace("{\n", "{ // why\n\n", 3)) \
        == original
    relaid = "\n".join(line if '"' in line else line.replace(" = ", "  =\t") for line in text.split("\n"))
    assert relaid != text and digest_after(path, lambda t: relaid) == original  # blanks between tokens
    assert digest_after(path, lambda t: text.replace("return", "return 1 +", 1)) != original
    # Inside a string literal, blanks and "//" are the program's, not layout or a comment.
    literal = tmp_path / "literal.c"
    literal.write_text('const char* s = "a b"; // one\n')
    quoted = cache.source_digest(literal)
    literal.write_text('const char* s = "a  b"; // two\n')
    assert cache.source_digest(literal) != quoted
    literal.write_text('const char* s = "a b // c";\n')
    spaced = cache.source_digest(literal)
    literal.write_text('const char* s = "a b // d";\n')
    assert cache.source_digest(literal) != spaced


def test_other_files_are_their_bytes(tmp_path):
    record = tmp_path / "trace.json"
    record.write_text('{"a": 1}')
    assert cache.source_digest(record) == cache.file_digest(record)
    assert cache.source_digest(tmp_path / "missing.py") is None


def test_a_kept_digest_is_used_only_while_the_file_is_unchanged(tmp_path):
    """Digests of code are kept in the cache by the file's size, mtime and inode (parsing the suite
    costs a good part of a second per process); an edit, even of the same size, is seen."""
    path = copy(TARGETS / "hvx_stubs.py", tmp_path)
    text = path.read_text()
    old = time.time() - 60
    os.utime(path, (old, old))
    kept = cache.source_digest(path)
    assert (cache.root() / "source-digests" / "digests.json").is_file()
    assert cache.source_digest(path) == kept
    path.write_text(text.replace("VBUF_SLOTS = 16\n", "VBUF_SLOTS = 17\n"))
    os.utime(path, (old + 1, old + 1))
    assert cache.source_digest(path) != kept
    path.write_text(text)  # changed back less than two seconds ago: computed, not kept
    assert cache.source_digest(path) == kept
