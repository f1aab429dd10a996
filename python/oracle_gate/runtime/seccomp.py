"""The system calls a sandboxed child may not make: a classic-BPF seccomp program.

bubblewrap loads the program (``--seccomp FD``) into the child just before it
starts the command, after the sandbox is built and with ``no_new_privs`` set;
every process the child starts inherits it and cannot remove it. A denied
call fails with ``EPERM`` (``clone3`` with ``ENOSYS``, so the C library falls
back to ``clone``, whose flags the program can read). Without capabilities
most of these fail anyway; the filter is the second wall, in case a kernel
bug or a setting elsewhere lets one through:

- mounting and unmounting (``mount``, ``umount2``, the new mount API,
  ``pivot_root``, ``chroot``): a child cannot take its ``/proc`` away to find
  the gate's, nor bind the root file system writable;
- tracing and reading other processes (``ptrace``, ``process_vm_*``,
  ``pidfd_getfd``);
- entering or making namespaces (``setns``, ``unshare``, ``clone`` with a
  ``CLONE_NEW*`` flag): no way back into the gate's network or mount namespace,
  nor a fresh user namespace with capabilities of its own;
- the kernel keyring (``keyctl``, ``add_key``, ``request_key``), BPF,
  ``perf_event_open``, ``userfaultfd``, ``io_uring`` (whose operations seccomp
  cannot see), modules, ``kexec``, ``reboot``, swap, accounting, quotas, the
  kernel log, the clock, port I/O, ``open_by_handle_at``, and typing into a
  terminal (``ioctl(TIOCSTI)``).

A call made with another architecture's numbering (32-bit ``int 0x80`` on
x86-64, the x32 ABI) is refused whole: the numbers above would mean other calls
there. The program is known for x86-64 and aarch64; elsewhere ``program()``
gives None and the children run without it (the gate says so once).
"""

from __future__ import annotations

import errno
import functools
import platform
import struct
import sys

__all__ = ["DENIED", "program"]

# The calls every child is refused, by name; their numbers per architecture below
# (the kernel's arch/x86/entry/syscalls/syscall_64.tbl and include/uapi/asm-generic/unistd.h).
DENIED = (
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "open_tree",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "pidfd_getfd",
    "setns",
    "unshare",
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "init_module",
    "finit_module",
    "delete_module",
    "kexec_load",
    "kexec_file_load",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "quotactl",
    "quotactl_fd",
    "syslog",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "open_by_handle_at",
    "lookup_dcookie",
    "nfsservctl",
    "vhangup",
    "iopl",
    "ioperm",
)
# The numbering both architectures share (the new mount API, io_uring, pidfd_getfd...).
_SHARED = {
    "open_tree": 428,
    "move_mount": 429,
    "fsopen": 430,
    "fsconfig": 431,
    "fsmount": 432,
    "fspick": 433,
    "clone3": 435,
    "pidfd_getfd": 438,
    "mount_setattr": 442,
    "quotactl_fd": 443,
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
}
_X86_64 = {
    **_SHARED,
    "ioctl": 16,
    "clone": 56,
    "ptrace": 101,
    "syslog": 103,
    "vhangup": 153,
    "pivot_root": 155,
    "chroot": 161,
    "acct": 163,
    "settimeofday": 164,
    "mount": 165,
    "umount2": 166,
    "swapon": 167,
    "swapoff": 168,
    "reboot": 169,
    "iopl": 172,
    "ioperm": 173,
    "init_module": 175,
    "delete_module": 176,
    "quotactl": 179,
    "nfsservctl": 180,
    "lookup_dcookie": 212,
    "clock_settime": 227,
    "kexec_load": 246,
    "add_key": 248,
    "request_key": 249,
    "keyctl": 250,
    "unshare": 272,
    "perf_event_open": 298,
    "open_by_handle_at": 304,
    "clock_adjtime": 305,
    "setns": 308,
    "process_vm_readv": 310,
    "process_vm_writev": 311,
    "finit_module": 313,
    "kexec_file_load": 320,
    "bpf": 321,
    "userfaultfd": 323,
}
_AARCH64 = {
    **_SHARED,
    "lookup_dcookie": 18,
    "ioctl": 29,
    "umount2": 39,
    "mount": 40,
    "pivot_root": 41,
    "nfsservctl": 42,
    "chroot": 51,
    "vhangup": 58,
    "quotactl": 60,
    "acct": 89,
    "unshare": 97,
    "kexec_load": 104,
    "init_module": 105,
    "delete_module": 106,
    "clock_settime": 112,
    "syslog": 116,
    "ptrace": 117,
    "reboot": 142,
    "settimeofday": 170,
    "add_key": 217,
    "request_key": 218,
    "keyctl": 219,
    "clone": 220,
    "swapon": 224,
    "swapoff": 225,
    "perf_event_open": 241,
    "open_by_handle_at": 265,
    "clock_adjtime": 266,
    "setns": 268,
    "process_vm_readv": 270,
    "process_vm_writev": 271,
    "finit_module": 273,
    "bpf": 280,
    "userfaultfd": 282,
    "kexec_file_load": 294,
}


