import Foundation

extension EncoderConfig {
    /// Why `ids` (with `typeIds`, when given) cannot run through this model, or nil when they
    /// can: empty, longer than the positions, an id outside the vocabulary, a token type the
    /// model does not have. The one check, per sequence, so a caller that batches sequences
    /// from many clients (the server) can refuse one request alone before its sequences join
    /// others' (`EncoderModel.validate`).
    func problem(ids: [Int32], typeIds: [Int32]?) -> String? {
        guard !ids.isEmpty else { return "is empty" }
        guard ids.count <= positionLimit else {
            return "has \(ids.count) tokens; the model takes at most \(positionLimit) (truncate it)"
        }
        if let bad = ids.first(where: { $0 < 0 || Int($0) >= vocabSize }) {
            return "holds token id \(bad), outside the vocabulary of \(vocabSize)"
        }
        if let typeIds {
            guard typeIds.count == ids.count else { return "has \(typeIds.count) token type ids for \(ids.count) token ids" }
            if usesTokenTypes, let bad = typeIds.first(where: { $0 < 0 || Int($0) >= typeVocabSize }) {
                return typeVocabSize == 1
                    ? "holds token type id \(bad), but the model has one token type: it takes single texts, not pairs"
                    : "holds token type id \(bad); the model has \(typeVocabSize) types"
            }
        }
        return nil
    }

    /// Flattens a batch into one token matrix, checking every id against the model's tables.
    /// `reading`: the rows a head reads of each sequence (`HeadRows`; nil: all), which the
    /// layout carries to the last layer.
    func pack(_ batch: [[Int32]], typeIds: [[Int32]]?, reading: [HeadRows]? = nil) throws -> ([Int32], [Int32], PackedSequences) {
        guard !batch.isEmpty else { throw SwiftBERTError.invalidInput(reason: "the batch is empty") }
        if let typeIds, typeIds.count != batch.count {
            throw SwiftBERTError.invalidInput(reason: "\(typeIds.count) token type sequences for \(batch.count) sequences")
        }
        if let reading, reading.count != batch.count {
            throw SwiftBERTError.invalidInput(reason: "\(reading.count) choices of rows read (HeadRows) for \(batch.count) sequences")
        }
        for (i, sequence) in batch.enumerated() {
            if let problem = problem(ids: sequence, typeIds: typeIds?[i]) {
                throw SwiftBERTError.invalidInput(reason: "sequence \(i) \(problem)")
            }
        }
        let ids = batch.flatMap { $0 }
        // RoBERTa's tokenizers pass the model no type ids: every token is type 0 there.
        let types = usesTokenTypes ? typeIds?.flatMap { $0 } ?? [Int32](repeating: 0, count: ids.count)
                                   : [Int32](repeating: 0, count: ids.count)
        var sequences = PackedSequences(lengths: batch.map(\.count))
        if let reading, reading.contains(where: { $0 != .all }) {
            sequences.rowsRead = zip(reading, batch).map { rows, sequence in rows.rows(of: sequence[...]) }
        }
        return (ids, types, sequences)
    }
}
