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
        XCTAssertEqual(result.history[result.bestEpoch - 1].validAccuracy, 1)
        XCTAssertEqual(zip(x[240...], y[240...]).filter { result.predict($0) == $1 }.count, 60)
        XCTAssertThrowsError(try ClassifierTraining.train(features: [[1]], labels: [0], classes: 1))
    }

    /// The folder train-classifier writes, converted back and run by TextClassifier, gives the
    /// trained layer's logits on the features it was trained on: the encoder, pooler and
    /// classifier all went out under transformers' names (Q/K/V split again) and came back.
    func testWrittenClassifierRoundTrips() throws {
        let folder = try HeadFixtureTests.converted("bert-classifier")  // random-weight fixture with a pooler
        let model = try BertModel(folder: folder, threads: 2)
        let tokenizer = try BertTokenizer.load(folder: folder)
        let texts = (HeadFixtureTests.reference["classify"] as! [String: Any])["texts"] as! [String]
        let labels = texts.map { $0.lowercased().contains("software") ? 1 : 0 }
        let features = try ClassifierExport.features(model, tokenizer, texts)
        var options = ClassifierTraining.Options(); options.epochs = 50
        let trained = try ClassifierTraining.train(features: features, labels: labels, classes: 2, options: options)
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
