import Foundation
import XCTest
@testable import SwiftBERT

final class ClassifierTrainingTests: XCTestCase {
    /// A separable toy problem: the trainer must fit it, and keep the best epoch.
    func testTrainerFitsASeparableProblem() throws {
        var random = SplitMix64(seed: 1)
        func noise() -> Float { Float(random.next() % 1000) / 1000 - 0.5 }
        let centres: [[Float]] = [[2, 0, 0], [0, 2, 0], [0, 0, 2]]
        var x: [[Float]] = [], y: [Int] = []
        for n in 0..<300 { let c = n % 3; x.append(centres[c].map { $0 + noise() }); y.append(c) }
        let result = try ClassifierTraining.train(features: Array(x[..<240]), labels: Array(y[..<240]), classes: 3,
                                                  valid: (Array(x[240...]), Array(y[240...])))
        XCTAssertEqual(result.history[result.kept].validAccuracy, 1)
        XCTAssertEqual(zip(x[240...], y[240...]).filter { result.predict($0) == $1 }.count, 60)
        XCTAssertThrowsError(try ClassifierTraining.train(features: [[1]], labels: [0], classes: 1))
        var adamW = ClassifierTraining.Options(); adamW.optimizer = .adamw
        let byAdamW = try ClassifierTraining.train(features: Array(x[..<240]), labels: Array(y[..<240]), classes: 3,
                                                   valid: (Array(x[240...]), Array(y[240...])), options: adamW)
        XCTAssertEqual(byAdamW.history[byAdamW.kept].validAccuracy, 1)
    }

    /// L-BFGS reaches the optimum of scikit-learn's objective: there the gradient vanishes, by
    /// the objective's own formula and by central differences (which also check that formula
    /// away from the optimum). Ill-conditioned on purpose (feature scales from
    /// 0.01 to 10) and not separable, so the penalty matters.
    func testLBFGSReachesTheOptimumOfScikitLearnsObjective() throws {
        var random = SplitMix64(seed: 7)
        func uniform() -> Float { Float(random.next() % 1_000_000) / 1_000_000 - 0.5 }
        let scales: [Float] = [10, 1, 0.1, 0.01, 3]
        var x: [[Float]] = [], y: [Int] = []
        for n in 0..<400 {
            let c = n % 4
            x.append(scales.indices.map { i in scales[i] * (uniform() + (i == c ? 0.3 : 0)) })
            y.append(c)
        }
        var options = ClassifierTraining.Options()
        options.inverseRegularization = [10]; options.tolerance = 1e-8; options.threads = 2
        let result = try ClassifierTraining.train(features: x, labels: y, classes: 4, options: options)
        XCTAssertEqual(result.fits.count, 1)
        XCTAssertTrue(result.fits[0].converged, result.fits[0].stop)

        let objective = SoftmaxRegressionObjective(x, y, classes: 4, threads: 3)
        objective.inverseRegularization = 10
        let theta = (result.weight + result.bias).map(Double.init)
        var gradient = [Double](repeating: 0, count: theta.count)
        _ = objective(theta, &gradient)
        var unused = gradient
        for i in theta.indices {
            var plus = theta, minus = theta
            plus[i] += 1e-4; minus[i] -= 1e-4
            let numeric = (objective(plus, &unused) - objective(minus, &unused)) / 2e-4
            // At the optimum both vanish; float32 rounding of the kept weights leaves ~1e-6.
            XCTAssertLessThan(abs(numeric), 1e-5, "parameter \(i)")
            XCTAssertLessThan(abs(gradient[i]), 1e-5, "parameter \(i)")
        }
        // The gradient itself, away from the optimum: analytic against central differences.
        let elsewhere = theta.indices.map { theta[$0] + 0.1 * Double($0 % 5) - 0.2 }
        _ = objective(elsewhere, &gradient)
        for i in theta.indices {
            var plus = elsewhere, minus = elsewhere
            plus[i] += 1e-5; minus[i] -= 1e-5
            let numeric = (objective(plus, &unused) - objective(minus, &unused)) / 2e-5
            XCTAssertEqual(gradient[i], numeric, accuracy: 1e-6 * max(1, abs(numeric)), "parameter \(i)")
        }
    }

