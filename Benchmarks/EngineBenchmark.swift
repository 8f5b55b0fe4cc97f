import Foundation
import SwiftBERT
import SwiftBERTCommandLine
import SwiftBERTBench

/// FP32 against INT8, side by side: the harness benchmark behind `bert bench`, with the same
/// options (`BenchmarkOptions`, parsed here as `bert bench` parses them).
///
///     swift run -c release SwiftBERTBenchmarks engine [--model all-MiniLM-L6-v2] [--precision fp32,int8] ...
func runEngineBenchmark(arguments: [String]) {
    let options: BenchmarkOptions
    do { options = try BenchmarkOptions.parse(arguments) } catch { BenchmarkOptions.exit(withError: error) }
    do {
        let output = try Benchmark.main(options, probeArguments: ["engine", "--memory-probe"])
        FileHandle.standardOutput.write(Data(output.utf8))
    } catch {
        writeStandardError("engine: \(error)\n")
        exit(error is BenchmarkError ? 64 : 1)
    }
}
