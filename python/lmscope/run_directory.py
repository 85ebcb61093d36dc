"""The output directory of a run that is done shard by shard and resumed by the same command:
a collection (collection.py, manifest collection.json) and a sweep over a dataset (sweep.py,
manifest sweep.json). docs/collect.md, "What it promises" and "Resumable sweeps".

Its rules, in one place for both:
  * a path that holds files but not this kind's manifest is refused and never touched;
  * one run at a time: a second one into the same directory is refused at once (flock on a
    lock file, which the kernel drops when the holder dies, even by SIGKILL);
  * a manifest made with another model, input or option is refused in one line naming the
    first difference;
  * the temporaries a killed writer left are removed (the atomic writer's own names).
"""
import fcntl
import hashlib
import os

from . import shards


class RunDirectory:
    """What a kind of run calls its directory: `what` ("collection", "sweep"), its manifest's
    and lock file's names."""

    def __init__(self, what: str, manifest: str, lock: str):
        self.what, self.manifest, self.lock = what, manifest, lock

    def refuse_foreign(self, out: str) -> None:
        """A path that is not a directory, or a directory with files but no manifest of this
        kind, is refused (never touched)."""
        if os.path.lexists(out) and not os.path.isdir(out):
            raise ValueError("'%s' is not a directory" % out)
        if os.path.isdir(out):
            entries = set(os.listdir(out)) - {self.lock}
            if entries and self.manifest not in entries:
                raise ValueError("'%s' holds files and no %s: not a %s (give a new or empty directory)"
                                 % (out, self.manifest, self.what))

    def locked(self, out: str) -> "DirectoryLock":
        return DirectoryLock(os.path.join(out, self.lock), self.what)

    def check_same(self, out: str, manifest: dict, identity: dict, asked: str) -> None:
        """Each key of each section of `identity` equal in `manifest`, or one line naming the
        first that differs. `asked`: what to give again to resume ("model, corpus and options")."""
        for section, values in identity.items():
            for key, want in values.items():
                had = manifest.get(section, {}).get(key)
                if had != want:
                    raise ValueError("'%s' holds a %s made with %s.%s = %s; this one asks %s "
                                     "(give the same %s to resume, or another directory)"
                                     % (out, self.what, section, key, _short(had), _short(want), asked))


class DirectoryLock:
    """flock on the lock file for the whole run: a second run into the same directory at the
    same time is refused at once, naming the holder's pid."""

    def __init__(self, path: str, what: str):
        self.path, self.what = path, what

    def __enter__(self):
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(self.fd, 32).decode(errors="replace").strip() or "?"
            os.close(self.fd)
            raise ValueError("'%s' is being written by another %s (pid %s)"
                             % (os.path.dirname(self.path), self.what, holder)) from None
        os.ftruncate(self.fd, 0)
        os.write(self.fd, b"%d\n" % os.getpid())
        return self

    def __exit__(self, *exc):
        os.close(self.fd)     # releases the lock; the file stays (an empty lock is harmless)


def remove_partials(out: str, prefixes) -> None:
    """The temporaries a killed writer left (io/text_file.h names them <file>.partial.<pid>.<n>)
    of the files whose names start with one of `prefixes`."""
    for name in os.listdir(out):
        if ".partial." in name and name.startswith(tuple(prefixes)):
            os.remove(os.path.join(out, name))


def model_sha256(path: str) -> str:
    """sha256 of a .gguf file; for a directory, of its files' names and sha256s."""
    if os.path.isfile(path):
        return shards.file_sha256(path)
    digest = hashlib.sha256()
    for root, _, files in sorted(os.walk(path)):
        for name in sorted(files):
            full = os.path.join(root, name)
            digest.update(("%s %s\n" % (os.path.relpath(full, path), shards.file_sha256(full))).encode())
    return digest.hexdigest()


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
