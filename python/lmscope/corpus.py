"""The documents of a corpus, for lmscope.collect (docs/collect.md, "Options": --format). The rules of a
line are the engine's one corpus reader (lib/tokenizer/corpus.h, lmscope._core.corpus_document),
which lmscope-score --data reads with too; this file streams the lines, hashes the file and
counts.

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
import os
from dataclasses import dataclass
from typing import Iterator, List, Optional, Tuple, Union

from ._core import corpus_document as _corpus_document

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


def document_lines(path: str, kind: str, field: str = "text") -> Iterator[Tuple[int, bytes]]:
    """(line index, the line's bytes) of every document, blank lines skipped: a part of the
    corpus can be written out as a corpus of its own (the sweeps' shards, sweep.py)."""
    for index, raw in _lines(path):
        if _parse(path, index, raw, kind, field, None) is not None:
            yield index, raw


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
    """The line's document, or None for a blank line: the rules are the engine's one corpus
    reader (lib/tokenizer/corpus.h), which lmscope-score --data reads with too."""
    try:
        return _corpus_document(raw, kind, field, -1 if vocab_size is None else vocab_size)
    except ValueError as e:
        raise CorpusError("%s:%d: %s" % (path, index + 1, e)) from None
