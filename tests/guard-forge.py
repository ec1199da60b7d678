#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""guard-forge.py: the bot's side of tests/guard-index.sh and guard-strategy.sh.

  index OUT VERSION MODE:SHA:PATH...   write a git index (v2, v3 or v4) to OUT
  index-reuc OUT PATH [MODE:]SHA MODE:SHA:PATH...
                                       a v2 index with a resolve-undo record:
                                       PATH was a conflict, SHA (mode MODE,
                                       100755 if not given) on both sides
  index-tree OUT DIR TREE COUNT MODE:SHA:PATH...
                                       a v2 index whose cache-tree (TREE
                                       extension) marks the root invalid and
                                       the top folder DIR valid: COUNT entries,
                                       tree object TREE
  split-twolinks OUT SHARED BLOB MODE FIRST LAST
                                       a split index of one replacement (BLOB,
                                       MODE) naming the shared index SHARED in
                                       two link extensions: the first replaces
                                       shared entry FIRST, the last (which git
                                       keeps) entry LAST
  split-twotrees IN OUT ROOT DIR COUNT TREE TOTAL
                                       copy the split index IN to OUT with two
                                       TREE extensions, an empty one, then one
                                       (which git keeps) marking the root
                                       (TOTAL entries, tree ROOT) and DIR
                                       (COUNT entries, tree TREE) valid
  repoint IN PATH SHA OUT              copy the index IN (v2 or v3) to OUT with
                                       PATH's object name made SHA, its stat
                                       data kept (git takes the file for
                                       unchanged and never reads it)
  plant-rename SRC DST FILE            copy FILE to SRC, close, rename SRC onto DST
  plant-write DST FILE                 open DST for writing in place, write FILE
  plant-new DST FILE                   create or truncate DST, write FILE
  plant-append DST TEXT                append TEXT to DST
  plant-trunc DST SIZE                 truncate DST to SIZE
  plant-create DST                     create DST (O_CREAT|O_EXCL)
  plant-link SRC DST                   hard-link SRC to DST
  plant-symlink TARGET DST             make DST a symlink to TARGET
  symlink-rename TARGET SRC DST        make SRC a symlink to TARGET, rename it onto DST
  hold-rename SRC DST FILE             write FILE to SRC, keep it open, rename
  two-names SRC DST FILE               write FILE to SRC, add a hard link, rename

