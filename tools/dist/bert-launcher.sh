#!/bin/sh
# bert: the launcher of the relocatable SwiftBERT tarball (tools/dist.sh installs it as bin/bert).
# It runs libexec/bert-native when this CPU has every instruction-set flag the native build may
# use (libexec/native-cpu-flags, written at build time from the build machine's CPU), else
# libexec/bert-portable, which runs on any x86-64 CPU.
#
#   SWIFTBERT_VARIANT=native|portable   use that build, whatever the CPU has
#   SWIFTBERT_VARIANT_VERBOSE=1         say on stderr which build runs, and why
#
# POSIX sh only: it runs in debian:bookworm-slim (dash) and on any Linux.
set -eu

# This script's own folder, through symlinks (/usr/local/bin/bert -> /opt/swiftbert/bin/bert):
# readlink without -f, so it works with busybox too; a relative link target is relative to the
# link's folder.
self=$0
case $self in */*) ;; *) self=$(command -v "$self") ;; esac
while [ -L "$self" ]; do
    target=$(readlink "$self")
    case $target in
        /*) self=$target ;;
        *) self=$(dirname "$self")/$target ;;
    esac
done
root=$(cd "$(dirname "$self")/.." && pwd -P)
libexec=$root/libexec

say() { [ "${SWIFTBERT_VARIANT_VERBOSE:-}" != 1 ] || echo "bert: $*" >&2; }

# The flags of libexec/native-cpu-flags this CPU lacks (empty: it can run the native build).
missing_flags() {
    cpu=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
    [ -n "$cpu" ] || { echo "(/proc/cpuinfo unreadable)"; return; }
    [ -r "$libexec/native-cpu-flags" ] || { echo "(no $libexec/native-cpu-flags)"; return; }
    missing=""
    for flag in $(cat "$libexec/native-cpu-flags"); do
        case " ${cpu#*:} " in *" $flag "*) ;; *) missing="$missing $flag" ;; esac
    done
    echo "${missing# }"
}

case ${SWIFTBERT_VARIANT:-} in
    native|portable)
        variant=$SWIFTBERT_VARIANT
        if [ "$variant" = native ]; then
            lacking=$(missing_flags)
            [ -z "$lacking" ] || echo "bert: warning: SWIFTBERT_VARIANT=native on a CPU without: $lacking (it may stop with SIGILL; unset SWIFTBERT_VARIANT to use the portable build)" >&2
        fi
        say "using $variant (SWIFTBERT_VARIANT=$variant)"
        ;;
    "")
        lacking=$(missing_flags)
        if [ -z "$lacking" ]; then
            variant=native
            say "using native (this CPU has every flag in $libexec/native-cpu-flags)"
        else
            variant=portable
            say "using portable (this CPU lacks: $lacking)"
        fi
        ;;
    *)
        echo "bert: SWIFTBERT_VARIANT='$SWIFTBERT_VARIANT' is not a build of this package; set it to native or portable, or unset it to let bert choose." >&2
        exit 64  # EX_USAGE, as bert's own usage errors
        ;;
esac

# The portable build's one-line hint to rebuild natively is for source checkouts; this package
# already carries the native build and chose between them.
if [ "$variant" = portable ]; then
    SWIFTBERT_NO_BUILD_WARNING=${SWIFTBERT_NO_BUILD_WARNING:-1}
    export SWIFTBERT_NO_BUILD_WARNING
fi

exec "$libexec/bert-$variant" "$@"
