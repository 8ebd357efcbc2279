#!/usr/bin/env python3
"""check-vectors: load every golden vector with numpy and compare it with MANIFEST.json.

An independent reader for the .npy files fp8kv writes: if numpy disagrees with the C verifier
(fp8kv verify) about a file's dtype, shape or digest, one of the two readers is wrong.

Usage: check-vectors.py [VECTOR_DIR]   (default: vectors/ at the repository root)
Exit status: 0 all files ok, 1 some file is wrong, 2 numpy or the manifest is missing.
"""
import hashlib
import json
import os
import sys

# Paths in the manifest are relative to the vector directory and never leave it.
def unsafe_path(path):
    if not isinstance(path, str) or path == "":
        return "path missing or not a string"
    if path.startswith("/"):
        return "absolute path"
    if any(part in ("", ".", "..") for part in path.split("/")):
        return "empty, '.' or '..' path component"
    return None


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 16), b""):
            h.update(chunk)
    return h.hexdigest()


def check_entry(np, vec_dir, index, entry):
    """Problems with one manifest entry, as a list of strings (empty when the file is ok)."""
    if not isinstance(entry, dict):
        return ["MANIFEST.json: files[%d] is not an object" % index]
    path = entry.get("path")
    why = unsafe_path(path)
    if why is not None:
        return ["MANIFEST.json: files[%d]: %r: %s" % (index, path, why)]
    full = os.path.join(vec_dir, path)
    problems = []
    try:
        digest = sha256_of(full)
        size = os.path.getsize(full)
    except OSError as e:
        return ["%s: cannot read: %s" % (path, e.strerror or e)]
    if entry.get("bytes") != size:
        problems.append("%s: %d bytes, manifest says %r" % (path, size, entry.get("bytes")))
    if entry.get("sha256") != digest:
        problems.append("%s: sha256 %s, manifest says %r" % (path, digest, entry.get("sha256")))

    dtype = entry.get("dtype")
    if dtype is None:
        return problems
    try:
        arr = np.load(full, allow_pickle=False)
    except Exception as e:  # numpy raises ValueError, OSError, EOFError... for a bad file
        problems.append("%s: numpy.load failed: %s" % (path, e))
        return problems
    # numpy spells uint8 '|u1' (byte order is meaningless for one byte), as the manifest does.
    if arr.dtype.str != dtype:
        problems.append("%s: numpy dtype %s, manifest says %r" % (path, arr.dtype.str, dtype))
    if list(arr.shape) != entry.get("shape"):
        problems.append("%s: numpy shape %s, manifest says %r"
                        % (path, list(arr.shape), entry.get("shape")))
    if arr.ndim > 1 and not arr.flags.c_contiguous:
        problems.append("%s: stored in Fortran order (fp8kv reads C order only)" % path)
    return problems


def main(argv):
    try:
        import numpy as np
    except ImportError:
        print("check-vectors: numpy is not installed (python3 -m pip install numpy, "
              "or apt-get install python3-numpy)", file=sys.stderr)
        return 2

    if len(argv) > 2 or (len(argv) == 2 and argv[1] in ("-h", "--help")):
        print("usage: check-vectors.py [VECTOR_DIR]", file=sys.stderr)
        return 2
    if len(argv) == 2:
        vec_dir = argv[1]
    else:
        repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        vec_dir = os.path.join(repo, "vectors")
    if not os.path.isdir(vec_dir):
        print("check-vectors: %s: no such directory" % vec_dir, file=sys.stderr)
        return 2
    manifest_path = os.path.join(vec_dir, "MANIFEST.json")
    try:
        with open(manifest_path, "r", encoding="utf-8") as f:
            manifest = json.load(f)
    except OSError as e:
        print("check-vectors: %s: cannot read: %s" % (manifest_path, e.strerror or e),
              file=sys.stderr)
        return 2
    except ValueError as e:
        print("check-vectors: %s: not valid JSON: %s" % (manifest_path, e), file=sys.stderr)
        return 1

    files = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(files, list):
        print("check-vectors: %s: no 'files' list" % manifest_path)
        return 1

    problems = []
    for index, entry in enumerate(files):
        problems.extend(check_entry(np, vec_dir, index, entry))
    for p in problems:
        print("check-vectors: %s" % p)
    if problems:
        print("check-vectors: %d problem(s) in %d files" % (len(problems), len(files)))
        return 1
    print("check-vectors: %d files ok" % len(files))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
