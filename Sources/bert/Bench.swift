import ArgumentParser
import Foundation
import SwiftBERT
import SwiftBERTCommandLine
import SwiftBERTBench

struct Bench: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Compare FP32 and INT8 side by side: latency, tokens/s, load time, size, memory, accuracy.",
        discussion: """
            Every cell (model, batch x seq, threads) runs one forward pass per precision in turn, \
            A B A B ..., and reports median and p90 wall time, tokens per second and FP32's median \
            over each other precision's. Resident memory is measured per precision in a fresh child \
            process (VmRSS/VmHWM from /proc/self/status); accuracy is against FP32 over real sentences \
            (Tests/SwiftBERTTests/Fixtures/sentences.txt): sentence-embedding cosine for models \
            without a masked-LM head, fill-mask top-1/top-5 agreement for models with one. MobileBERT \
            models are timed like BERT ones, in fp32, int8 and int8-weights; a precision a model \
            does not run is left out with a note in the report. List \
            options take comma-separated values and may be repeated. The default run takes about a \
            minute; progress goes to stderr. Reference: docs/int8.md, docs/benchmarks-int8.md.

            Examples:
              bert bench
              bert bench --model bert-base-random --seq 128 --threads 1 --profile
              bert bench --model all-MiniLM-L6-v2,splade-tiny,bert-base-random --precision fp32,int8,int8-weights,bf16 --seconds 10
              bert bench --json | jq '.[] | select(.precision == "int8") | .speedup_vs_fp32'
            """)

    @OptionGroup var options: BenchmarkOptions

    func run() throws {
        let output: String
        do { output = try Benchmark.main(options, probeArguments: ["bench", "--memory-probe"]) } catch let error as BenchmarkError {
            throw CLIError.usage(error.message)
        }
        try writeResult(output)
    }
}
