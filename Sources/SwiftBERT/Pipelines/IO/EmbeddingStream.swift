import Foundation

/// What a stream did: records written, inputs cut to the length limit, records skipped as invalid.
public struct StreamSummary: Sendable {
    public let records: Int
    public let truncated: Int
    public let skipped: Int
    public let seconds: Double
    public var recordsPerSecond: Double { seconds > 0 ? Double(records) / seconds : 0 }
}

/// Embeds a stream of texts of any length in bounded memory: records are read a window at a
/// time, sorted by length within the window so each forward pass holds similar lengths (the
/// engine packs without padding; similar lengths balance the attention work across threads and
/// bound each pass's scratch memory), and written back in input order before the next window
/// is read. One output per input record, always in input order.
public struct EmbeddingStream {
    public let embedder: SentenceEmbedder
    public var options: SentenceEmbedder.Options
    /// Records read and length-sorted together; memory grows with it, batch balance too.
    public var window: Int

    public init(embedder: SentenceEmbedder, options: SentenceEmbedder.Options = .init(), window: Int? = nil) {
        self.embedder = embedder
        self.options = options
        self.window = max(1, window ?? max(options.batchSize, 1) * 8)
    }

    /// Embeds every record of `reader` into `writer`, then finishes the writer. Throws
    /// `StreamError.emptyInput` when there is no record. `progress` runs after every batch.
    @discardableResult
    public func embed(_ reader: TextRecordReader, into writer: EmbeddingWriter,
                      progress: ((StreamProgress) -> Void)? = nil) throws -> StreamSummary {
        let start = DispatchTime.now()
        var records = 0, truncated = 0
        while true {
            let window = try reader.next(upTo: self.window)
            if window.isEmpty { break }
            let vectors = try embed(window, truncated: &truncated) { done in
                progress?(StreamProgress(records: records + done, bytesRead: reader.bytesRead(done, of: window.count),
                                         totalBytes: reader.totalBytes, seconds: seconds(since: start)))
            }
            for (record, vector) in zip(window, vectors) {
                try writer.write(index: record.index, vector: vector)
            }
            records += window.count
        }
        guard records > 0 else { throw StreamError.emptyInput(source: reader.sourceName, skipped: reader.skippedCount) }
        try writer.finish()
        return StreamSummary(records: records, truncated: truncated, skipped: reader.skippedCount, seconds: seconds(since: start))
    }

    /// Vectors of one window, in its order. The window is cut into batches of similar length
    /// (text length stands in for token count); `embedded` gets the running count after each.
    func embed(_ window: [TextRecord], truncated: inout Int, embedded: (Int) -> Void) throws -> [[Float]] {
        var vectors = [[Float]](repeating: [], count: window.count)
        let order = window.indices.sorted { window[$0].text.utf8.count < window[$1].text.utf8.count }
        let size = max(1, options.batchSize)
        for start in stride(from: 0, to: order.count, by: size) {
            let batch = order[start..<min(start + size, order.count)]
            let result = try embedder.embed(batch.map { window[$0].text }, options: options)
            for (i, vector) in zip(batch, result.vectors) { vectors[i] = vector }
            truncated += result.truncated.count
            embedded(start + batch.count)
        }
        return vectors
    }
}

extension TextRecordReader {
    /// Bytes read up to the `done`-th of the last `count` records read, assuming those records
    /// are of similar size: the progress bar moves per batch rather than per window.
    func bytesRead(_ done: Int, of count: Int) -> Int {
        guard count > 0, let lastWindow = windowStartBytes else { return bytesRead }
        return lastWindow + (bytesRead - lastWindow) * done / count
    }
}

func seconds(since start: DispatchTime) -> Double {
    Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
}
