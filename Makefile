# The two commands of the README. Both run the whole set-up first (idempotent).
BERT = .build/release/bert

.PHONY: setup demo test bench

setup:
	@tools/setup.sh

# The main job on the default models: embed sentences, compare them, fill a mask.
demo: setup
	$(BERT) embed --format tsv "SwiftBERT embeds text in pure Swift."
	$(BERT) similarity "A man is eating food." "A man is eating a piece of bread." "The girl is carrying a baby."
	$(BERT) fill "The capital of France is [MASK]."

# Release mode: the SIMD and INT8 kernels are 50x slower unoptimised; -enable-testing keeps
# @testable imports working. The suite is XCTest only: without Swift Testing's empty run after
# it, XCTest's "Executed N tests" is the last summary line.
test: setup
	swift test -c release -Xswiftc -enable-testing --disable-swift-testing

bench: setup
	$(BERT) bench
