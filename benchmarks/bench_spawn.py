"""System time of starting a child from a large process: with a ``preexec_fn`` (Python then ``fork()``s the
whole parent) against ``vfork`` with the address-space ceiling set afterwards by ``prlimit``, as
partsim.runtime.process does since issue 32 (benchmarks/README.md, "Test suite time (issue 32)").

    python benchmarks/bench_spawn.py [--parent-mb 500] [--children 20]

The parent writes one byte of each of its pages between children, as a pytest worker or a partsim command
holding a large model goes on working: after a ``fork()`` each such write faults once more.
"""

import argparse
import resource
import subprocess
import sys
import time

CAP = 32 << 30


def _child_cmd():
    return [sys.executable, "-S", "-c", "import resource; print(resource.getrlimit(resource.RLIMIT_AS)[0])"]


def _own_times():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime, r.ru_stime


def run(way, memory, children):
    user0, sys0 = _own_times()
    start = time.perf_counter()
    limit = None
    for _ in range(children):
        pre = (lambda: resource.setrlimit(resource.RLIMIT_AS, (CAP, resource.RLIM_INFINITY))) if way == "preexec" else None
        proc = subprocess.Popen(_child_cmd(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, start_new_session=True, preexec_fn=pre)
        if way == "prlimit":
            resource.prlimit(proc.pid, resource.RLIMIT_AS, (CAP, resource.RLIM_INFINITY))
        limit = int(proc.communicate()[0])
        for i in range(0, len(memory), 4096):
            memory[i] = (memory[i] + 1) & 0xFF
    user1, sys1 = _own_times()
    return time.perf_counter() - start, user1 - user0, sys1 - sys0, limit


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parent-mb", type=int, default=500)
    ap.add_argument("--children", type=int, default=20)
    args = ap.parse_args()
    memory = bytearray(args.parent_mb << 20)
    for i in range(0, len(memory), 4096):
        memory[i] = 1
    for way in ("preexec", "prlimit"):
        wall, user, system, limit = run(way, memory, args.children)
        assert limit == CAP, (way, limit)  # the child runs under the ceiling either way
        print(f"{way:8} parent {args.parent_mb} MB, {args.children} children: wall {wall:.2f} s, parent user "
              f"{user:.2f} s, system {system:.2f} s ({system / args.children * 1000:.1f} ms per child)")


if __name__ == "__main__":
    main()
