#!/usr/bin/env bash
#! QEMU 10.0 for the Linux 6.1 twin's det boots (docs/linux-twin.md, "Linux 6.1 on QEMU 10.0"):
#! Debian 13's qemu-system-x86 installed in the Linux 7 twin's build root, run from there.
#   linux/qemu10.sh setup        install it (needs root and linux/linux7.sh setup done; idempotent)
#   linux/qemu10.sh version      the installed version (`qemu-system-x86=VERSION`), exit 1 if none
#   linux/qemu10.sh ARGS...      run that qemu-system-x86_64 with ARGS (any user)
# Why: Linux 6.1 never brings up its second CPU under QEMU 7.2's -icount round robin; QEMU 10.0
# does. numalab's own boots stay on the host's QEMU 7.2.
# How it runs outside the chroot: Debian 13's dynamic loader (copied next to the binary as
# usr/bin/ld-numalab.so, so that QEMU's executable folder is the root's usr/bin) loads the
# root's libraries, and usr/bin/qemu-bundle -> ../.. makes QEMU's own relocation
# (get_relocated_path: EXEC_DIR/qemu-bundle/PATH) find its firmware and modules in the root,
# never the host's QEMU 7.2 modules.
# Exit status: 0 done; 1 a step failed or not installed (its message says which); 2 bad command line.
set -euo pipefail
cache="${XDG_CACHE_HOME:-$HOME/.cache}/numalab/linux7"
root="$cache/root"

say() { echo "qemu10: $*" >&2; }
die() {
    say "$*"
    exit 1
}

installed() {
    [ -x "$root/usr/bin/qemu-system-x86_64" ] && [ -x "$root/usr/bin/ld-numalab.so" ] &&
        [ -L "$root/usr/bin/qemu-bundle" ] && [ -s "$cache/qemu10.version" ]
}

setup() {
    [ "$(id -u)" = 0 ] || die "linux/qemu10.sh setup needs root (chroot); run it as root"
    [ -x "$root/usr/bin/apt-get" ] || die "no Linux 7 build root in $root (linux/linux7.sh setup first)"
    if installed; then
        say "$(cat "$cache/qemu10.version") ready in $root"
        return 0
    fi
    say "installing Debian 13's qemu-system-x86 into $root (Linux 6.1's det boots; about 60 MiB)"
    chroot "$root" apt-get update -qq >"$cache/qemu10-apt.log" 2>&1 ||
        die "apt-get update in the build root failed, see $cache/qemu10-apt.log"
    chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        qemu-system-x86 >>"$cache/qemu10-apt.log" 2>&1 ||
        die "apt-get install qemu-system-x86 in the build root failed, see $cache/qemu10-apt.log"
    cp "$root/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" "$root/usr/bin/ld-numalab.so.new"
    mv "$root/usr/bin/ld-numalab.so.new" "$root/usr/bin/ld-numalab.so"
    ln -sfn ../.. "$root/usr/bin/qemu-bundle"
    chroot "$root" dpkg-query -W -f='${Package}=${Version}\n' qemu-system-x86 >"$cache/qemu10.version.new"
    mv "$cache/qemu10.version.new" "$cache/qemu10.version"
    say "$(cat "$cache/qemu10.version") installed: $("$0" --version | head -n 1)"
}

case "${1:-}" in
    setup)
        [ $# = 1 ] || {
            say "usage: linux/qemu10.sh setup"
            exit 2
        }
        setup
        ;;
    version)
        installed || die "QEMU 10.0 is not installed (./qemu-run.sh setup)"
        cat "$cache/qemu10.version"
        ;;
    *)
        installed || die "QEMU 10.0 is not installed (./qemu-run.sh setup)"
        lib="$root/usr/lib/x86_64-linux-gnu:$root/lib/x86_64-linux-gnu"
        exec "$root/usr/bin/ld-numalab.so" --library-path "$lib" "$root/usr/bin/qemu-system-x86_64" "$@"
        ;;
esac
