/// Float buffers of the given sizes carved out of one allocation, freed together with it: one
/// attention worker's scratch, MobileBERT's buffers of a pass. Each buffer starts on a 64-byte
/// line, so a 16-lane load of an aligned row never splits a cache line.
public final class FloatBuffers {
    /// The buffers, in the order of the sizes given.
    public let pointers: [UnsafeMutablePointer<Float>]
    private let storage: UnsafeMutableRawPointer

    /// `zeroed`: the memory starts at 0 (attention relies on its padding being zero); otherwise
    /// every user writes before it reads.
    public init(_ counts: [Int], zeroed: Bool = false) {
        let floatsPerLine = 16
        let starts = counts.reduce(into: [0]) { $0.append($0.last! + ($1 + floatsPerLine - 1) / floatsPerLine * floatsPerLine) }
        let total = max(1, starts.last!)
        storage = .allocate(byteCount: total * MemoryLayout<Float>.stride, alignment: 64)
        let floats = storage.bindMemory(to: Float.self, capacity: total)
        if zeroed { floats.initialize(repeating: 0, count: total) }
        pointers = counts.indices.map { floats + starts[$0] }
    }

    deinit { storage.deallocate() }
}
