#!/usr/bin/env bash
#! The Linux 7 twin's setup and module build (docs/linux-twin.md, "Linux 7"): Debian 13's
#! newest backports kernel, its headers in a Debian 13 build root, all cached outside the clone.
#   linux/linux7.sh setup            install (idempotent; cached: under a second when done)
#   linux/linux7.sh module OUT.ko    numalab_twin.ko built against the pinned headers, to OUT.ko
#   linux/linux7.sh versions         the installed package versions (one `package=version` a line)
# The version comes from linux/linux7.pin (committed, so every clone boots the same kernel); a
# missing pin is picked as the newest linux-binary-*+deb13-amd64 of trixie-backports and written.
# Cache: ${XDG_CACHE_HOME:-$HOME/.cache}/numalab/linux7: root/ (debootstrap minbase trixie with
# linux-headers-ABI-amd64, make, binutils, gcc-14), ABI/binary/ (linux-binary-ABI-amd64 extracted:
# usr/lib/modules/ABI-amd64/vmlinuz, copied to ABI/vmlinuz), ABI/versions, ABI/module/SHA.ko (built modules by source hash),
# ABI/System.map only where the build root's is the real one (Debian ships a one-line stub; the
# runner then reads the kernel's /proc/kallsyms in a symbol boot instead).
# Exit status: 0 done; 1 a step failed (its message says which); 2 bad command line.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
pin="$here/linux7.pin"
mirror=http://deb.debian.org/debian
cache="${XDG_CACHE_HOME:-$HOME/.cache}/numalab/linux7"
root="$cache/root"

say() { echo "linux7: $*" >&2; }
die() {
    say "$*"
    exit 1
}

# Serialises everything that touches the cache (two runners building at once, CI's jobs).
lock() {
    mkdir -p "$cache"
    exec 9>>"$cache/lock"
    # Writable for the user whose runs take built modules from the cache (setup ran as root).
    chmod 666 "$cache/lock" 2>/dev/null || true
    flock 9
}

need_root() {
    [ "$(id -u)" = 0 ] || die "$1 needs root (debootstrap and chroot); run it as root"
}

# Runs a command in the build root with /proc mounted (objtool reads /proc), unmounted after.
in_root() {
    # Unmounted on every way out, an interrupt included (a later run would find it mounted).
    trap 'mountpoint -q "$root/proc" && umount "$root/proc"' EXIT INT TERM
    mountpoint -q "$root/proc" || mount -t proc proc "$root/proc"
    local rc=0
    chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LC_ALL=C \
        DEBIAN_FRONTEND=noninteractive "$@" || rc=$?
    umount "$root/proc"
    return $rc
}

make_root() {
    [ -e "$root/.numalab-root-done" ] && return 0
    command -v debootstrap >/dev/null || die "debootstrap missing (./qemu-run.sh setup installs it)"
    say "debootstrap: a Debian 13 (trixie) minbase build root in $root (7.x's kbuild needs Debian 13's libraries and gcc-14)"
    rm -rf "$root"
    debootstrap --variant=minbase trixie "$root" "$mirror" >"$cache/debootstrap.log" 2>&1 ||
        die "debootstrap failed, see $cache/debootstrap.log"
    echo "deb $mirror trixie-backports main" >"$root/etc/apt/sources.list.d/backports.list"
    in_root apt-get update -qq || die "apt-get update in the build root failed"
    touch "$root/.numalab-root-done"
}

# The pin: ABI (e.g. 7.3.4+deb13) and VERSION (the Debian package version), picked once.
read_pin() {
    if [ ! -e "$pin" ]; then
        local abi version
        abi=$(in_root apt-cache pkgnames linux-binary- | grep -E '^linux-binary-[0-9.]+\+deb13-amd64$' |
            sed -e 's/^linux-binary-//' -e 's/-amd64$//' | sort -V | tail -1)
        [ -n "$abi" ] || die "trixie-backports lists no linux-binary-*+deb13-amd64"
        version=$(in_root apt-cache show --no-all-versions "linux-binary-$abi-amd64" |
            sed -n 's/^Version: //p' | head -1)
        say "picked the newest trixie-backports kernel: linux-binary-$abi-amd64 $version (pinned in linux/linux7.pin)"
        printf '# The Linux 7 twin boots this kernel (linux/linux7.sh picked the newest of trixie-backports).\n# Delete this file and run ./qemu-run.sh setup to pick the newest again.\nABI=%s\nVERSION=%s\n' \
            "$abi" "$version" >"$pin"
    fi
    # shellcheck source=/dev/null
    . "$pin"
    [ -n "${ABI:-}" ] && [ -n "${VERSION:-}" ] || die "linux/linux7.pin lacks ABI= or VERSION="
    dir="$cache/$ABI"
}

# ABI/System.map: the build root's usr/lib/modules/ABI-amd64/System.map when it is the real
# one. Debian ships a one-line stub there (the real map is in linux-image-ABI-amd64-dbg, 1.2 GB):
# then nothing is copied and the runner reads the booted kernel's own /proc/kallsyms once
# instead (boot/src/run/twin/kallsyms.rs), as for Linux 6.1. Run on every setup (backfill).
system_map() {
    local map="$dir/System.map" stub="$root/usr/lib/modules/$ABI-amd64/System.map"
    if grep -q ' jiffies_64$' "$stub" 2>/dev/null; then
        cp "$stub" "$map.new" && mv "$map.new" "$map"
    fi
    return 0
}

