#!/usr/bin/env bash
# numalab's entry point. Installs what is missing, builds, boots QEMU, prints the results.
#   ./qemu-run.sh [OPTIONS] [-- QEMU ARGS]   build, boot the default topology, run the suite
#   ./qemu-run.sh test [--slow] [CARGO TEST ARGS]   run every test (host unit tests and QEMU boots)
#       The QEMU tests are one test binary (tests/qemu.rs): each machine shape that several test
#       files check boots once, and up to NUMALAB_QEMU_JOBS QEMUs (default: the host's cores) run
#       side by side, longest first. One file: ./qemu-run.sh test --test qemu s01_
#       --slow   also the slow shapes, #[ignore]d by default (255 vCPUs, full-length benchmarks):
#                cargo's --include-ignored. CI (.ci/run) runs them too.
#   ./qemu-run.sh bench [--smoke] [--reps R] [--topology NAME | -- QEMU ARGS]   benchmarks: tables,
#       JSONL, charts. Boots: tsc (host time, repeated R times, default 3, 1 with --smoke), det
#       (all vCPUs under -icount: exact counts), icount (one CPU: instructions); then the tables
#       (median, min..max, n.s. when ranges overlap) and the seeds table. seed 000: --topology 2x8
#   ./qemu-run.sh bench --compare BASE NEW [--all] [--html FILE]    two runs compared as 0-day does
#   ./qemu-run.sh topology SOURCE   no boot: Linux's view of a real machine's ACPI tables or
#       numactl -H text; ./qemu-run.sh --machine SOURCE [...] boots its NUMA shape (docs/replay.md)
#   ./qemu-run.sh soak [--minutes N | --ops N | --short] [--seed S] [--topology NAME ...]   the soak
#   ./qemu-run.sh sweep [--topology A,B] [--axis KEY=V1,V2]... [--reps N] [--jobs N] [--emit-jobs FILE]
#       -- BENCH ARGS   one bench run per combination, through GNU parallel, merged (docs/sweeps.md)
#   ./qemu-run.sh merge DIR... --out OUT   a sweep's job folders into one run
#   ./qemu-run.sh setup [--test]   install everything, the Linux 7 twin (`bench --kernel
#       linux-7|all`) included (--test: also TEST_PACKAGES, what only tests need; --linux7 is
#       accepted and changes nothing)
# All QEMU knowledge lives in boot/ (numalab-boot); this script only sets up and dispatches.
set -euo pipefail
# The runner reads every relative path the user typed (sources, --out, --html, ...) against
# the folder the command was run from, not the checkout this script changes into.
export NUMALAB_CALLER_DIR="$PWD"
cd "$(dirname "$0")"

say() { echo "qemu-run.sh: $*" >&2; }

# Debian packages and why: QEMU runs the kernel; OVMF boots the UEFI image; rustc-web and friends
# are Rust 1.96 with the library source that -Zbuild-std needs (rustup cannot download rust-src
# here); lld-22 provides rust-lld, the bare-metal linker; clippy and rustfmt are CI's lint steps.
setup_packages() {
    local missing=()
    command -v qemu-system-x86_64 >/dev/null || missing+=(qemu-system-x86)
    [ -e /usr/share/ovmf/OVMF.fd ] || missing+=(ovmf)
    [ -x /usr/bin/rustc ] && /usr/bin/rustc --version | grep -q '^rustc 1\.9[6-9]' || missing+=(rustc-web)
    [ -x /usr/bin/cargo ] || missing+=(cargo-web)
    [ -d /usr/lib/rustlib/src/rust/library ] || missing+=(rust-web-src)
    [ -x /usr/lib/llvm-22/bin/llvm-objcopy ] || missing+=(rust-web-llvm)
    command -v rust-lld >/dev/null || missing+=(lld-22)
    # GNU parallel runs the jobs of `./qemu-run.sh sweep` side by side, here or on several hosts
    # (docs/sweeps.md); moreutils' `parallel` is another program, so ask for GNU's by its banner.
    [[ "$(parallel --version 2>/dev/null </dev/null)" == "GNU parallel"* ]] || missing+=(parallel)
    [ -x /usr/bin/cargo-clippy ] || missing+=(rust-web-clippy)
    [ -x /usr/bin/rustfmt ] || missing+=(rustfmt-web)
    # The Linux twin (docs/linux-twin.md): Debian's own 6.1 kernel booted on the same QEMU machine,
    # the headers of that same version to build the numalab_twin module against, busybox-static
    # for the initramfs's shell and tools, cpio to pack the initramfs, gcc and make for kbuild.
    local pkg
    for pkg in linux-image-amd64 linux-headers-amd64 busybox-static cpio gcc make; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' ||
            missing+=("$pkg")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        say "installing ${missing[*]} (QEMU, OVMF, Debian's Rust 1.96 with rust-src, rust-lld, Linux twin, GNU parallel)"
        local sudo=""
        [ "$(id -u)" = 0 ] || sudo=sudo
        $sudo apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
    # The metapackages pull the newest image and headers together; the module is only loadable
    # when both are the same version, so check it instead of trusting the dependency graph.
    local image_ver headers_ver
    image_ver=$(dpkg-query -W -f='${Version}' linux-image-amd64)
    headers_ver=$(dpkg-query -W -f='${Version}' linux-headers-amd64)
    if [ "$image_ver" != "$headers_ver" ]; then
        say "linux-image-amd64 $image_ver and linux-headers-amd64 $headers_ver differ: the twin module cannot load"
        exit 1
    fi
}

