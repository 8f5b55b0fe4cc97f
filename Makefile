# The two commands of the README. Both run the whole set-up first (idempotent).
BERT = .build/release/bert
# The native build line (docs/builds.md): the host CPU's AVX-512 and SwiftBERT's kernels for it.
# The same flags a package that depends on SwiftBERT passes (README, "Use SwiftBERT from your
# package"). Without them, `swift build -c release` is the portable build.
NATIVE := $(shell cat tools/native-flags)
# Every build of this tree adds tools/build-flags to the native line: the package trait Server
# (`bert serve`, Package.swift) and -enable-testing (for the suite's @testable imports). One set
# of flags for all, so `make test` after `make demo` builds only the tests: a trait or a flag
# reaches every target, and switching either rebuilds them all. -enable-testing leaves the
# engine's speed as it was (docs/builds.md).
SERVER := $(shell cat tools/build-flags)

.PHONY: setup demo test build-tests bench bert dist wheel

setup:
	@tools/setup.sh

# The release `bert` alone, native (what setup builds, without fetching models).
bert:
	swift build -c release $(NATIVE) $(SERVER) --product bert

# The main job on the default models: embed a sentence (a preview of its vector), compare
# sentences, fill a mask.
demo: setup
	@echo "bert embed (all-MiniLM-L6-v2): a 384-dimensional vector; its first 8 values:"
	@$(BERT) embed --format tsv "SwiftBERT embeds text in pure Swift." | cut -f1-8
	@echo; echo "bert similarity: the cosine of every pair"
	@$(BERT) similarity "A man is eating food." "A man is eating a piece of bread." "The girl is carrying a baby."
	@echo; echo "bert fill (splade-tiny): the likeliest words for [MASK]"
	@$(BERT) fill "The capital of France is [MASK]."

# The set-up, then the release build of everything, the tests included: what `make test` runs
# before the suite (.ci/run builds it beside its other builds, then runs `make test` alone).
build-tests: setup
	swift build -c release $(NATIVE) $(SERVER) --build-tests

# Release mode: the SIMD and INT8 kernels are 50x slower unoptimised. The tests are built by
# `swift build`, as `bert` is (`swift test` would build everything again with parameters of its
# own), then run without building by tools/run_suite.sh: in two processes side by side, then the
# tests that bound a wall-clock time alone; its last line sums the XCTest summaries. FILTER=Name
# runs the matching tests in one process.
test: build-tests
	tools/run_suite.sh $(if $(FILTER),'$(FILTER)')

bench: setup
	$(BERT) bench

# The relocatable tarball dist/swiftbert-VERSION-linux-x86_64.tar.gz: native and portable `bert`
# with the Swift runtime linked in and a launcher that picks one per CPU (docs/deploy.md).
# Its own scratch folders (.build/dist-*): the builds above are left as they are.
# tools/dist_test.sh checks the result.
dist:
	@tools/dist.sh

# The Python wheel dist/swiftbert-VERSION-py3-none-manylinux_2_35_x86_64.whl (docs/python.md):
# libswiftbert.so and `bert` from the release build `make test` makes (one build line, every
# product), packed with hatchling, the Swift runtime and OpenBLAS vendored by auditwheel.
# With them, a portable build (no tools/native-flags; .build/wheel-portable) for CPUs that lack
# a flag the native one needs: the package picks one at import (python/swiftbert/_variant.py).
# tools/python/test_wheel.sh installs it into a fresh venv and runs python/tests (CI tests the
# native build alone: tools/python/test_wheel.sh makes its wheel without the portable one).
wheel: build-tests
	swift build -c release $$(cat tools/build-flags) --product swiftbert --scratch-path .build/wheel-portable
	swift build -c release $$(cat tools/build-flags) --product bert --scratch-path .build/wheel-portable
	@tools/python/build_wheel.sh "" "$$(swift build -c release $$(cat tools/build-flags) --scratch-path .build/wheel-portable --show-bin-path)"
