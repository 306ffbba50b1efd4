#!/usr/bin/env bash
# Prepare a Debian/Ubuntu host for twin, as root: install the Docker engine,
# debootstrap and python3-venv when missing, and start dockerd when it is not
# running (systemd if it runs the machine, else dockerd in the background).
# Idempotent: does nothing on a host that is ready.
set -euo pipefail

need=()
command -v dockerd >/dev/null 2>&1 || need+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
command -v nsenter >/dev/null 2>&1 || need+=(util-linux)
python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || need+=(python3-venv)
# the browser test of `twin web` (tests/e2e/test_observe.py): Debian's chromium, headless, and its driver
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v chromedriver >/dev/null 2>&1 || need+=(chromium-driver)

if ((${#need[@]})); then
    if [ "$(id -u)" != 0 ]; then
        echo "twin needs: ${need[*]}; run 'make twin-up' as root or install them with apt-get" >&2
        exit 1
    fi
    echo "installing ${need[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

if ! docker info >/dev/null 2>&1; then
    if [ "$(ps -o comm= -p 1)" = systemd ] && systemctl start docker 2>/dev/null; then
        echo "started docker.service"
    else
        echo "starting dockerd (log: /var/log/twin-dockerd.log)"
        # a session of its own, as a service manager would start it: not the terminal's (its
        # Ctrl-C and hang-up), nor weighed with it where the kernel groups sessions (autogroup)
        setsid -f dockerd >/var/log/twin-dockerd.log 2>&1 </dev/null
    fi
    deadline=$((SECONDS + 60))
    until docker info >/dev/null 2>&1; do
        if ((SECONDS > deadline)); then
            echo "dockerd did not answer within 60s; see /var/log/twin-dockerd.log" >&2
            tail -20 /var/log/twin-dockerd.log >&2 || true
            exit 1
        fi
        sleep 0.2
    done
fi

# Host-wide kernel limits (issue 19): every network namespace on the host shares them, so
# every lab's nodes and links add up. Written persistently to /etc/sysctl.d/60-twin.conf, then
# applied. A value the host already has higher is kept (never lowered). twin up checks them
# (twin/hostlimits.py) and refuses a lab that would not fit, with the numbers.
# Sized for a 128-node fabric (8x120: ~9,600 IPv6 and ~1,900 IPv4 neighbours) and a couple
# of labs beside it; a neighbour entry costs the kernel about half a KiB.
sysctl_file=/etc/sysctl.d/60-twin.conf
limits=(
    "net.ipv6.neigh.default.gc_thresh3|65536|IPv6 neighbours beyond this are never created (\"neighbor table overflow\"): every BGP-unnumbered link holds ~10 (two link-locals, multicast groups), and tenant namespaces ~3 per device"
    "net.ipv6.neigh.default.gc_thresh2|32768|above this the kernel flushes IPv6 neighbours not confirmed for 5 s, every 5 s: twin up needs the labs below it"
    "net.ipv6.neigh.default.gc_thresh1|16384|below this no IPv6 neighbour is collected"
    "net.ipv4.neigh.default.gc_thresh3|32768|IPv4 neighbours beyond this are never created: tenant hosts' ARP, IGMP groups (zebra's 169.254.0.1 per link and the VTEPs' bindings are permanent, not capped)"
    "net.ipv4.neigh.default.gc_thresh2|16384|above this the kernel flushes IPv4 neighbours not confirmed for 5 s, every 5 s"
    "net.ipv4.neigh.default.gc_thresh1|8192|above this (permanent entries count) the kernel collects entries idle for 60 s, every few seconds"
    "fs.inotify.max_user_instances|1024|zebra on a VTEP with namespace VRFs holds one (default 128: 128 VTEPs on the host)"
    "kernel.pid_max|4194304|every process and thread takes a pid: ~30 per FRR node with its containerd shim"
)
want="# Written by twin's host set-up, twin/lifecycle/host-setup.sh (make host / make twin-up): host-wide kernel limits
# that every lab's network namespaces share. See twin's README, \"Host settings\". Never lowers
# a value the host already had higher."
for entry in "${limits[@]}"; do
    IFS='|' read -r key value why <<<"$entry"
    current=$(sysctl -n "$key" 2>/dev/null || echo 0)
    ((current > value)) && value=$current
    want+=$'\n'"# $why"$'\n'"$key = $value"
done
if [ "$(cat "$sysctl_file" 2>/dev/null)" != "$want" ]; then
    if [ "$(id -u)" != 0 ]; then
        echo "twin: host limits not raised ($sysctl_file); run 'make host' as root, or twin up refuses big labs" >&2
    elif printf '%s\n' "$want" >"$sysctl_file" && sysctl -q -p "$sysctl_file" >/dev/null; then
        echo "raised host-wide kernel limits in $sysctl_file"
    else
        echo "twin: could not apply $sysctl_file (read-only /proc/sys?); twin up refuses labs that do not fit" >&2
    fi
fi
