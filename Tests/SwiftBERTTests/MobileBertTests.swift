import Foundation
import XCTest
@testable import SwiftBERT

/// MobileBERT against tools/fixtures/make_mobilebert_fixtures.py: two RANDOM-weight MobileBertForMaskedLM
/// checkpoints made by transformers (no real MobileBERT weights can be reached here), one with
/// google/mobilebert-uncased's switches (trigram input, shared Q/K bottleneck, NoNorm, ReLU,
/// stacked FFNs), one with the other side of each (LayerNorm, one bottleneck for Q/K/V, no
/// trigram, GELU, one FFN). Each module is checked on PyTorch's own input, then the whole
/// encoder and the masked-LM head.
final class MobileBertTests: XCTestCase {
    static let fixtures = repositoryRoot.appendingPathComponent("Tests/SwiftBERTTests/Fixtures/mobilebert")
    static let variants = ["mobilebert-nonorm", "mobilebert-layernorm"]
    private static let conversions = ConvertedFixtures(fixtures, label: "mobilebert", quantizes: true)

    struct Meta: Decodable {
        let sentences: [String]
        let input_ids: [[Int32]]
        let layer_check_sentences: Int
        let fill_mask: [Reference.FillMask]
        let smallest_top11_logit_gap: Float
    }

    /// The fixture folder converted with `bert convert`'s code (and quantized), once per run.
    static func converted(_ name: String) throws -> URL { try conversions.folder(name) }

    func load(_ name: String, threads: Int = 2, precision: Precision = .fp32) throws -> (MobileBertModel, Meta, SafeTensorsFile) {
        let model = try MobileBertModel(folder: Self.converted(name), threads: threads, precision: precision)
        let meta = try JSONDecoder().decode(Meta.self, from: Data(contentsOf: Self.fixtures.appendingPathComponent("\(name).json")))
        let tensors = try SafeTensorsFile(path: Self.fixtures.appendingPathComponent("\(name).safetensors").path)
        return (model, meta, tensors)
    }

    // MARK: - End to end

    func testLastHiddenStateMatchesPyTorch() throws {
        for name in Self.variants {
            let (model, meta, tensors) = try load(name)
            XCTAssertGreaterThanOrEqual(meta.input_ids.count, 10)
            // All sentences in one packed batch: the trigram input must stop at each sequence's ends.
            let output = try model.encode(meta.input_ids)
            var worst: Float = 0
            for i in 0..<output.count {
                let diff = maxAbsDifference(output.hiddenStates(i), Array(try tensors.floats("last_hidden_state.\(i)")))
                XCTAssertLessThanOrEqual(diff, 1e-4, "\(name) sentence \(i)")
                worst = max(worst, diff)
            }
            print("\(name) last_hidden_state: worst max-abs difference \(worst) over \(output.count) sentences")
        }
    }

    func testFillMaskTop10MatchesPyTorch() throws {
        for name in Self.variants {
            let (model, meta, _) = try load(name)
            // The fixture's head was scaled until neighbouring top-11 logits are far apart
            // compared with 1e-4, so equal ids test the engine, not float noise.
            XCTAssertGreaterThan(meta.smallest_top11_logit_gap, 1e-3)
            let output = try model.encode(meta.fill_mask.map(\.input_ids))
            var positions: [(sequence: Int, position: Int)] = [], expected: [([Int32], [Float])] = []
            for (s, fill) in meta.fill_mask.enumerated() {
                for (k, p) in fill.mask_positions.enumerated() {
                    positions.append((s, p))
                    expected.append((fill.top_ids[k], fill.top_probabilities[k]))
                }
            }
            XCTAssertGreaterThanOrEqual(positions.count, 10)
            var worst: Float = 0
            for (row, (ids, probabilities)) in zip(try model.maskedLMLogits(output, at: positions), expected) {
                let top = topK(softmax(row), k: 10)
                XCTAssertEqual(top.map(\.id), ids, name)
                for (got, want) in zip(top.map(\.probability), probabilities) {
                    XCTAssertEqual(got, want, accuracy: 1e-4, name)
                    worst = max(worst, abs(got - want))
                }
            }
            print("\(name) fill-mask: \(positions.count) masks, top-10 ids identical, worst probability difference \(worst)")
        }
    }

