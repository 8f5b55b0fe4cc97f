import Foundation
import SwiftBERT

// Quick FP32 latency probe; replaced by `bert bench` (issue 5).
func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }
let args = CommandLine.arguments
let modelName = args.count > 1 ? args[1] : "all-MiniLM-L6-v2"
for threads in [1, 2] {
    let model = try BertModel(folder: URL(fileURLWithPath: "weights/\(modelName)"), threads: threads)
    for (batch, seq) in [(1, 16), (1, 128), (32, 128)] {
        let ids: [[Int32]] = (0..<batch).map { (b: Int) -> [Int32] in (0..<seq).map { (i: Int) -> Int32 in Int32(1000 + (i * 7 + b) % 20000) } }
        _ = try model.encode(ids)
        var times: [Double] = []
        let reps = batch == 32 ? 5 : 30
        let profile = StageProfile()
        for _ in 0..<reps { let t = now(); _ = try model.encode(ids, profile: profile); times.append(now() - t) }
        times.sort()
        let med = times[times.count / 2] * 1000
        print(String(format: "%@ T%d b%dx%d: median %.2f ms  (%.1f seq/s)", modelName, threads, batch, seq, med, Double(batch) / med * 1000))
        let total = profile.seconds.values.reduce(0, +)
        print("   " + StageProfile.Stage.allCases.compactMap { s in profile.seconds[s].map { String(format: "%@ %.0f%%", s.rawValue, $0 / total * 100) } }.joined(separator: ", "))
    }
}