# Per machine: the kernel's AUDIT_ARCH value, its numbering, and whether numbers from
# 0x40000000 up are another ABI's (x32 on x86-64).
_ARCHITECTURES = {
    "x86_64": (0xC000003E, _X86_64, True),
    "aarch64": (0xC00000B7, _AARCH64, False),
}
_X32_BIT = 0x40000000
# CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET and NEWTIME.
_CLONE_NEW = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000
_CLONE_NEW |= 0x40000000 | 0x00000080
_TIOCSTI = 0x5412
# Classic BPF opcodes (linux/filter.h) and seccomp return values (linux/seccomp.h).
_LOAD = 0x20  # BPF_LD | BPF_W | BPF_ABS: a 32-bit word of struct seccomp_data
_JEQ = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_JSET = 0x45  # BPF_JMP | BPF_JSET | BPF_K
_RETURN = 0x06  # BPF_RET | BPF_K
_ALLOW = 0x7FFF0000
_ERRNO = 0x00050000
# struct seccomp_data: int nr; u32 arch; u64 instruction_pointer; u64 args[6].
_NR, _ARCH, _ARGS = 0, 4, 16


def _arg(index: int) -> int:
    """Where the low 32 bits of argument ``index`` lie in struct seccomp_data."""
    return _ARGS + 8 * index + (0 if sys.byteorder == "little" else 4)


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    """One struct sock_filter: u16 code, u8 jump-if-true, u8 jump-if-false, u32 k."""
    return struct.pack("=HBBI", code, jt, jf, k)


def _refuse(number: int) -> bytes:
    return _op(_RETURN, _ERRNO | number)


@functools.cache
def program(machine: str | None = None) -> bytes | None:
    """The filter for ``machine`` (this one's by default), as bubblewrap reads it from
    ``--seccomp FD``: an array of struct sock_filter; None for an unknown architecture."""
    known = _ARCHITECTURES.get(machine or platform.machine())
    if known is None:
        return None
    arch, numbers, x32 = known
    code = [_op(_LOAD, _ARCH), _op(_JEQ, arch, jt=1), _refuse(errno.ENOSYS), _op(_LOAD, _NR)]
    if x32:
        code += [_op(_JGE, _X32_BIT, jf=1), _refuse(errno.ENOSYS)]
    for name in DENIED:
        if name in numbers:
            code += [_op(_JEQ, numbers[name], jf=1), _refuse(errno.EPERM)]
    code += [_op(_JEQ, numbers["clone3"], jf=1), _refuse(errno.ENOSYS)]
    # clone(flags, ...) and ioctl(fd, request, ...): allowed unless the argument says
    # otherwise; each check ends in its own return, so A never holds an argument when
    # the next number is compared.
    for number, argument, test, value in (
        (numbers["clone"], 0, _JSET, _CLONE_NEW),
        (numbers["ioctl"], 1, _JEQ, _TIOCSTI),
    ):
        code += [
            _op(_JEQ, number, jf=4),
            _op(_LOAD, _arg(argument)),
            _op(test, value, jf=1),
            _refuse(errno.EPERM),
            _op(_RETURN, _ALLOW),
        ]
    code.append(_op(_RETURN, _ALLOW))
    return b"".join(code)