    /// The pipelines and the `fill` command's loader pick MobileBertModel for the folder.
    func testFillMaskAndSuggesterRunMobileBert() throws {
        let folder = try Self.converted("mobilebert-nonorm")
        let (_, meta, _) = try load("mobilebert-nonorm")
        let fill = try FillMask(folder: folder, threads: 1)
        XCTAssertTrue(fill.model is MobileBertModel)
        let prediction = try fill.predict(meta.fill_mask[0].text, topK: 10)
        XCTAssertEqual(prediction[0].candidates.map(\.id), meta.fill_mask[0].top_ids[0])
        let suggester = try WordSuggester(folder: folder, threads: 1)
        XCTAssertEqual(try suggester.suggest("The license is ", topK: 3).count, 3)
        XCTAssertEqual(suggester.modelRuns, 1)
    }

    // MARK: - Layer by layer, each fed PyTorch's own input, so a regression points at its module.

    func testEachModuleMatchesPyTorchOnItsOwnInput() throws {
        for name in Self.variants {
            let (model, meta, tensors) = try load(name)
            func expected(_ key: String, _ i: Int) throws -> [Float] { Array(try tensors.floats("\(key).\(i)")) }
            let (h, t) = (model.config.encoder.hiddenSize, model.mobile.trueHiddenSize(model.config.encoder))
            for i in 0..<meta.layer_check_sentences {
                let ids = meta.input_ids[i], n = ids.count
                let (context, buffers) = model.scratch(for: PackedSequences(lengths: [n]))
                var x = [Float](repeating: 0, count: n * h)
                x.withUnsafeMutableBufferPointer {
                    model.embeddings(ids: ids, typeIds: .init(repeating: 0, count: n), into: $0.baseAddress!, scratch: context.wide, context)
                }
                XCTAssertLessThanOrEqual(maxAbsDifference(x, try expected("embeddings", i)), 1e-5, "\(name) embeddings, sentence \(i)")

                for (l, layer) in model.layers.enumerated() {
                    let where_ = "\(name) layer \(l), sentence \(i)"
                    // Bottleneck in, from the layer's input.
                    var input = try expected(l == 0 ? "embeddings" : "layer.\(l - 1)", i)
                    let bottleneckInput = try expected("layer.\(l).bottleneck.input", i)
                    let sharedInput = layer.bottleneck?.attention == nil ? nil : try expected("layer.\(l).bottleneck.attention", i)
                    let attention = input.withUnsafeMutableBufferPointer { x -> [Float] in
                        let inputs = layer.attentionInputs(x.baseAddress!, buffers, context)
                        XCTAssertLessThanOrEqual(maxAbsDifference(Array(UnsafeBufferPointer(start: buffers.layerInput, count: n * t)), bottleneckInput),
                                                 1e-5, "\(where_): bottleneck.input")
                        buffers.layerInput.update(from: bottleneckInput, count: n * t)
                        if let sharedInput {
                            XCTAssertLessThanOrEqual(maxAbsDifference(Array(UnsafeBufferPointer(start: buffers.queryKeyInput, count: n * t)), sharedInput),
                                                     1e-5, "\(where_): bottleneck.attention")
                            buffers.queryKeyInput.update(from: sharedInput, count: n * t)
                        }
                        // Attention block, from PyTorch's bottleneck outputs (now in the buffers).
                        layer.selfAttention(inputs, into: context.attended, buffers, context)
                        layer.attentionOutput(context.attended, residual: inputs.residual, into: buffers.attentionOutput, context)
                        return Array(UnsafeBufferPointer(start: buffers.attentionOutput, count: n * t))
                    }
                    XCTAssertLessThanOrEqual(maxAbsDifference(attention, try expected("layer.\(l).attention", i)), 1e-5, "\(where_): attention")
                    // Each stacked FFN, from PyTorch's previous output.
                    var previous = "layer.\(l).attention"
                    for (j, network) in layer.feedForwardNetworks.enumerated() {
                        var y = try expected(previous, i)
                        y.withUnsafeMutableBufferPointer { network($0.baseAddress!, context) }
                        previous = "layer.\(l).ffn.\(j)"
                        XCTAssertLessThanOrEqual(maxAbsDifference(y, try expected(previous, i)), 1e-5, "\(where_): ffn \(j)")
                    }
                    // Last FFN and output bottleneck, from PyTorch's last FFN output and the layer's input.
                    let last = try expected(previous, i)
                    last.withUnsafeBufferPointer { layer.intermediate($0.baseAddress!, into: context.wide, context) }
                    last.withUnsafeBufferPointer { a in
                        input.withUnsafeMutableBufferPointer { layer.output(context.wide, attentionOutput: a.baseAddress!, layerInput: $0.baseAddress!, buffers, context) }
                    }
                    XCTAssertLessThanOrEqual(maxAbsDifference(input, try expected("layer.\(l)", i)), 1e-5, "\(where_): output")
                }
            }
        }
    }

