#!/usr/bin/env python3
"""bench/gpu/host_profile.py PROFILE BINARY [TOP]: reads a host profile that minidl-bench-step wrote
under MINIDL_BENCH_SAMPLE (bench/host_sampler.h) and prints where the samples fall: by the innermost
frame (self), and by every minidl function on the stack (inclusive), each as a share of the samples.
Addresses in BINARY (an unstripped copy of the one that ran) become function names through addr2line;
addresses in shared libraries are shown as the library's name (libcuda inside a synchronising call
is host time spent waiting for the device)."""
import collections
import os
import subprocess
import sys


def load(path):
    maps, samples = [], []
    with open(path) as f:
        for line in f:
            if line.startswith("map "):
                parts = line.split()
                lo, hi = (int(v, 16) for v in parts[1].split("-"))
                offset = int(parts[3], 16)
                name = parts[6] if len(parts) > 6 else "[anon]"
                maps.append((lo, hi, offset, name))
            elif line.startswith("sample"):
                samples.append([int(v, 16) for v in line.split()[1:]])
    return maps, samples


def without_params(fn):
    """A demangled name without its parameter list (the last balanced parentheses)."""
    fn = fn.strip()
    if fn.endswith(" const"):
        fn = fn[:-6]
    if not fn.endswith(")"):
        return fn
    depth = 0
    for i in range(len(fn) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(fn[i], 0)
        if depth == 0:
            return fn[:i]
    return fn


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit("usage: host_profile.py PROFILE BINARY [TOP]")
    maps, samples = load(sys.argv[1])
    binary = sys.argv[2]
    top = int(sys.argv[3]) if len(sys.argv) == 4 else 25
    # The executable holds frame 0 of every sample, the signal handler (its name there is the one
    # that ran, not BINARY's).
    exe = os.path.basename(binary)
    if samples:
        exe = next((os.path.basename(name) for lo, hi, _, name in maps if lo <= samples[0][0] < hi), exe)

    def where(addr):
        for lo, hi, off, name in maps:
            if lo <= addr < hi:
                return name, addr - lo + off
        return "[unknown]", addr

    # Frames 0-2 are the signal handler and the signal trampoline: skip them.
    located = [[where(a) for a in s[2:]] for s in samples]
    ours = sorted({off for st in located for name, off in st if os.path.basename(name) == exe})
    names = {}
    if ours:
        # Return addresses point after the call: look up the byte before.
        out = subprocess.run(["addr2line", "-f", "-C", "-e", binary] + [hex(max(o - 1, 0)) for o in ours],
                             capture_output=True, text=True, check=True).stdout.splitlines()
        for i, off in enumerate(ours):
            fn = out[2 * i] if 2 * i < len(out) else "??"
            names[off] = without_params(fn)[:110]

    def label(frame):
        name, off = frame
        if os.path.basename(name) == exe:
            return names.get(off, "??")
        return os.path.basename(name)

    n = len(located)
    print(f"{n} samples (1 per ms of process CPU time)")
    self_count = collections.Counter(label(st[0]) for st in located if st)
    print("\nself (innermost frame):")
    for k, v in self_count.most_common(top):
        print(f"  {100 * v / n:5.1f}%  {k}")
    incl = collections.Counter()
    for st in located:
        incl.update({label(f) for f in st if os.path.basename(f[0]) == exe})
    print("\ninclusive (minidl functions on the stack):")
    for k, v in incl.most_common(top):
        print(f"  {100 * v / n:5.1f}%  {k}")
    # The first minidl function above the innermost library frames: who calls into the libraries.
    callers = collections.Counter()
    for st in located:
        lib = next((f for f in st if os.path.basename(f[0]) != exe), None)
        if lib is None or os.path.basename(st[0][0]) == exe:
            continue
        caller = next((f for f in st if os.path.basename(f[0]) == exe), None)
        callers[(os.path.basename(st[0][0]), label(caller) if caller else "?")] += 1
    print("\nlibrary time by its minidl caller:")
    for (lib, caller), v in callers.most_common(top):
        print(f"  {100 * v / n:5.1f}%  {lib} <- {caller}")


if __name__ == "__main__":
    main()
