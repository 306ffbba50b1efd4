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
        nohup dockerd >/var/log/twin-dockerd.log 2>&1 &
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