    // MARK: - Threads, INT8, conversion

    func testOneAndTwoThreadsAgree() throws {
        let (one, meta, _) = try load("mobilebert-nonorm", threads: 1)
        let (two, _, _) = try load("mobilebert-nonorm", threads: 2)
        let a = try one.encode(meta.input_ids), b = try two.encode(meta.input_ids)
        for i in 0..<a.count { XCTAssertLessThanOrEqual(maxAbsDifference(a.hiddenStates(i), b.hiddenStates(i)), 1e-5) }
    }

    /// A batch of more than `chunkTokensPerThread` tokens runs in chunks of whole sequences
    /// (`PackedSequences.encoderChunks`): each sequence still gets what it gets alone.
    func testLongBatchRunsInChunksThatEqualEachSequenceAlone() throws {
        let (model, meta, _) = try load("mobilebert-nonorm", threads: 1)
        try checkLongBatchEqualsEachSequenceAlone(model, meta.input_ids, "mobilebert-nonorm")
    }

    /// INT8 (weights and activations) and INT8 weights against the FP32 engine on the fixtures:
    /// measured and printed; asserted loosely, since random weights say little about a trained
    /// model's sensitivity (docs/models.md has the figures).
    func testInt8StaysCloseToFP32() throws {
        for name in Self.variants {
            let (fp32, meta, _) = try load(name)
            let reference = try fp32.encode(meta.input_ids)
            let masks = meta.fill_mask.map(\.input_ids)
            let positions = meta.fill_mask.enumerated().flatMap { s, fill in fill.mask_positions.map { (sequence: s, position: $0) } }
            let fp32Top = try fp32.maskedLMLogits(fp32.encode(masks), at: positions).map { topK(softmax($0), k: 5).map(\.id) }
            for precision in [Precision.int8, .int8Weights] {
                let (int8, _, _) = try load(name, precision: precision)
                let output = try int8.encode(meta.input_ids)
                let cosines = (0..<output.count).map { cosine(output.hiddenStates($0), reference.hiddenStates($0)) }
                let top = try int8.maskedLMLogits(int8.encode(masks), at: positions).map { topK(softmax($0), k: 5).map(\.id) }
                // Typed step by step: as one expression this took the type checker 12 s.
                let sameFirst: Int = zip(top, fp32Top).filter { (a: [Int32], b: [Int32]) in a[0] == b[0] }.count
                let overlaps: [Double] = zip(top, fp32Top).map { (a: [Int32], b: [Int32]) in Double(Set(a).intersection(b).count) / 5 }
                let top1 = Double(sameFirst) / Double(top.count)
                let top5 = overlaps.reduce(0, +) / Double(top.count)
                print("\(name) \(precision.rawValue) vs fp32: last-hidden cosine mean \(cosines.reduce(0, +) / Float(cosines.count)), min \(cosines.min()!); "
                      + "fill-mask top-1 agreement \(top1), top-5 overlap \(top5) over \(top.count) masks")
                XCTAssertGreaterThanOrEqual(cosines.min()!, 0.99, "\(name) \(precision.rawValue)")
                XCTAssertGreaterThanOrEqual(top5, 0.8, "\(name) \(precision.rawValue)")
            }
        }
    }

