"""A seccomp filter for the bash sandbox, compiled with libseccomp (through ctypes) once per process.

The filter allows everything except system calls a shell never needs and that widen the kernel's
attack surface or reach outside the sandbox: debugging other processes, kernel keyrings, BPF,
perf, userfaultfd, io_uring, mounts and namespaces, modules, kexec, reboot, swap and `personality`.
They fail with EPERM. libseccomp2 is part of every Debian install; without it the sandbox runs
without this layer (the other layers still hold) and `seccomp_filter()` returns None.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import logging
import os
import threading

log = logging.getLogger("think.sandbox")

DENIED_SYSCALLS = (
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
    "keyctl", "add_key", "request_key",
    "bpf", "perf_event_open", "userfaultfd",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    "mount", "umount2", "pivot_root", "move_mount", "open_tree", "fsopen", "fsmount", "fsconfig", "fspick",
    "mount_setattr", "unshare", "setns",
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
    "reboot", "swapon", "swapoff", "acct", "quotactl", "personality", "syslog",
    "lookup_dcookie", "open_by_handle_at", "name_to_handle_at",
)
_SCMP_ACT_ALLOW = 0x7FFF0000
_SCMP_ACT_ERRNO = 0x00050000

_lock = threading.Lock()
_cached: bytes | None = None
_tried = False


def _compile() -> bytes | None:
    name = ctypes.util.find_library("seccomp") or "libseccomp.so.2"
    try:
        lib = ctypes.CDLL(name, use_errno=True)
    except OSError:
        log.warning("libseccomp is not installed: the bash sandbox runs without a seccomp filter")
        return None
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint]
    lib.seccomp_export_bpf.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    ctx = lib.seccomp_init(_SCMP_ACT_ALLOW)
    if not ctx:
        return None
    fd = os.memfd_create("think-seccomp", 0)
    try:
        for syscall in DENIED_SYSCALLS:
            number = lib.seccomp_syscall_resolve_name(syscall.encode())
            if number < 0:  # not on this architecture
                continue
            if lib.seccomp_rule_add(ctx, _SCMP_ACT_ERRNO | errno.EPERM, number, 0) < 0:
                log.warning("could not add a seccomp rule for %s", syscall)
        if lib.seccomp_export_bpf(ctx, fd) < 0:
            return None
        os.lseek(fd, 0, os.SEEK_SET)
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)
        lib.seccomp_release(ctx)


def seccomp_filter() -> bytes | None:
    """The compiled BPF program (for `bwrap --seccomp FD`), or None without libseccomp."""
    global _cached, _tried
    with _lock:
        if not _tried:
            _cached, _tried = _compile(), True
        return _cached
