import Foundation
import SwiftBERT

/// FP32 against INT8, side by side in one process: the same library benchmark as `bert bench`.
func runEngineBenchmark(arguments: [String]) throws {
    func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }
    let modelName = arguments.first ?? "all-MiniLM-L6-v2"
    let folder = try ModelLocator.resolve(modelName)
    for threads in [1, 2] {
        for precision in Precision.allCases {
            let model = try BertModel(folder: folder, threads: threads, precision: precision)
            for (batch, seq) in [(1, 16), (1, 128), (32, 128)] {
                let ids: [[Int32]] = (0..<batch).map { b in (0..<seq).map { i in Int32(1000 + (i * 7 + b) % 20000) } }
                _ = try model.encode(ids)
                var times: [Double] = []
                for _ in 0..<(batch == 32 ? 3 : 20) { let t = now(); _ = try model.encode(ids); times.append(now() - t) }
                let median = times.sorted()[times.count / 2] * 1000
                print(String(format: "%@ %@ T%d b%dx%d: median %.2f ms", modelName, precision.rawValue, threads, batch, seq, median))
            }
        }
    }
}
