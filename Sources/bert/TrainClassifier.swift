import ArgumentParser
import Foundation
import SwiftBERT
#if canImport(Glibc)
import Glibc
#endif

struct TrainClassifier: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "train-classifier",
        abstract: "Train a text classifier on-device: the encoder stays frozen, only the last layer learns.",
        discussion: """
            Reads JSON Lines {"text": ..., "label": ...}. Computes each text's features once (BERT's \
            pooler output, what BertForSequenceClassification classifies), then trains the \
            classification layer with cross-entropy and AdamW, keeping the epoch with the best \
            validation accuracy and stopping when it has not improved for --patience epochs (--valid). Writes a Hugging Face BertForSequenceClassification \
            folder (model.safetensors, config.json with id2label, tokenizer) that `bert classify` \
            and transformers both load.

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

    @Option(help: "Passes over the training set, at most.")
    var epochs = 300

    @Option(help: "AdamW learning rate.")
    var learningRate: Float = 1e-2

    @Option(help: "AdamW weight decay.")
    var weightDecay: Float = 1e-4

    @Option(help: "Epochs without a better validation accuracy before stopping.")
    var patience = 30

    @Option(help: "Training examples per step.")
    var batchSize = 128

    @Flag(name: [.short, .long], help: "No progress on stderr.")
    var quiet = false

    @Option(help: "Worker threads for a forward pass (default: one per core).")
    var threads: Int?

    func validate() throws {
        if epochs < 1 { throw ValidationError("--epochs must be at least 1") }
        if patience < 1 { throw ValidationError("--patience must be at least 1") }
        if batchSize < 1 { throw ValidationError("--batch-size must be at least 1") }
        if !(learningRate > 0) { throw ValidationError("--learning-rate must be positive") }
        if !(weightDecay >= 0) { throw ValidationError("--weight-decay must be 0 or more") }
    }

    func run() throws {
        let trainSet = try LabelledExamples.read(train)
        let validSet = try valid.map(LabelledExamples.read)
        let testSet = try test.map(LabelledExamples.read)
        let labels = Array(Set(trainSet.map { $0.label })).sorted()
        let ids = Dictionary(uniqueKeysWithValues: labels.enumerated().map { ($0.element, $0.offset) })
        if let validSet, let unknown = validSet.first(where: { ids[$0.label] == nil }) {
            throw BertError.invalidInput(reason: "\(valid!): label '\(unknown.label.prefix(80))' does not occur in the training set")
        }
        let folder = try ModelLocator.converted(ModelLocator.resolve(model))
        let bert = try BertModel(folder: folder, threads: threads)
        let tokenizer = try BertTokenizer.load(folder: folder)
        let showProgress = !quiet && isatty(STDERR_FILENO) == 1

        let started = DispatchTime.now()
        func features(_ set: [(text: String, label: String)], _ name: String) throws -> [[Float]] {
            try ClassifierExport.features(bert, tokenizer, set.map { $0.text }) { done in
                if showProgress { writeStandardError("\r\u{1B}[Kbert: features of \(name): \(done)/\(set.count)") }
            }
        }
        let xTrain = try features(trainSet, "train")
        let xValid = try validSet.map { try features($0, "valid") }
        let xTest = try testSet.map { try features($0, "test") }
        if let saveFeatures {
            let dir = URL(fileURLWithPath: saveFeatures)
            try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            for (name, rows) in [("train", xTrain), ("valid", xValid), ("test", xTest)] {
                if let rows { try writeNpy(rows, to: dir.appendingPathComponent("\(name).npy")) }
            }
        }
        let featureSeconds = seconds(since: started)
        if showProgress { writeStandardError("\r\u{1B}[K") }
        if !quiet { writeStandardError("bert: features of \(trainSet.count + (validSet?.count ?? 0)) texts in \(String(format: "%.1f", featureSeconds)) s\n") }

        var options = ClassifierTraining.Options()
        options.epochs = epochs; options.learningRate = learningRate; options.weightDecay = weightDecay
        options.patience = patience; options.batchSize = batchSize
        let result = try ClassifierTraining.train(
            features: xTrain, labels: trainSet.map { ids[$0.label]! }, classes: labels.count,
            valid: xValid.map { ($0, validSet!.map { ids[$0.label]! }) }, options: options) { epoch in
                guard showProgress else { return }
                let width = 24, filled = width * epoch.epoch / epochs
                let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
                var line = "\r\u{1B}[K[\(bar)] epoch \(epoch.epoch)/\(epochs)  loss \(String(format: "%.4f", epoch.trainLoss))  train \(String(format: "%.2f", epoch.trainAccuracy * 100))%"
                if let loss = epoch.validLoss, let accuracy = epoch.validAccuracy {
                    line += "  valid loss \(String(format: "%.4f", loss))  valid \(String(format: "%.2f", accuracy * 100))%"
                }
                writeStandardError(line)
            }
        if showProgress { writeStandardError("\n") }
        let destination = URL(fileURLWithPath: output)
        try ClassifierExport.writeSequenceClassifier(model: bert, classifier: result, labels: labels, to: destination)
        if !quiet {
            let best = result.history[result.bestEpoch - 1]
            var summary = "bert: trained \(labels.count) labels on \(trainSet.count) texts in \(String(format: "%.2f", result.seconds)) s (\(result.history.count) epochs, kept epoch \(result.bestEpoch): train accuracy \(String(format: "%.2f", best.trainAccuracy * 100))%"
            if let accuracy = best.validAccuracy { summary += ", valid accuracy \(String(format: "%.2f", accuracy * 100))%" }
            writeStandardError(summary + "); wrote \(destination.path)\n")
        }
        if let xTest, let testSet {
            let correct = zip(xTest, testSet).filter { labels[result.predict($0)] == $1.label }.count
            let line = "bert: test accuracy \(String(format: "%.2f", Double(correct) / Double(testSet.count) * 100))% (\(correct)/\(testSet.count))\n"
            if !quiet { writeStandardError(line) }
        }
    }

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
        do { try data.write(to: url) } catch { throw BertError.outputFailed(path: url.path, reason: error.localizedDescription) }
    }
}