    func testConverterFusesTheWidenedDecoder() throws {
        let folder = try Self.converted("mobilebert-nonorm")
        let config = try ModelConfig.load(from: folder.appendingPathComponent("config.json"))
        XCTAssertEqual(config.encoder.architecture, .mobileBERT)
        XCTAssertEqual(config.encoder.mobileBert?.normalization, .noNorm)
        XCTAssertEqual(config.encoder.hiddenAct, "relu")
        let converted = try SafeTensorsFile(path: folder.appendingPathComponent("model.safetensors").path)
        let original = try SafeTensorsFile(path: Self.fixtures.appendingPathComponent("mobilebert-nonorm/model.safetensors").path)
        let (v, h, e) = (config.encoder.vocabSize, config.encoder.hiddenSize, config.encoder.mobileBert!.embeddingSize)
        let decoder = try converted.floats("cls.predictions.decoder.weight", shape: [v, h])
        let embeddings = try original.floatArray("mobilebert.embeddings.word_embeddings.weight")
        let extra = try original.floatArray("cls.predictions.dense.weight")  // [(h - e) × v]
        for row in [0, 7, v - 1] {
            XCTAssertEqual(Array(decoder[row * h..<row * h + e]), Array(embeddings[row * e..<(row + 1) * e]))
            XCTAssertEqual(Array(decoder[row * h + e..<(row + 1) * h]), (0..<(h - e)).map { extra[$0 * v + row] })
        }
    }

    func testBertModelRefusesMobileBertWithATypedError() throws {
        let folder = try Self.converted("mobilebert-nonorm")
        XCTAssertThrowsError(try BertModel(folder: folder)) { error in
            XCTAssertTrue("\(error)".contains("MobileBERT"), "\(error)")
        }
        XCTAssertTrue(try loadEncoder(folder: folder) is MobileBertModel)
    }

    func testMobileBertClassifiersAreRefusedAtConversion() throws {
        let json = #"{"model_type": "mobilebert", "architectures": ["MobileBertForSequenceClassification"], "vocab_size": 100, "hidden_size": 64, "num_hidden_layers": 1, "num_attention_heads": 4, "intermediate_size": 64, "max_position_embeddings": 32, "embedding_size": 32, "intra_bottleneck_size": 32}"#
        XCTAssertThrowsError(try Converter.readConfig(Data(json.utf8), path: "config.json", folder: "x")) { error in
            XCTAssertTrue("\(error)".contains("MobileBertForMaskedLM"), "\(error)")
        }
    }
}

/// `bert fill` and `bert suggest` on a converted MobileBERT: the commands pick its encoder.
final class MobileBertCLITests: CLITestCase {
    func testFillGivesPyTorchsTop10AndSuggestRuns() throws {
        let folder = try MobileBertTests.converted("mobilebert-nonorm")
        let meta = try JSONDecoder().decode(MobileBertTests.Meta.self, from: Data(contentsOf:
            MobileBertTests.fixtures.appendingPathComponent("mobilebert-nonorm.json")))
        let fill = try bert("fill", "--model", folder.path, "--json", "--top-k", "10", meta.fill_mask[1].text)
        XCTAssertEqual(fill.status, 0, fill.stderr)
        let masks = try XCTUnwrap((try JSONSerialization.jsonObject(with: Data(fill.stdout.utf8)) as? [String: Any])?["masks"] as? [[String: Any]])
        let ids = try XCTUnwrap(masks.first?["candidates"] as? [[String: Any]]).compactMap { ($0["id"] as? NSNumber)?.int32Value }
        XCTAssertEqual(ids, meta.fill_mask[1].top_ids[0])
        let suggest = try bert("suggest", "--model", folder.path, "--json", "The license is ")
        XCTAssertEqual(suggest.status, 0, suggest.stderr)
        XCTAssertTrue(suggest.stdout.contains("\"next_word\""), suggest.stdout)
    }
}
