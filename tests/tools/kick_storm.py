#!/usr/bin/env python3
"""Kicks a VMM's vCPU thread as a harvest does (SIGUSR1, thread-directed), thousands of times a second.

kick_storm.py ARG [PERIOD_US]: waits (up to 60 s) for the hvmtrace-vmm or QEMU process whose command line
holds ARG (the test's socket path), then sends SIGUSR1 to the thread that runs its vCPU every PERIOD_US
(default 200) until the process ends, and prints how many kicks it sent. A kick that lands while the vCPU
thread resets the dirty ring is the case tests/vmm/dirtyring.c guards against (and hvmtrace's QEMU patch
0008). hvmtrace-vmm runs its vCPU on its main thread; QEMU's vCPU thread is the one named "CPU 0/KVM"
(QEMU needs -name ...,debug-threads=on), and SIGUSR1 is its SIG_IPI.
"""
import ctypes
import os
import signal
import sys
import time

SYS_TGKILL = 234  # x86-64


def find(arg):
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            if not any(arg.encode() in a for a in argv):
                continue
            if argv[0].endswith(b"hvmtrace-vmm"):
                return int(pid), int(pid)
            if argv[0].endswith(b"qemu-system-x86_64"):
                tid = vcpu_thread(pid)
                if tid:
                    return int(pid), tid
        time.sleep(0.02)
    sys.exit(f"kick_storm.py: no hvmtrace-vmm or QEMU (with its vCPU thread) with {arg} on its command line within 60 s")


def vcpu_thread(pid):
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                if f.read().strip() == "CPU 0/KVM":
                    return int(tid)
    except OSError:
        pass
    return None


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: kick_storm.py ARG [PERIOD_US]")
    period = (int(sys.argv[2]) if len(sys.argv) == 3 else 200) / 1e6
    pid, tid = find(sys.argv[1])
    libc = ctypes.CDLL(None, use_errno=True)
    sent = 0
    while libc.syscall(SYS_TGKILL, pid, tid, signal.SIGUSR1) == 0:
        sent += 1
        time.sleep(period)
    print(f"kick_storm.py: {sent} kicks sent to {pid}" + (f" (thread {tid})" if tid != pid else ""))


main()