    /// What transformers gives for the folder train-classifier writes, without torch in the
    /// suite: written with the bert-classifier fixture's own classifier, the folder holds exactly
    /// the tensors transformers saved for that fixture (names, shapes, values) and the config
    /// fields transformers builds BertForSequenceClassification from. So transformers' logits for
    /// it are the fixture's reference logits, and SwiftBERT gives them on the written folder.
    /// (tools/bench/check_trained_classifier.py runs transformers itself on a trained folder.)
    func testWrittenFolderHoldsWhatTransformersSaved() throws {
        let fixture = HeadFixtureTests.fixtures.appendingPathComponent("bert-classifier")
        let model = try BertModel(folder: HeadFixtureTests.converted("bert-classifier"), threads: 2)
        let labels = model.config.heads.task!.labels!, h = model.config.encoder.hiddenSize
        let own = ClassifierTraining.Result(
            weight: Array(try model.weights.floats("classifier.weight")), bias: Array(try model.weights.floats("classifier.bias")),
            classes: labels.count, features: h, kept: 0, inverseRegularization: nil, history: [], fits: [], seconds: 0)
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("swiftbert-written-\(ProcessInfo.processInfo.processIdentifier)")
        try? FileManager.default.removeItem(at: output)
        try ClassifierExport.writeSequenceClassifier(model: model, classifier: own, labels: labels, to: output)

        let original = try CheckpointShards(folder: fixture)
        let written = try SafeTensorsFile(path: output.appendingPathComponent("model.safetensors").path)
        XCTAssertEqual(Set(written.tensors.keys), Set(original.names))
        for name in original.names {
            XCTAssertEqual(written.tensors[name]?.shape, original.info(name)!.shape, name)
            XCTAssertEqual(try written.floatArray(name), try original.floatArray(name), name)
        }
        func json(_ folder: URL) throws -> [String: Any] {
            try JSONSerialization.jsonObject(with: Data(contentsOf: folder.appendingPathComponent("config.json"))) as! [String: Any]
        }
        let (mine, theirs) = (try json(output), try json(fixture))
        for key in ["architectures", "model_type", "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                    "intermediate_size", "max_position_embeddings", "type_vocab_size", "hidden_act", "pad_token_id",
                    "id2label", "label2id"] {
            XCTAssertEqual(mine[key] as? NSObject, theirs[key] as? NSObject, key)
        }
        XCTAssertEqual((mine["layer_norm_eps"] as! Double) / (theirs["layer_norm_eps"] as! Double), 1, accuracy: 1e-6)

        let reference = HeadFixtureTests.reference["classify"] as! [String: Any]
        let logits = try TextClassifier(folder: ModelLocator.converted(output), threads: 2).logits(reference["texts"] as! [String])
        for (row, expected) in zip(logits, reference["logits"] as! [[Double]]) {
            XCTAssertLessThanOrEqual(zip(row, expected).map { abs(Double($0) - $1) }.max()!, 1e-4)
        }
    }

    /// The folder train-classifier writes, converted back and run by TextClassifier, gives the
    /// trained layer's logits on the features it was trained on: the encoder, pooler and
    /// classifier all went out under transformers' names (Q/K/V split again) and came back.
    func testWrittenClassifierRoundTrips() throws {
        let folder = try HeadFixtureTests.converted("bert-classifier")  // random-weight fixture with a pooler
        let model = try BertModel(folder: folder, threads: 2)
        let tokenizer = try Tokenizer.load(folder: folder)
        let texts = (HeadFixtureTests.reference["classify"] as! [String: Any])["texts"] as! [String]
        let labels = texts.map { $0.lowercased().contains("software") ? 1 : 0 }
        let features = try ClassifierExport.features(model, tokenizer, texts)
        let trained = try ClassifierTraining.train(features: features, labels: labels, classes: 2)
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("swiftbert-trained-\(ProcessInfo.processInfo.processIdentifier)")
        try? FileManager.default.removeItem(at: output)
        try ClassifierExport.writeSequenceClassifier(model: model, classifier: trained, labels: ["other", "software"], to: output)
        let classifier = try TextClassifier(folder: ModelLocator.converted(output), threads: 2)
        XCTAssertEqual(classifier.labels, ["other", "software"])
        let logits = try classifier.logits(texts)
        for (i, row) in logits.enumerated() {
            let expected = trained.logits(features[i])
            XCTAssertLessThanOrEqual(zip(row, expected).map { abs($0 - $1) }.max()!, 1e-4, "text \(i)")
        }
    }
}
