/// Per input channel, the smallest and largest value each Linear layer's input took, by the
/// layer's checkpoint name, over every forward pass that recorded into it: what
/// `Quantizer.calibrate` gathers from a calibration text to fix `int8-static`'s input ranges.
final class ActivationRanges {
    struct Range {
        var low: [Float]
        var high: [Float]
    }
    private(set) var ranges: [String: Range] = [:]

    /// Widens `name`'s ranges by x [m × k]. Called by Linear on the forward pass's own thread.
    func record(_ name: String, _ x: UnsafePointer<Float>, m: Int, k: Int) {
        var range = ranges[name] ?? Range(low: [Float](repeating: 0, count: k), high: [Float](repeating: 0, count: k))
        precondition(range.low.count == k, "\(name) had \(range.low.count) input features, now \(k)")
        range.low.withUnsafeMutableBufferPointer { low in
            range.high.withUnsafeMutableBufferPointer { high in
                for row in 0..<m {
                    let values = x + row * k
                    for c in 0..<k {
                        low[c] = min(low[c], values[c])
                        high[c] = max(high[c], values[c])
                    }
                }
            }
        }
        ranges[name] = range
    }
}
