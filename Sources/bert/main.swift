import ArgumentParser
import Foundation
import SwiftBERT
import SwiftBERTCommandLine
#if canImport(Glibc)
import Glibc
#endif

struct Bert: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bert",
        abstract: "BERT inference in pure Swift: embeddings, masked-word prediction, tokenization, search.",
        discussion: """
            Texts come from arguments, --input FILE or stdin; results go to stdout (or --output) in \
            formats other programs read. Errors are one line on stderr with a sysexits status: \
            64 usage, 65 bad input data, 66 missing input or model, 73 cannot create output, \
            74 write error. Reference: docs/cli.md.

            Examples:
              bert embed "The cat sat on the mat." | head -c 200
              bert fill "The capital of France is [MASK]."
              bert search --corpus notes.txt "where did I park"
            """,
        version: swiftBERTVersion,
        subcommands: [
            Embed.self,
            Fill.self,
            Classify.self,
            Rerank.self,
            NER.self,
            TrainClassifier.self,
            Tokenize.self,
            Similarity.self,
            Search.self,
            Info.self,
            Convert.self,
            Quantize.self,
            Suggest.self,
            Bench.self,
            Serve.self,
            Pull.self,
            Models.self,
        ])
}

// A closed pipe must surface as EPIPE from write(2), a clean stop, not as a kill by SIGPIPE.
signal(SIGPIPE, SIG_IGN)
if let bad = argumentNotInUTF8() {
    writeStandardError("bert: argument \(bad.position) is not valid UTF-8 (bad byte at offset \(bad.offset)); convert it to UTF-8 (e.g. iconv -f latin1 -t utf-8), or give the texts with --input FILE and --skip-invalid to skip such lines\n")
    exit(65)  // EX_DATAERR, as for such a line on stdin or in --input
}
exit(runBert(CommandLine.arguments))