# The bootloader's BIOS stages need llvm-objcopy/llvm-objdump in rustc's sysroot (/usr).
setup_llvm_links() {
    local bin=/usr/lib/rustlib/x86_64-unknown-linux-gnu/bin tool
    for tool in llvm-objcopy llvm-objdump; do
        if [ ! -e "$bin/$tool" ]; then
            say "linking $bin/$tool (needed by the bootloader's BIOS stage build)"
            mkdir -p "$bin" && ln -sf "/usr/lib/llvm-22/bin/$tool" "$bin/$tool"
        fi
    done
}

# rust-toolchain.toml names "debian-rust": with rustup, link it to /usr; without, use /usr/bin.
setup_toolchain() {
    if command -v rustup >/dev/null; then
        if ! rustup toolchain list | grep -q '^debian-rust'; then
            say "linking rustup toolchain debian-rust -> /usr (Debian's Rust 1.96)"
            rustup toolchain link debian-rust /usr
        fi
    else
        export PATH="/usr/bin:$PATH" RUSTC=/usr/bin/rustc
    fi
    export RUSTC_BOOTSTRAP=1 CARGO_UNSTABLE_JSON_TARGET_SPEC=true
}

# Debian packages only the tests need (./qemu-run.sh test, ./qemu-run.sh setup --test), never
# the main job or bench: one array line per package, with why.
TEST_PACKAGES=()
# chromium: tests/s11_html.rs renders a bench run's HTML report (boot/src/report/html/) in headless
# Chromium, a real browser, and checks its screenshot and DOM.
TEST_PACKAGES+=(chromium)
# linux-source-6.1: tests/s12_slabsys.rs builds Linux's own tools/vm/slabinfo.c from it and runs
# it over a run's RUN/sys/kernel/slab tree (procps' slabtop, already installed, reads RUN/proc).
TEST_PACKAGES+=(linux-source-6.1)
setup_test_packages() {
    local missing=() pkg
    for pkg in "${TEST_PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' ||
            missing+=("$pkg")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        say "installing ${missing[*]} (needed only by the tests, see TEST_PACKAGES)"
        local sudo=""
        [ "$(id -u)" = 0 ] || sudo=sudo
        $sudo apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
}

# The Linux 7 twin (docs/linux-twin.md, "Linux 7"): debootstrap makes a Debian 13 build root
# (7.x's kbuild needs Debian 13's libraries and gcc-14), into which linux/linux7.sh installs the
# pinned trixie-backports kernel's headers and from which it extracts its image, all cached in
# ${XDG_CACHE_HOME:-$HOME/.cache}/numalab/linux7 (outside the clone: a clean clone reuses it).
# The first install takes about a minute and a half; the cached check a tenth of a second.
setup_linux7() {
    if ! command -v debootstrap >/dev/null; then
        say "installing debootstrap (the Linux 7 twin's Debian 13 build root)"
        local sudo=""
        [ "$(id -u)" = 0 ] || sudo=sudo
        $sudo apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq debootstrap >/dev/null
    fi
    # debootstrap and chroot need root: as another user, through sudo, into that user's cache.
    # Then QEMU 10.0 into the same build root: Linux 6.1's det boots need it (linux/qemu10.sh).
    if [ "$(id -u)" = 0 ]; then
        linux/linux7.sh setup
        linux/qemu10.sh setup
    else
        sudo env XDG_CACHE_HOME="${XDG_CACHE_HOME:-$HOME/.cache}" linux/linux7.sh setup
        sudo env XDG_CACHE_HOME="${XDG_CACHE_HOME:-$HOME/.cache}" linux/qemu10.sh setup
    fi
}

