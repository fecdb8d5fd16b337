#!/usr/bin/env bash
# Runs CI's entry point (.ci/run: make demo, then make test) on a clean clone of this checkout's
# HEAD inside a Debian 12 system that has never built Fluxion: a minimal debootstrap chroot,
# which has only what the project's own scripts install. It catches what a developer's machine
# hides: a package the install script forgets, a step that depends on an earlier build, a
# driver or CPU difference. Needs root, debootstrap (installed if missing) and Debian's mirror.
#   scripts/fresh-machine-test.sh [DIR]    DIR: where the chroot lives (default /var/tmp/fluxion-fresh)
# The chroot is made once and reused; delete DIR for a machine that is new again. The clone is
# always new. Prints the exit code and the wall time of the whole run.
set -euo pipefail
root=${1:-/var/tmp/fluxion-fresh}
repo=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)

if [[ $(id -u) -ne 0 ]]; then
  echo "fresh-machine-test.sh: run as root (debootstrap and chroot need it)" >&2
  exit 2
fi
if [[ ! -x "$root/bin/bash" ]]; then
  command -v debootstrap >/dev/null || { apt-get update -q && apt-get install -y -q debootstrap; }
  debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian
  # The same suites as an installed Debian 12: updates and security fixes too.
  cat >"$root/etc/apt/sources.list.d/debian.sources" <<'EOF'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  rm -f "$root/etc/apt/sources.list"
fi
cp /etc/resolv.conf "$root/etc/resolv.conf"
for d in proc sys dev dev/pts dev/shm; do
  mountpoint -q "$root/$d" || mount --bind "/$d" "$root/$d"
done
trap 'for d in dev/shm dev/pts dev sys proc; do umount "$root/$d" 2>/dev/null || true; done' EXIT

rm -rf "$root/root/fluxion"
git clone -q "$repo" "$root/root/fluxion"
echo "fresh-machine-test: $(git -C "$root/root/fluxion" log --oneline -1)"
start=$(date +%s)
rc=0
chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin CI=true \
  bash -c 'cd /root/fluxion && bash .ci/run </dev/null' || rc=$?
echo "fresh-machine-test: exit code $rc, $(( ($(date +%s) - start) / 60 )) min $(( ($(date +%s) - start) % 60 )) s"
exit $rc
