"""The documents of a corpus, for lmscope.collect (docs/collect.md, "Corpora").

Three kinds, one document per line:
  text   a line of UTF-8 text is a document;
  jsonl  a line is a JSON object and the document is its string field (--field, default "text");
  ids    a line is token ids separated by spaces or commas (e.g. "1, 504, 2289").

A document's id is its line's index in the file (0-based), so every stored row can be traced
back to the line it came from. Blank lines (nothing but whitespace, or a JSONL field that is)
are no documents: they are skipped and counted. Anything else that cannot be read is refused
with one line naming the file, the line and what is wrong (CorpusError, a ValueError).
"""
import hashlib
import json
import os
import re
from dataclasses import dataclass
from typing import Iterator, List, Optional, Union

KINDS = ("text", "jsonl", "ids")


class CorpusError(ValueError):
    """A corpus that cannot be read: one line, "FILE:LINE: what is wrong"."""


@dataclass
class Document:
    doc: int                          # the line's index in the file (0-based)
    content: Union[str, List[int]]    # text (text, jsonl) or token ids (ids)


@dataclass
class CorpusSummary:
    path: str
    kind: str
    field: Optional[str]
    sha256: str          # of the file's bytes: a changed corpus is a different collection
    lines: int
    documents: int
    blank_lines: int


def kind_of(path: str, kind: str = "auto") -> str:
    """The kind asked for, or for "auto" the one the file's name says (.jsonl/.json: jsonl,
    .ids: ids, anything else: text)."""
    if kind != "auto":
        if kind not in KINDS:
            raise CorpusError("unknown corpus format %r (one of: auto, %s)" % (kind, ", ".join(KINDS)))
        return kind
    ext = os.path.splitext(path)[1].lower()
    return {".jsonl": "jsonl", ".json": "jsonl", ".ids": "ids"}.get(ext, "text")


def documents(path: str, kind: str, field: str = "text", vocab_size: Optional[int] = None) -> Iterator[Document]:
    """Every document of the corpus in file order, blank lines skipped. Raises CorpusError at
    the first line that cannot be read (the documents before it have been yielded)."""
    for index, raw in _lines(path):
        content = _parse(path, index, raw, kind, field, vocab_size)
        if content is not None:
            yield Document(index, content)


def scan(path: str, kind: str, field: str = "text", vocab_size: Optional[int] = None) -> CorpusSummary:
    """Reads the whole corpus once: its sha256, how many lines, documents and blank lines it
    has, and CorpusError at the first bad line, before anything is collected."""
    digest = hashlib.sha256()
    lines = docs = 0
    for index, raw in _lines(path, digest):
        lines += 1
        docs += _parse(path, index, raw, kind, field, vocab_size) is not None
    if docs == 0:
        raise CorpusError("%s: no documents (%d lines, all blank)" % (path, lines))
    return CorpusSummary(os.path.abspath(path), kind, field if kind == "jsonl" else None, digest.hexdigest(),
                         lines, docs, lines - docs)


def _lines(path: str, digest=None):
    """(index, the line's bytes without its end of line)."""
    try:
        f = open(path, "rb")
    except OSError as e:
        raise CorpusError("cannot read the corpus '%s': %s" % (path, e.strerror or e)) from None
    with f:
        for index, raw in enumerate(f):
            if digest is not None:
                digest.update(raw)
            yield index, raw.rstrip(b"\r\n")


def _parse(path, index, raw: bytes, kind, field, vocab_size):
    """The line's document, or None for a blank line."""
    where = "%s:%d" % (path, index + 1)
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise CorpusError("%s: invalid UTF-8 at byte %d of the line" % (where, e.start)) from None
    if not line.strip():
        return None
    if kind == "text":
        return line
    if kind == "jsonl":
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise CorpusError("%s: not JSON (%s)" % (where, e.msg)) from None
        if not isinstance(obj, dict) or field not in obj:
            raise CorpusError("%s: no field %r in this JSON line" % (where, field))
        if not isinstance(obj[field], str):
            raise CorpusError("%s: the field %r is a %s, not a string" % (where, field, type(obj[field]).__name__))
        return obj[field] if obj[field].strip() else None
    ids = []
    for word in re.split(r"[\s,]+", line.strip()):
        if not re.fullmatch(r"\d+", word):
            raise CorpusError("%s: %r is not a token id" % (where, word))
        if vocab_size is not None and int(word) >= vocab_size:
            raise CorpusError("%s: token id %s is outside the vocabulary (%d)" % (where, word, vocab_size))
        ids.append(int(word))
    return ids
