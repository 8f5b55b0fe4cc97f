import Foundation
import SwiftBERT

// swift run -c release SwiftBERTBenchmarks [engine|tokenizer|gemm|suggest|peer|roofline] [options]
let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first ?? "engine" {
case "tokenizer": try runTokenizerBenchmark(arguments: Array(arguments.dropFirst()))
case "gemm": runGEMMBenchmark(arguments: Array(arguments.dropFirst()))
case "suggest": try runSuggestBenchmark(arguments: Array(arguments.dropFirst()))
case "peer": try runPeerBenchmark(arguments: Array(arguments.dropFirst()))
case "roofline": try runRooflineBenchmark(arguments: Array(arguments.dropFirst()))
default: runEngineBenchmark(arguments: arguments.first == "engine" ? Array(arguments.dropFirst()) : arguments)
}
