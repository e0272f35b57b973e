#!/usr/bin/env bash
# Makes the task store's Redis tests runnable (host/tasks/tasks_test.go starts
# its own redis-server on a free 127.0.0.1 port, without persistence):
# Debian's redis-server, installed with apt-get when missing and running
# as root. Nothing is started here, and the package's own service is not
# started either (policy-rc.d refuses it for the install).
# Prints one line saying what it did. Exits 0 with "SKIP: reason" when it
# cannot (no root, apt failing): the Redis tests then skip, naming this
# script.
set -uo pipefail
if command -v redis-server >/dev/null 2>&1; then
	echo "deps-redis: redis-server present ($(redis-server --version | cut -d' ' -f3))"
	exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
	echo "deps-redis: SKIP: redis-server missing and cannot apt-get install redis-server (needs root and apt-get)"
	exit 0
fi
export DEBIAN_FRONTEND=noninteractive
# Keep the package from starting a redis-server on 6379 during install.
policy=/usr/sbin/policy-rc.d
made_policy=0
if [ ! -e "$policy" ]; then
	printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod 755 "$policy" && made_policy=1
fi
apt_install() { apt-get install -y -q --no-install-recommends redis-server 2>&1; }
if ! out="$(apt_install)"; then
	if ! out="$(apt-get update -q 2>&1 && apt_install)"; then
		[ "$made_policy" = 1 ] && rm -f "$policy"
		echo "deps-redis: SKIP: apt-get install redis-server failed: $(printf '%s' "$out" | grep -m1 -E '^E:' || printf '%s' "$out" | tail -1)"
		exit 0
	fi
fi
[ "$made_policy" = 1 ] && rm -f "$policy"
echo "deps-redis: installed Debian's redis-server"