setup() {
    need_root "linux/linux7.sh setup"
    lock
    if [ -e "$pin" ]; then
        read_pin
        if [ -e "$dir/ready" ]; then
            system_map
            say "Linux $ABI ready (cached in $dir): $(tr '\n' ' ' <"$dir/versions")"
            return 0
        fi
    fi
    local t0=$SECONDS
    make_root
    read_pin
    say "installing linux-headers-$ABI-amd64 $VERSION, make, binutils into the build root (to build numalab_twin.ko)"
    in_root apt-get update -qq || die "apt-get update in the build root failed"
    in_root apt-get install -y -qq --no-install-recommends "linux-headers-$ABI-amd64=$VERSION" make binutils \
        >"$cache/apt.log" 2>&1 || die "apt-get install in the build root failed, see $cache/apt.log"
    say "extracting linux-binary-$ABI-amd64 $VERSION (vmlinuz) into $dir/binary (the host's /boot is not touched)"
    mkdir -p "$dir"
    rm -rf "$root/tmp/deb" "$dir/binary"
    mkdir -p "$root/tmp/deb"
    chmod 777 "$root/tmp/deb"
    in_root sh -c "cd /tmp/deb && apt-get download -qq linux-binary-$ABI-amd64=$VERSION" ||
        die "apt-get download linux-binary-$ABI-amd64=$VERSION failed (no longer in trixie-backports? delete linux/linux7.pin)"
    dpkg-deb -x "$root"/tmp/deb/linux-binary-*.deb "$dir/binary"
    rm -rf "$root/tmp/deb"
    # Debian 13 is merged-/usr: the image is usr/lib/modules/RELEASE/vmlinuz (older: boot/).
    local img
    for img in "$dir/binary/usr/lib/modules/$ABI-amd64/vmlinuz" "$dir/binary/boot/vmlinuz-$ABI-amd64" ""; do
        [ -f "$img" ] && break
    done
    [ -n "$img" ] || die "no vmlinuz for $ABI-amd64 in linux-binary-$ABI-amd64"
    cp "$img" "$dir/vmlinuz"
    in_root dpkg-query -W -f='${Package}=${Version}\n' "linux-headers-$ABI-amd64" "linux-kbuild-$ABI" \
        gcc-14-x86-64-linux-gnu binutils make | sort >"$dir/versions.new"
    echo "linux-binary-$ABI-amd64=$VERSION" >>"$dir/versions.new"
    mv "$dir/versions.new" "$dir/versions"
    module_locked "$dir/setup-check.ko"
    rm -f "$dir/setup-check.ko"
    system_map
    touch "$dir/ready"
    say "Linux $ABI installed in $((SECONDS - t0)) s: $(tr '\n' ' ' <"$dir/versions")"
}

# Builds (or takes from the cache) numalab_twin.ko for the pinned kernel; caller holds the lock.
module_locked() {
    local out=$1 sha
    # Every file of linux/twin (Kbuild, the harness, one file per experiment), names included.
    sha=$(cd "$here/twin" && for f in *; do printf '%s\n' "$f" && cat "$f"; done | sha256sum | cut -c1-16)
    local ko="$dir/module/$sha.ko"
    if [ ! -f "$ko" ]; then
        need_root "building numalab_twin.ko for Linux $ABI"
        local b="$root/build/numalab_twin"
        rm -rf "$b" && mkdir -p "$b" "$dir/module"
        cp "$here"/twin/* "$b/"
        in_root make -s -C "/usr/src/linux-headers-$ABI-amd64" M=/build/numalab_twin modules >&2 ||
            die "make numalab_twin.ko against linux-headers-$ABI-amd64 failed"
        cp "$b/numalab_twin.ko" "$ko.new" && mv "$ko.new" "$ko"
        rm -rf "$b"
    fi
    cp "$ko" "$out.new" && mv "$out.new" "$out"
}

case "${1:-}" in
    setup) setup ;;
    module)
        [ $# = 2 ] || {
            say "usage: linux/linux7.sh module OUT.ko"
            exit 2
        }
        [ -e "$pin" ] || die "Linux 7 is not installed: no linux/linux7.pin (./qemu-run.sh setup)"
        lock
        read_pin
        [ -e "$dir/ready" ] || die "Linux $ABI is not installed (./qemu-run.sh setup)"
        module_locked "$2"
        ;;
    versions)
        [ -e "$pin" ] || die "Linux 7 is not installed: no linux/linux7.pin (./qemu-run.sh setup)"
        read_pin
        [ -e "$dir/ready" ] || die "Linux $ABI is not installed (./qemu-run.sh setup)"
        cat "$dir/versions"
        ;;
    *)
        say "usage: linux/linux7.sh setup | module OUT.ko | versions"
        exit 2
        ;;
esac
