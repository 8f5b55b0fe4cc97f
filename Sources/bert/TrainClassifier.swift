import ArgumentParser
import Foundation
import SwiftBERT
import SwiftBERTCommandLine
#if canImport(Glibc)
import Glibc
#endif

extension ClassifierTraining.Optimizer: ExpressibleByArgument {}

struct TrainClassifier: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "train-classifier",
        abstract: "Train a text classifier on-device: the encoder stays frozen, only the last layer learns.",
        discussion: """
            Reads JSON Lines {"text": ..., "label": ...}. Computes each text's features once (BERT's \
            pooler output, what BertForSequenceClassification classifies), then trains the \
            classification layer with cross-entropy. By default with L-BFGS on scikit-learn's \
            LogisticRegression objective (L2 penalty of strength 1/C, bias unpenalised), C chosen on \
            --valid from --C; or with AdamW (--optimizer adamw), keeping the epoch with the best \
            validation accuracy and stopping when it has not improved for --patience epochs. Writes \
            a Hugging Face BertForSequenceClassification folder (model.safetensors, config.json with \
            id2label, tokenizer) that `bert classify` and transformers both load.

            Examples:
              bert train-classifier --model all-MiniLM-L6-v2 --train train.jsonl --valid valid.jsonl --output my-classifier
              bert classify --model my-classifier "Kein Git-Repository"
            """)

    @Option(help: "The encoder: a name under weights/ or a path (a BERT checkpoint with its pooler).")
    var model = ModelLocator.defaultEmbeddingModel

    @Option(help: ArgumentHelp("Training examples, JSON Lines of {\"text\", \"label\"}.", valueName: "file"))
    var train: String

    @Option(help: ArgumentHelp("Validation examples, same format: early stopping and the reported accuracy.", valueName: "file"))
    var valid: String?

    @Option(help: ArgumentHelp("Folder to write the classifier to.", valueName: "dir"))
    var output: String

    @Option(help: ArgumentHelp("Held-out examples, same format: accuracy reported at the end, not used in training.", valueName: "file"))
    var test: String?

    @Option(help: ArgumentHelp("Also write the features as train.npy, valid.npy, test.npy (float32, one row per record in input order) to DIR, for comparing learners on the same inputs.", valueName: "dir"))
    var saveFeatures: String?

    @Option(name: .customLong("features"), help: ArgumentHelp("Read the features from DIR (as --save-features wrote them) instead of computing them.", valueName: "dir"))
    var storedFeatures: String?

    @Option(help: "lbfgs (scikit-learn's LogisticRegression objective) or adamw (mini-batches, early stopping).")
    var optimizer = ClassifierTraining.Optimizer.lbfgs

    @Option(name: .customLong("C"), parsing: .upToNextOption,
            help: ArgumentHelp("L-BFGS: inverse L2 strength, scikit-learn's C; several are chosen between on --valid (default: 0.1 1 10 100 with --valid, else 1).", valueName: "C"))
    var inverseRegularization: [Double] = []

    @Option(help: "L-BFGS: iterations per C, at most.")
    var maxIterations = 2000

    @Option(help: "L-BFGS: stop when every gradient component is at most this (scikit-learn's tol).")
    var tolerance = 1e-4

    @Option(help: "AdamW: passes over the training set, at most.")
    var epochs = 300

    @Option(help: "AdamW learning rate.")
    var learningRate: Float = 1e-2

    @Option(help: "AdamW weight decay.")
    var weightDecay: Float = 1e-4

    @Option(help: "AdamW: epochs without a better validation accuracy before stopping.")
    var patience = 30

    @Option(help: "AdamW: training examples per step.")
    var batchSize = 128

    @Flag(name: [.short, .long], help: "No progress on stderr.")
    var quiet = false

    @Option(help: "Worker threads for a forward pass (default: one per core).")
    var threads: Int?

    func validate() throws {
        if epochs < 1 { throw ValidationError("--epochs must be at least 1") }
        if patience < 1 { throw ValidationError("--patience must be at least 1") }
        if batchSize < 1 { throw ValidationError("--batch-size must be at least 1") }
        if !(learningRate > 0 && learningRate.isFinite) { throw ValidationError("--learning-rate must be a positive number") }
        if !(weightDecay >= 0 && weightDecay.isFinite) { throw ValidationError("--weight-decay must be a number, 0 or more") }
        if maxIterations < 1 { throw ValidationError("--max-iterations must be at least 1") }
        if !(tolerance > 0 && tolerance.isFinite) { throw ValidationError("--tolerance must be a positive number") }
        if inverseRegularization.contains(where: { !($0 > 0) || !$0.isFinite }) { throw ValidationError("--C values must be positive") }
        if inverseRegularization.count > 1, valid == nil { throw ValidationError("several --C values are chosen between on --valid; give it, or one value") }
        if let threads, !(1...maximumThreads).contains(threads) { throw ValidationError("--threads must be between 1 and \(maximumThreads)") }
    }

    func run() throws {
        let trainSet = try LabelledExamples.read(train)
        let validSet = try valid.map(LabelledExamples.read)
        let testSet = try test.map(LabelledExamples.read)
        let labels = Array(Set(trainSet.map { $0.label })).sorted()
        let ids = Dictionary(uniqueKeysWithValues: labels.enumerated().map { ($0.element, $0.offset) })
        if let validSet, let unknown = validSet.first(where: { ids[$0.label] == nil }) {
            throw SwiftBERTError.invalidInput(reason: "\(valid!): label '\(unknown.label.prefix(80))' does not occur in the training set")
        }
        let folder = try ModelLocator.folder(model, precisions: [.fp32])
        let loaded = try loadModel(folder: folder, threads: threads)
        let (bert, tokenizer) = (loaded.encoder, loaded.tokenizer)
        let showProgress = !quiet && isatty(STDERR_FILENO) == 1

        let started = DispatchTime.now()
        func compute(_ set: [(text: String, label: String)], _ name: String) throws -> [[Float]] {
            try ClassifierExport.features(bert, tokenizer, set.map { $0.text }) { done in
                if showProgress { writeStandardError("\r\u{1B}[Kbert: features of \(name): \(done)/\(set.count)") }
            }
        }
        let stored = storedFeatures.map { URL(fileURLWithPath: $0) }
        func features(_ set: [(text: String, label: String)]?, _ name: String) throws -> [[Float]]? {
            guard let set else { return nil }
            guard let stored else { return try compute(set, name) }
            let rows = try readNpy(stored.appendingPathComponent("\(name).npy"))
            guard rows.count == set.count, rows.allSatisfy({ $0.count == bert.config.encoder.hiddenSize }) else {
                throw SwiftBERTError.invalidInput(reason: "\(stored.path)/\(name).npy holds \(rows.count) rows of \(rows.first?.count ?? 0) features; \(name) has \(set.count) texts and the model \(bert.config.encoder.hiddenSize) features")
            }
            return rows
        }
        let xTrain = try features(trainSet, "train")!
        let xValid = try features(validSet, "valid")
        let xTest = try features(testSet, "test")
        if let saveFeatures {
            let dir = URL(fileURLWithPath: saveFeatures)
            try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            for (name, rows) in [("train", xTrain), ("valid", xValid), ("test", xTest)] {
                if let rows { try writeNpy(rows, to: dir.appendingPathComponent("\(name).npy")) }
            }
        }
        let featureSeconds = seconds(since: started)
        if showProgress { writeStandardError("\r\u{1B}[K") }
        if !quiet {
            let texts = trainSet.count + (validSet?.count ?? 0) + (testSet?.count ?? 0)
            writeStandardError("bert: features of \(texts) texts \(stored == nil ? "computed" : "read") in \(String(format: "%.1f", featureSeconds)) s\n")
        }

        var options = ClassifierTraining.Options()
        options.optimizer = optimizer
        options.inverseRegularization = !inverseRegularization.isEmpty ? inverseRegularization : valid != nil ? [0.1, 1, 10, 100] : [1]
        options.maxIterations = maxIterations; options.tolerance = tolerance
        options.epochs = epochs; options.learningRate = learningRate; options.weightDecay = weightDecay
        options.patience = patience; options.batchSize = batchSize
        if let threads { options.threads = threads }
        let limit = optimizer == .lbfgs ? maxIterations : epochs
        let result = try ClassifierTraining.train(
            features: xTrain, labels: trainSet.map { ids[$0.label]! }, classes: labels.count,
            valid: xValid.map { ($0, validSet!.map { ids[$0.label]! }) }, options: options) { step in
                guard showProgress else { return }
                let width = 24, filled = min(width, width * step.step / limit)
                let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
                let what = step.inverseRegularization.map { "C \(formatC($0))  iteration" } ?? "epoch"
                var line = "\r\u{1B}[K[\(bar)] \(what) \(step.step)/\(limit)  loss \(String(format: "%.4f", step.trainLoss))  train \(String(format: "%.2f", step.trainAccuracy * 100))%"
                if let loss = step.validLoss, let accuracy = step.validAccuracy {
                    line += "  valid loss \(String(format: "%.4f", loss))  valid \(String(format: "%.2f", accuracy * 100))%"
                }
                writeStandardError(line)
            }
        if showProgress { writeStandardError("\n") }
        let destination = URL(fileURLWithPath: output)
        try ClassifierExport.writeSequenceClassifier(model: bert, classifier: result, labels: labels, to: destination)
        if !quiet {
            for fit in result.fits {
                var line = "bert: C \(formatC(fit.inverseRegularization)): \(fit.iterations) iterations, \(fit.evaluations) evaluations, \(fit.stop), \(String(format: "%.2f", fit.seconds)) s"
                if let accuracy = result.history.last(where: { $0.inverseRegularization == fit.inverseRegularization })?.validAccuracy {
                    line += ", valid accuracy \(String(format: "%.2f", accuracy * 100))%"
                }
                writeStandardError(line + "\n")
            }
            let best = result.history[result.kept]
            let how = result.inverseRegularization.map { "L-BFGS, kept C \(formatC($0))" }
                ?? "AdamW, \(result.history.count) epochs, kept epoch \(best.step)"
            var summary = "bert: trained \(labels.count) labels on \(trainSet.count) texts in \(String(format: "%.2f", result.seconds)) s (\(how): train accuracy \(String(format: "%.2f", best.trainAccuracy * 100))%"
            if let accuracy = best.validAccuracy { summary += ", valid accuracy \(String(format: "%.2f", accuracy * 100))%" }
            writeStandardError(summary + "); wrote \(destination.path)\n")
        }
        if let xTest, let testSet {
            let correct = zip(xTest, testSet).filter { labels[result.predict($0)] == $1.label }.count
            let line = "bert: test accuracy \(String(format: "%.2f", Double(correct) / Double(testSet.count) * 100))% (\(correct)/\(testSet.count))\n"
            if !quiet { writeStandardError(line) }
        }
    }

    func formatC(_ c: Double) -> String { String(format: "%g", c) }

    func seconds(since start: DispatchTime) -> Double { Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9 }

    /// A NumPy .npy v1.0 file of an (N, D) little-endian float32 array.
    func writeNpy(_ rows: [[Float]], to url: URL) throws {
        let d = rows.first?.count ?? 0
        var header = "{'descr': '<f4', 'fortran_order': False, 'shape': (\(rows.count), \(d)), }"
        while (10 + header.utf8.count + 1) % 64 != 0 { header += " " }
        header += "\n"
        var data = Data([0x93] + Array("NUMPY".utf8) + [1, 0])
        let length = UInt16(header.utf8.count)
        data.append(contentsOf: [UInt8(length & 0xFF), UInt8(length >> 8)])
        data.append(contentsOf: Array(header.utf8))
        for row in rows { row.withUnsafeBytes { data.append(contentsOf: $0) } }
        try SwiftBERTError.writing(url.path) { try data.write(to: url) }
    }

    /// The (N, D) little-endian float32 arrays `writeNpy` writes (version 1.0, C order).
    func readNpy(_ url: URL) throws -> [[Float]] {
        let data: Data
        do { data = try Data(contentsOf: url) } catch {
            throw SwiftBERTError.fileNotFound(path: url.path, hint: "Write the features first with --save-features.")
        }
        let bytes = [UInt8](data)
        guard bytes.count >= 10, bytes[0] == 0x93, Array(bytes[1..<6]) == Array("NUMPY".utf8), bytes[6] == 1 else {
            throw SwiftBERTError.invalidInput(reason: "\(url.path) is not a NumPy .npy file of version 1.0")
        }
        let headerLength = Int(bytes[8]) | Int(bytes[9]) << 8
        guard 10 + headerLength <= bytes.count, let header = String(bytes: bytes[10..<10 + headerLength], encoding: .ascii),
              header.contains("'descr': '<f4'"), header.contains("'fortran_order': False"),
              let open = header.range(of: "'shape': ("), let close = header[open.upperBound...].firstIndex(of: ")") else {
            throw SwiftBERTError.invalidInput(reason: "\(url.path): expected a float32 (<f4) array in C order, as --save-features writes")
        }
        let shape = header[open.upperBound..<close].split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard shape.count == 2, shape[0] >= 0, shape[1] >= 0, bytes.count - 10 - headerLength == shape[0] * shape[1] * 4 else {
            throw SwiftBERTError.invalidInput(reason: "\(url.path): expected a two-dimensional array whose size matches the file")
        }
        let values = data.dropFirst(10 + headerLength).withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        return (0..<shape[0]).map { Array(values[$0 * shape[1]..<($0 + 1) * shape[1]]) }
    }
}
