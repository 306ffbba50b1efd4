"""What keeps a node's container from reaching the host: options of every node's container.

A node of an FRR kind holds CAP_SYS_ADMIN: FRR's zebra and bgpd enter the tenants' network
namespaces (setns) on the namespace VRF backend. With Docker's default seccomp profile that
capability also allows mount(2), unshare(2) and clone(2) with any namespace flag, and on a
cgroup v1 host without AppArmor (this one) that is the cgroup `release_agent` escape: mount a
cgroup hierarchy, name a release agent, and the host's kernel runs it as root on the host.

So every node runs with:

- its own cgroup namespace (`cgroupns=private`): its /sys/fs/cgroup is its own cgroup, read-only;
- `SECCOMP`: Docker's default refusals kept (kernel modules, kexec, reboot, keyrings, bpf,
  perf, ptrace, open_by_handle_at...), and, whatever its capabilities, no mount of any kind (the
  old and the new mount API), no pivot_root, no unshare and no clone into a new mount, user or
  cgroup namespace; setns stays (FRR's VRFs);
- no CAP_MKNOD (no device node made in it) nor CAP_SETFCAP, beside what its kind adds (`Kind.capabilities`).

twin's own setup of a node (tenant namespaces, kernel steps) runs from the host through
`twin.runtime.exec` (nsenter, outside the container's seccomp profile): it is unchanged. What
a user submits runs inside the container (`NodeExec.inside`), under all of the above.
"""

from __future__ import annotations

import json
from typing import Any

EPERM = 1
ENOSYS = 38
# clone(2) flags of the namespaces a node must not make for itself
CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUSER = 0x00020000, 0x02000000, 0x10000000
DENIED = (
    # mounts, old and new API: a cgroup or proc hierarchy of its own, the host's disk
    "mount",
    "umount",
    "umount2",
    "pivot_root",
    "chroot_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "move_mount",
    "open_tree",
    "mount_setattr",
    # new namespaces (a user namespace would bring every capability back), unshare(2) of any kind
    "unshare",
    # Docker's default refusals: the kernel itself, its keys, its clock, other processes' memory
    "acct",
    "add_key",
    "bpf",
    "clock_adjtime",
    "clock_settime",
    "create_module",
    "delete_module",
    "finit_module",
    "get_kernel_syms",
    "init_module",
    "ioperm",
    "iopl",
    "kcmp",
    "kexec_file_load",
    "kexec_load",
    "keyctl",
    "lookup_dcookie",
    "name_to_handle_at",
    "nfsservctl",
    "open_by_handle_at",
    "perf_event_open",
    "process_vm_readv",
    "process_vm_writev",
    "ptrace",
    "query_module",
    "quotactl",
    "quotactl_fd",
    "reboot",
    "request_key",
    "settimeofday",
    "stime",
    "swapoff",
    "swapon",
    "sysfs",
    "_sysctl",
    "uselib",
    "userfaultfd",
    "ustat",
    "vm86",
    "vm86old",
    "syslog",
)


def seccomp_profile() -> dict[str, Any]:
    """The nodes' seccomp profile (Docker's format): everything allowed but `DENIED`, and clone(2)
    into a new mount, cgroup or user namespace (clone3, whose flags seccomp cannot read, answers
    ENOSYS: the C library falls back to clone)."""
    rules: list[dict[str, Any]] = [
        {"names": list(DENIED), "action": "SCMP_ACT_ERRNO", "errnoRet": EPERM},
        {"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": ENOSYS},
    ]
    rules += [
        {
            "names": ["clone"],
            "action": "SCMP_ACT_ERRNO",
            "errnoRet": EPERM,
            "args": [{"index": 0, "value": flag, "valueTwo": flag, "op": "SCMP_CMP_MASKED_EQ"}],
        }
        for flag in (CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUSER)
    ]
    return {
        "defaultAction": "SCMP_ACT_ALLOW",
        "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32", "SCMP_ARCH_AARCH64", "SCMP_ARCH_ARM"],
        "syscalls": rules,
    }


SECCOMP = json.dumps(seccomp_profile(), separators=(",", ":"))
DROPPED = ("MKNOD", "SETFCAP")


def container_options(capabilities: tuple[str, ...]) -> dict[str, Any]:
    """The Docker SDK's create options that hold a node in: its kind's `capabilities` added, the
    rest as the module says."""
    return {
        "cap_add": list(capabilities),
        "cap_drop": [c for c in DROPPED if c not in capabilities],
        "cgroupns": "private",
        "security_opt": [f"seccomp={SECCOMP}"],
    }
