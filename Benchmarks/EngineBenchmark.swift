import Foundation
import SwiftBERT

/// FP32 against INT8, side by side: the same library benchmark as `bert bench`, with the same
/// flags (see `BenchmarkFlags.usage`; a bare word is a model).
///
///     swift run -c release SwiftBERTBenchmarks engine [--model all-MiniLM-L6-v2] [--precision fp32,int8] ...
func runEngineBenchmark(arguments: [String]) throws {
    do {
        let output = try Benchmark.main(try BenchmarkFlags(arguments: arguments), probeArguments: ["engine", "--memory-probe"])
        FileHandle.standardOutput.write(Data(output.utf8))
    } catch let error as BenchmarkError {
        writeStandardError("engine: \(error.message)\nusage: engine \(BenchmarkFlags.usage)\n")
        exit(64)
    }
}