# Builds the host runner (numalab-boot) before it runs: silent when it is up to date, else one
# line per crate compiled, redrawn in place on a terminal (as the boots' progress line), so a
# fresh clone's first run is never silent for minutes. The longest step of a fresh build is
# the bootloader's build script: it builds the BIOS stages and the UEFI loader, five no_std
# programs for five targets, each with its own core (docs/testing.md, "Where the time goes").
build_runner() {
    local line name n=0 t0=$SECONDS drawn=0 tty=0 failed=0 crates=crates
    [ -t 2 ] && tty=1
    show() {
        if [ $tty = 1 ]; then
            printf '\r\033[2K%s' "$1" >&2
            drawn=1
        else
            printf '%s\n' "$1" >&2
        fi
    }
    while IFS= read -r line; do
        [[ $line == '"build failed"' ]] && failed=1
        [[ $line == *'"reason":"compiler-artifact"'*'"fresh":false'* ]] || continue
        [[ $line =~ \"target\":\{[^}]*\"name\":\"([^\"]*)\" ]] || continue
        name=${BASH_REMATCH[1]}
        n=$((n + 1))
        crates=crates
        [ $n = 1 ] && crates=crate
        if [[ $line == *'#bootloader@'*'"custom-build"'* ]]; then
            show "qemu-run.sh: building the runner: $n $crates compiled; now the bootloader's BIOS and UEFI stages (five targets, minutes the first time)"
        else
            show "qemu-run.sh: building the runner: $n $crates compiled, the last $name ($((SECONDS - t0)) s)"
        fi
    done < <(cargo build --quiet -p numalab-boot --bin numalab-boot --message-format=json-render-diagnostics || echo '"build failed"')
    [ $drawn = 1 ] && printf '\r\033[2K' >&2
    # cargo printed the compiler's errors; the exit status of a failed build is 1.
    [ $failed = 0 ] || exit 1
    [ $n -gt 0 ] && say "built the runner: $n $crates in $((SECONDS - t0)) s"
    return 0
}

# The whole test suite (`test` or `test --slow` with no other argument): what
# `cargo test --workspace` runs, in two parts side by side once everything is built: the QEMU
# tests (tests/qemu.rs, waiting on boots most of their time), shown as they run, and every
# other test binary (host unit tests, docs_options, structure, hostile), whose output is kept
# and printed after the QEMU tests' (docs/testing.md, "Where the time goes"). The exit status
# is the first failing part's (cargo test's 101 when a test failed).
run_all_tests() {
    local host_log rc=0 qemu_pid
    cargo test --workspace --no-run
    host_log=$(mktemp)
    # shellcheck disable=SC2064
    trap "rm -f '$host_log'" EXIT
    # `--workspace` with target filters (not `-p numalab`) keeps cargo's feature resolution of
    # the build above, so nothing is compiled again.
    (
        hrc=0
        cargo test --workspace --exclude numalab -- "$@" || hrc=$?
        cargo test --workspace --test docs_options --test structure --test hostile -- "$@" ||
            { [ $hrc != 0 ] || hrc=$?; }
        exit $hrc
    ) >"$host_log" 2>&1 &
    local host_pid=$!
    cargo test --workspace --test qemu -- "$@" &
    qemu_pid=$!
    wait "$qemu_pid" || rc=$?
    wait "$host_pid" || { [ $rc != 0 ] || rc=$?; }
    cat "$host_log"
    exit "$rc"
}

setup() {
    setup_packages
    setup_llvm_links
    setup_toolchain
}

case "${1:-}" in
    test)
        shift
        # cargo test runs in the checkout; the tests' own runs are not the user's.
        unset NUMALAB_CALLER_DIR
        slow=()
        if [ "${1:-}" = --slow ]; then
            shift
            slow=(--include-ignored)
        fi
        setup
        setup_test_packages
        setup_linux7
        # The runner binary first, with its progress: the tests' nested qemu-run.sh runs then
        # find it built (and print only what they are asked).
        build_runner
        # Enough test threads that every selected QEMU test is waiting for its boot from the
        # start: tests/support then runs the longest waiting boot first (QEMUs are limited
        # separately, by NUMALAB_QEMU_JOBS).
        export RUST_TEST_THREADS="${RUST_TEST_THREADS:-64}"
        if [ $# -eq 0 ]; then
            run_all_tests "${slow[@]}"
        fi
        if [ ${#slow[@]} -gt 0 ]; then
            # Arguments after the caller's own `--` (if any) go to every test binary.
            if printf '%s\n' "$@" | grep -qx -- --; then
                exec cargo test --workspace "$@" "${slow[@]}"
            fi
            exec cargo test --workspace "$@" -- "${slow[@]}"
        fi
        exec cargo test --workspace "$@"
        ;;
    bench)
        shift
        setup
        build_runner
        exec cargo run --quiet -p numalab-boot -- bench "$@"
        ;;
    setup)
        setup
        # `setup` installs everything a user runs, the Linux 7 twin included (about 700 MiB
        # and 4 minutes the first time, cached outside the clone); the implicit setup before
        # every other command stays the toolchain only.
        setup_linux7
        shift
        for opt in "$@"; do
            case "$opt" in
                # --test: also what only the tests need (TEST_PACKAGES) and the Linux 7 twin,
                # as `./qemu-run.sh test` does.
                --test) setup_test_packages ;;
                --linux7) ;;
                *)
                    say "setup: unknown option $opt (setup [--test] [--linux7])"
                    exit 2
                    ;;
            esac
        done
        say "setup complete"
        ;;
    *)
        setup
        build_runner
        exec cargo run --quiet -p numalab-boot -- "$@"
        ;;
esac
