# The two commands of the README. Both run the whole set-up first (idempotent).
BERT = .build/release/bert
# The native build line (docs/builds.md): the host CPU's AVX-512 and SwiftBERT's kernels for it.
# The same flags a package that depends on SwiftBERT passes (README, "Use SwiftBERT from your
# package"). Without them, `swift build -c release` is the portable build.
NATIVE := $(shell cat tools/native-flags)
# `bert serve`: the package trait that builds the HTTP server in (Package.swift). Every build of
# this tree passes it, since a trait reaches every target and switching rebuilds them all.
SERVER := --traits Server

.PHONY: setup demo test bench bert

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

# Release mode: the SIMD and INT8 kernels are 50x slower unoptimised; -enable-testing keeps
# @testable imports working. The suite is XCTest only: without Swift Testing's empty run after
# it, XCTest's "Executed N tests" is the last summary line. FILTER=Name runs the matching tests.
test: setup
	swift test -c release $(NATIVE) $(SERVER) -Xswiftc -enable-testing --disable-swift-testing $(if $(FILTER),--filter '$(FILTER)')

bench: setup
	$(BERT) bench
