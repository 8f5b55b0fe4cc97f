import Foundation
import SwiftBERT

/// The most inputs per forward pass the commands take (`--batch-size`, `bench --batch`): past
/// it nothing gets faster, and the sizes computed from it stay far from overflowing.
package let maximumBatchSize = 4096

/// What a stream did: records written, inputs cut to the length limit, records skipped as invalid.
package struct StreamSummary: Sendable {
    /// Records embedded and written by this run.
    package let records: Int
    package let truncated: Int
    package let skipped: Int
    package let seconds: Double
    /// Records already in the output before this run (`EmbeddingStream.resumeAfter`), not embedded again.
    package var resumed: Int = 0
    package var recordsPerSecond: Double { seconds > 0 ? Double(records) / seconds : 0 }

    init(records: Int, truncated: Int, skipped: Int, seconds: Double, resumed: Int = 0) {
        (self.records, self.truncated, self.skipped, self.seconds, self.resumed) = (records, truncated, skipped, seconds, resumed)
    }
}

/// Embeds a stream of texts of any length in bounded memory: records are read a window at a
/// time, sorted by length within the window so each forward pass holds similar lengths (the
/// engine packs without padding; similar lengths balance the attention work across threads and
/// bound each pass's scratch memory), and written back in input order before the next window
/// is read. One output per input record, always in input order.
///
/// Long jobs can be stopped and continued: when `interruption` is requested the stream stops at
/// the next batch, drops the window in progress, completes the output with the windows written
/// so far (whole records only: a valid document) and throws `StreamError.interrupted`. A run
/// with `resumeAfter` set to that record count (see `EmbeddingWriter.resuming`) skips those
/// records of the same input and appends the rest: nothing is duplicated or lost, and because
/// windows start at the same records, every batch, and so every vector, is the same as in an
/// uninterrupted run.
package struct EmbeddingStream {
    package let embedder: SentenceEmbedder
    package var options: SentenceEmbedder.Options
    /// Records read and length-sorted together; memory grows with it, batch balance too.
    package var window: Int
    /// Polled between batches; nil: the stream runs to the end.
    package var interruption: Interruption?
    /// Records at the start of the input that the output already holds (an interrupted run's).
    package var resumeAfter = 0

    package init(embedder: SentenceEmbedder, options: SentenceEmbedder.Options = .init(), window: Int? = nil) {
        self.embedder = embedder
        self.options = options
        self.window = max(1, window ?? min(max(options.batchSize, 1), maximumBatchSize) * 8)
    }

    /// Embeds every record of `reader` into `writer`, then finishes the writer. Throws
    /// `StreamError.emptyInput` when there is no record, `StreamError.interrupted` (after
    /// finishing the writer) when `interruption` asks for a stop. `progress` runs after every
    /// batch; `resumed` once the input is found to hold the `resumeAfter` records the output has
    /// (so that a run is announced as resumed only when it can be).
    @discardableResult
    package func embed(_ reader: TextRecordReader, into writer: EmbeddingWriter,
                      progress: ((StreamProgress) -> Void)? = nil, resumed: (() -> Void)? = nil) throws -> StreamSummary {
        let start = DispatchTime.now()
        var records = 0, truncated = 0
        reader.interruption = interruption
        defer { reader.interruption = nil }
        func stop(_ signal: Int32) throws -> Never {
            try writer.finish()
            throw StreamError.interrupted(signal: signal, records: resumeAfter + records, output: writer.sink.name)
        }
        do {
            try skipResumed(reader, writer: writer)
            if resumeAfter > 0 { resumed?() }
            while true {
                if let signal = interruption?.signal { try stop(signal) }
                let window = try reader.next(upTo: self.window)
                if window.isEmpty { break }
                guard let vectors = try embed(window, truncated: &truncated, embedded: { done in
                    progress?(StreamProgress(records: resumeAfter + records + done, bytesRead: reader.bytesRead(done, of: window.count),
                                             totalBytes: reader.totalBytes, seconds: seconds(since: start)))
                }) else { try stop(interruption?.signal ?? SIGINT) }
                for (record, vector) in zip(window, vectors) {
                    try writer.write(index: record.index, vector: vector)
                }
                // Whole windows reach the file as they are done: a hard kill loses at most one.
                try writer.sink.flush()
                records += window.count
            }
        } catch let error as ReadInterrupted {
            try stop(error.signal)
        }
        guard records + resumeAfter > 0 else { throw StreamError.emptyInput(source: reader.sourceName, skipped: reader.skippedCount) }
        try writer.finish()
        return StreamSummary(records: records, truncated: truncated, skipped: reader.skippedCount,
                             seconds: seconds(since: start), resumed: resumeAfter)
    }

    /// Reads past the `resumeAfter` records the output already holds, checking the input has them.
    private func skipResumed(_ reader: TextRecordReader, writer: EmbeddingWriter) throws {
        var left = resumeAfter
        while left > 0 {
            let skipped = try reader.next(upTo: min(left, 4096)).count
            if skipped == 0 {
                throw StreamError.mismatch(reason: "\(writer.sink.name) holds \(resumeAfter) records but \(reader.sourceName) has only \(resumeAfter - left); it was written from another input: give the same input to resume, or another --output to start afresh")
            }
            left -= skipped
        }
    }

    /// Vectors of one window, in its order; nil when `interruption` asked for a stop between two
    /// batches. The window is cut into batches of similar length (text length stands in for token
    /// count); `embedded` gets the running count after each.
    func embed(_ window: [TextRecord], truncated: inout Int, embedded: (Int) -> Void) throws -> [[Float]]? {
        var vectors = [[Float]](repeating: [], count: window.count)
        let order = window.indices.sorted { window[$0].text.utf8.count < window[$1].text.utf8.count }
        let size = max(1, options.batchSize)
        var windowTruncated = 0
        for start in stride(from: 0, to: order.count, by: size) {
            if interruption?.isRequested == true { return nil }
            let batch = order[start..<min(start + size, order.count)]
            let result = try embedder.embed(batch.map { window[$0].text }, options: options)
            for (i, vector) in zip(batch, result.vectors) { vectors[i] = vector }
            windowTruncated += result.truncated.count
            embedded(start + batch.count)
        }
        truncated += windowTruncated
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