Each plant-* prints "ok" or the errno name of the first failure and exits 0.
"""
import errno
import hashlib
import os
import struct
import sys
import time


def varint(n):
    out = [n & 127]
    n >>= 7
    while n:
        n -= 1
        out.append(128 | (n & 127))
        n >>= 7
    return bytes(reversed(out))


def index(version, entries, ext=b""):
    entries = sorted(entries, key=lambda e: e[2].encode())
    body = bytearray(b"DIRC" + struct.pack(">II", version, len(entries)))
    prev = b""
    for mode, sha, path in entries:
        name = path.encode()
        ent = struct.pack(">10I", 0, 0, 0, 0, 0, 0, mode, 0, 0, 0) + bytes.fromhex(sha)
        ent += struct.pack(">H", min(len(name), 0xFFF))
        if version == 4:
            common = 0
            while common < min(len(prev), len(name)) and prev[common] == name[common]:
                common += 1
            ent += varint(len(prev) - common) + name[common:] + b"\0"
            prev = name
        else:
            ent += name
            ent += b"\0" * (8 - (len(ent) % 8))
        body += ent
    body += ext
    algo = hashlib.sha256 if entries and len(entries[0][1]) == 64 else hashlib.sha1
    return bytes(body) + algo(body).digest()


def result(fn):
    try:
        fn()
        print("ok")
    except OSError as e:
        print(errno.errorcode.get(e.errno, str(e.errno)))


def write_file(path, data, mode="wb"):
    with open(path, mode) as f:
        f.write(data)


def repoint(src, path, sha):
    b = bytearray(open(src, "rb").read())
    sig, ver, n = struct.unpack(">4sII", b[:12])
    if sig != b"DIRC" or ver not in (2, 3):
        sys.exit("repoint: not an index of version 2 or 3")
    off = 12
    for _ in range(n):
        flags = struct.unpack(">H", b[off + 60:off + 62])[0]
        ext = 2 if (ver >= 3 and flags & 0x4000) else 0
        start = off + 62 + ext
        name = bytes(b[start:b.index(b"\0", start)])
        if name == path.encode():
            b[off + 40:off + 60] = bytes.fromhex(sha)
        off += (62 + ext + len(name) + 8) & ~7
    body = bytes(b[:-20])
    return body + hashlib.sha1(body).digest()


def ewah1(bits):
    """An EWAH bitmap (ewah_io.c) of at most one set bit, below 64"""
    if not bits:
        return struct.pack(">II", 0, 1) + struct.pack(">Q", 0) + struct.pack(">I", 0)
    (p,) = bits
    return struct.pack(">II", p + 1, 2) + struct.pack(">QQ", 1 << 33, 1 << p) + struct.pack(">I", 0)


def twolinks(shared, blob, mode, first, last):
    def link(pos):
        body = bytes.fromhex(shared) + ewah1([]) + ewah1([pos])
        return b"link" + struct.pack(">I", len(body)) + body
    ent = struct.pack(">10I", 0, 0, 0, 0, 0, 0, mode, 0, 0, 0) + bytes.fromhex(blob)
    ent += struct.pack(">H", 0)
    ent += b"\0" * (64 - len(ent))
    body = b"DIRC" + struct.pack(">II", 2, 1) + ent + link(first) + link(last)
    return body + hashlib.sha1(body).digest()


def twotrees(src, root, sub, count, subtree, total):
    d = open(src, "rb").read()[:-20]
    _, _, n = struct.unpack(">4sII", d[:12])
    off = 12
    for _ in range(n):
        nl = struct.unpack(">H", d[off + 60:off + 62])[0] & 0xFFF
        off += (62 + nl + 8) & ~7
    head, exts = d[:off], b""
    while off + 8 <= len(d):
        sig, sz = struct.unpack(">4sI", d[off:off + 8])
        if sig != b"TREE":
            exts += d[off:off + 8 + sz]
        off += 8 + sz
    tree = (b"\0" + b"%d 1\n" % int(total) + bytes.fromhex(root) + sub.encode() + b"\0" +
            b"%d 0\n" % int(count) + bytes.fromhex(subtree))
    body = head + exts + b"TREE" + struct.pack(">I", 0) + b"TREE" + struct.pack(">I", len(tree)) + tree
    return body + hashlib.sha1(body).digest()


def main(argv):
    cmd = argv[1]
    if cmd == "repoint":
        write_file(argv[5], repoint(argv[2], argv[3], argv[4]))
    elif cmd == "index":
        ents = []
        for spec in argv[4:]:
            mode, sha, path = spec.split(":", 2)
            ents.append((int(mode, 8), sha, path))
        write_file(argv[2], index(int(argv[3]), ents))
    elif cmd == "index-reuc":
        ents = []
        for spec in argv[5:]:
            mode, sha, path = spec.split(":", 2)
            ents.append((int(mode, 8), sha, path))
        mode, _, sha = argv[4].rpartition(":")
        reuc = (argv[3].encode() + b"\x00" + b"0\x00" + ((mode or "100755") + "\0").encode() * 2 +
                bytes.fromhex(sha) * 2)
        write_file(argv[2], index(2, ents, b"REUC" + struct.pack(">I", len(reuc)) + reuc))
    elif cmd == "index-tree":
        ents = []
        for spec in argv[6:]:
            mode, sha, path = spec.split(":", 2)
            ents.append((int(mode, 8), sha, path))
        tree = b"\0-1 1\n" + argv[3].encode() + b"\0" + argv[5].encode() + b" 0\n"
        tree += bytes.fromhex(argv[4])
        write_file(argv[2], index(2, ents, b"TREE" + struct.pack(">I", len(tree)) + tree))
    elif cmd == "split-twolinks":
        write_file(argv[2], twolinks(argv[3], argv[4], int(argv[5], 8), int(argv[6]), int(argv[7])))
    elif cmd == "split-twotrees":
        write_file(argv[3], twotrees(argv[2], argv[4], argv[5], argv[6], argv[7], argv[8]))
    elif cmd == "plant-rename":
        data = open(argv[4], "rb").read()
        result(lambda: (write_file(argv[2], data), os.rename(argv[2], argv[3])))
    elif cmd == "plant-write":
        data = open(argv[3], "rb").read()
        result(lambda: write_file(argv[2], data, "r+b"))
    elif cmd == "plant-new":
        data = open(argv[3], "rb").read()
        result(lambda: write_file(argv[2], data))
    elif cmd == "plant-append":
        result(lambda: write_file(argv[2], argv[3].encode(), "ab"))
    elif cmd == "plant-trunc":
        result(lambda: os.truncate(argv[2], int(argv[3])))
    elif cmd == "plant-create":
        result(lambda: os.close(os.open(argv[2], os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)))
    elif cmd == "plant-link":
        result(lambda: os.link(argv[2], argv[3]))
    elif cmd == "plant-symlink":
        result(lambda: os.symlink(argv[2], argv[3]))
    elif cmd == "hold-rename":
        data = open(argv[4], "rb").read()
        f = open(argv[2], "wb")
        f.write(data)
        f.flush()
        t = time.monotonic()
        result(lambda: os.rename(argv[2], argv[3]))
        print("%.2f" % (time.monotonic() - t))
        f.close()
    elif cmd == "symlink-rename":
        result(lambda: (os.symlink(argv[2], argv[3]), os.rename(argv[3], argv[4])))
    elif cmd == "two-names":
        data = open(argv[4], "rb").read()
        write_file(argv[2], data)
        os.link(argv[2], argv[2] + ".second")
        result(lambda: os.rename(argv[2], argv[3]))
    else:
        sys.exit("guard-forge.py: unknown command " + cmd)


if __name__ == "__main__":
    main(sys.argv)
