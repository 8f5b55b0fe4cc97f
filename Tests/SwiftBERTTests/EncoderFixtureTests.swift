import Foundation
import XCTest
@testable import SwiftBERT

/// XLM-RoBERTa and RoBERTa against tools/fixtures/make_encoder_fixtures.py: RANDOM-weight checkpoints
/// (2 layers, hidden 128) made by transformers with the multilingual tokenizer fixtures, and
/// what transformers and sentence-transformers output for them (issue 17). Ids identical; hidden
/// states, probabilities and embeddings within 1e-4; fill-mask top-10 ids identical.
final class EncoderFixtureTests: XCTestCase {
    static let tolerance: Float = 1e-4
    static let fixtures = repositoryRoot.appendingPathComponent("Tests/SwiftBERTTests/Fixtures/encoders")
    nonisolated(unsafe) static let reference: [String: Any] = {
        let data = try! Data(contentsOf: fixtures.appendingPathComponent("reference.json"))
        return try! JSONSerialization.jsonObject(with: data) as! [String: Any]
    }()
    static let tensors = try! SafeTensorsFile(path: fixtures.appendingPathComponent("reference.safetensors").path)
    private static let conversions = ConvertedFixtures(fixtures, label: "encoders")

    /// The fixture folder converted with `bert convert`'s code, once per run.
    static func converted(_ name: String) throws -> URL { try conversions.folder(name) }

    static func section(_ model: String) -> [String: Any] { reference[model] as! [String: Any] }
    static func ids(_ value: Any?) -> [[Int32]] { (value as! [[Int]]).map { $0.map(Int32.init) } }
    static func tensor(_ name: String) -> [Float] { Array(try! tensors.floats(name)) }

    func assertClose(_ found: [Float], _ expected: [Float], _ what: String, tolerance: Float = tolerance,
                     file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(found.count, expected.count, "\(what): length", file: file, line: line)
        let worst = maxAbsDifference(found, expected)
        XCTAssertLessThanOrEqual(worst, tolerance, "\(what): largest difference \(worst)", file: file, line: line)
    }

    // MARK: - Conversion

    func testConfigCarriesWhatRobertaChanges() throws {
        for (name, architecture) in [("xlmr-mlm", Architecture.xlmRoberta), ("roberta-mlm", .roberta), ("xlmr-st", .xlmRoberta)] {
            let config = try ModelConfig.load(from: Self.converted(name).appendingPathComponent("config.json"))
            XCTAssertEqual(config.encoder.architecture, architecture, name)
            XCTAssertEqual(config.encoder.paddingIdx, 1, name)
            XCTAssertEqual(config.encoder.typeVocabSize, 1, name)
            XCTAssertEqual(config.encoder.positionLimit, 128, name)
            XCTAssertEqual(config.encoder.maxSequenceLength, 128, name)
            XCTAssertEqual(config.heads.hasMaskedLMHead, name != "xlmr-st", name)
            XCTAssertEqual(config.heads.hasUntiedDecoder, false, name)
            XCTAssertNil(config.heads.hasPooler, "\(name): XLM-R's pooler is not BERT's train-classifier feature")
        }
        let st = try ModelConfig.load(from: Self.converted("xlmr-st").appendingPathComponent("config.json"))
        XCTAssertEqual(st.heads.sentence.pooling, .cls)
        XCTAssertEqual(st.heads.sentence.normalize, true)
    }

    /// Checkpoints with and without the `roberta.` prefix (save_pretrained of a *ForMaskedLM
    /// writes it; BGE-M3 and other XLMRobertaModel files have none) give the same tensors.
    func testPrefixedAndBareCheckpointsConvertAlike() throws {
        let source = Self.fixtures.appendingPathComponent("roberta-mlm")
        let bare = FileManager.default.temporaryDirectory.appendingPathComponent("swiftbert-roberta-bare-\(ProcessInfo.processInfo.processIdentifier)")
        try? FileManager.default.removeItem(at: bare)
        try FileManager.default.createDirectory(at: bare, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: bare) }
        for file in ["config.json", "tokenizer.json", "tokenizer_config.json"] {
            try FileManager.default.copyItem(at: source.appendingPathComponent(file).resolvingSymlinksInPath(), to: bare.appendingPathComponent(file))
        }
        let original = try SafeTensorsFile(path: source.appendingPathComponent("model.safetensors").path)
        let entries = try original.tensors.keys.sorted().map { name -> SafeTensorsWriter.Entry in
            let stripped = name.hasPrefix("roberta.") ? String(name.dropFirst("roberta.".count)) : name
            return .init(name: stripped, shape: original.tensors[name]!.shape, floats: try original.floatArray(name))
        }
        XCTAssertTrue(entries.contains { $0.name == "embeddings.word_embeddings.weight" })
        try SafeTensorsWriter.write(entries, metadata: ["format": "pt"], to: bare.appendingPathComponent("model.safetensors").path)
        let converted = bare.appendingPathComponent("converted")
        try Converter.convert(huggingFaceFolder: bare, to: converted)
        let a = try SafeTensorsFile(path: Self.converted("roberta-mlm").appendingPathComponent("model.safetensors").path)
        let b = try SafeTensorsFile(path: converted.appendingPathComponent("model.safetensors").path)
        XCTAssertEqual(Set(a.tensors.keys), Set(b.tensors.keys))
        for name in a.tensors.keys { XCTAssertEqual(try a.floatArray(name), try b.floatArray(name), name) }
        XCTAssertNotNil(a.tensors["cls.predictions.transform.LayerNorm.weight"])
    }

    func testTwoTensorsUnderOneNameAreRefused() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("swiftbert-roberta-twice-\(ProcessInfo.processInfo.processIdentifier)")
        try? FileManager.default.removeItem(at: folder)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let source = Self.fixtures.appendingPathComponent("roberta-mlm")
        for file in ["config.json", "tokenizer.json"] {
            try FileManager.default.copyItem(at: source.appendingPathComponent(file).resolvingSymlinksInPath(), to: folder.appendingPathComponent(file))
        }
        let original = try SafeTensorsFile(path: source.appendingPathComponent("model.safetensors").path)
        var entries = try original.tensors.keys.sorted().map { SafeTensorsWriter.Entry(name: $0, shape: original.tensors[$0]!.shape, floats: try original.floatArray($0)) }
        let bias = "roberta.embeddings.LayerNorm.bias"
        entries.append(.init(name: "embeddings.LayerNorm.bias", shape: original.tensors[bias]!.shape, floats: try original.floatArray(bias)))
        try SafeTensorsWriter.write(entries, metadata: ["format": "pt"], to: folder.appendingPathComponent("model.safetensors").path)
        XCTAssertThrowsError(try Converter.convert(huggingFaceFolder: folder, to: folder.appendingPathComponent("out"))) { error in
            XCTAssertTrue("\(error)".contains("both read as 'embeddings.LayerNorm.bias'"), "\(error)")
        }
    }

    func testCausalDecoderConfigIsRefused() throws {
        let config = #"{"model_type": "roberta", "is_decoder": true, "vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 16, "max_position_embeddings": 20, "type_vocab_size": 1}"#
        XCTAssertThrowsError(try Converter.readConfig(Data(config.utf8), path: "config.json", folder: ".")) { error in
            XCTAssertTrue("\(error)".contains("is_decoder"), "\(error)")
        }
    }

    // MARK: - Hidden states

    func checkHiddenStates(_ model: String, folder: String) throws {
        let section = Self.section(model)
        let bert = try BertModel(folder: Self.converted(folder), threads: 2)
        let tokenizer = try Tokenizer.load(folder: Self.converted(folder))
        let texts = section["texts"] as! [String]
        let ids = Self.ids(section["input_ids"])
        XCTAssertEqual(ids.count, texts.count + 1)
        // The tokenizer's ids are transformers'; the last sequence holds <pad> ids inside it.
        XCTAssertEqual(texts.map { tokenizer.encode($0).ids }, Array(ids.prefix(texts.count)), model)
        XCTAssertEqual(ids.last!.filter { $0 == tokenizer.padId }.count, 2)
        let layers = bert.config.encoder.numHiddenLayers
        let output = try bert.encode(ids)
        var worst: Float = 0
        for i in ids.indices {
            let expected = Self.tensor("\(model).hidden_states.\(layers).\(i)")
            assertClose(output.hiddenStates(i), expected, "\(model) last hidden state, sequence \(i)")
            worst = max(worst, maxAbsDifference(output.hiddenStates(i), expected))
        }
        print("\(model) last_hidden_state: worst max-abs difference \(worst) over \(ids.count) sequences")

        // Layer by layer, each fed PyTorch's own input.
        let h = bert.config.encoder.hiddenSize
        for (i, sequence) in ids.enumerated() {
            let context = bert.context(for: PackedSequences(lengths: [sequence.count]))
            var x = [Float](repeating: 0, count: sequence.count * h)
            x.withUnsafeMutableBufferPointer {
                bert.embeddings(ids: sequence, typeIds: .init(repeating: 0, count: sequence.count), into: $0.baseAddress!, context)
            }
            assertClose(x, Self.tensor("\(model).hidden_states.0.\(i)"), "\(model) embeddings, sequence \(i)", tolerance: 1e-5)
            for l in 0..<layers {
                x = Self.tensor("\(model).hidden_states.\(l).\(i)")
                x.withUnsafeMutableBufferPointer {
                    bert.layers[l].attention($0.baseAddress!, context)
                    bert.layers[l].intermediate($0.baseAddress!, into: context.wide, context)
                    bert.layers[l].output(context.wide, residual: $0.baseAddress!, context)
                }
                assertClose(x, Self.tensor("\(model).hidden_states.\(l + 1).\(i)"), "\(model) layer \(l), sequence \(i)")
            }
        }
    }

    func testXLMRobertaHiddenStatesMatchTransformers() throws { try checkHiddenStates("xlmr", folder: "xlmr-mlm") }
    func testRobertaHiddenStatesMatchTransformers() throws { try checkHiddenStates("roberta", folder: "roberta-mlm") }

    func testPositionsStartAfterPaddingIdxAndSkipPadding() throws {
        let bert = try BertModel(folder: Self.converted("roberta-mlm"), threads: 1)
        XCTAssertEqual(bert.embeddings.positionIds([0, 5, 1, 1, 7, 2]), [2, 3, 1, 1, 4, 5])
        XCTAssertEqual(bert.embeddings.positionIds([0, 5, 2]), [2, 3, 4])
        // 128 tokens fill the 130-row table from row 2; one more is refused, not read past the end.
        XCTAssertNoThrow(try bert.encode([[Int32](repeating: 9, count: 128)]))
        XCTAssertThrowsError(try bert.encode([[Int32](repeating: 9, count: 129)])) { error in
            XCTAssertTrue("\(error)".contains("at most 128"), "\(error)")
        }
    }

    /// RoBERTa's tokenizers pass the model no type ids (HF's RobertaProcessing gives every token
    /// of a pair type 0 anyway): type ids a caller passes do not reach the one-row type table.
    func testPairRunsWithTypeZero() throws {
        let folder = try Self.converted("roberta-mlm")
        let bert = try BertModel(folder: folder, threads: 1)
        let tokenizer = try Tokenizer.load(folder: folder)
        let pair = Self.section("roberta")["pair"] as! [String: Any]
        let texts = pair["texts"] as! [String]
        let encoding = tokenizer.encode(texts[0], pair: texts[1])
        XCTAssertEqual(encoding.ids, (pair["input_ids"] as! [Int]).map(Int32.init))
        XCTAssertEqual(Set(encoding.typeIds), [0])
        let ones = [Int32](repeating: 1, count: encoding.ids.count)
        let withTypes = try bert.encode([encoding.ids], typeIds: [ones])
        let without = try bert.encode([encoding.ids], typeIds: [encoding.typeIds])
        XCTAssertEqual(withTypes.hiddenStates(0), without.hiddenStates(0))
    }

    // MARK: - Fill-mask

    func checkFillMask(_ model: String, folder: String) throws {
        let fill = Self.section(model)["fill_mask"] as! [String: Any]
        XCTAssertGreaterThan(fill["smallest_logit_gap_in_top11"] as! Double, 1e-3, "the fixture's top-10 is decisive")
        let pipeline = try FillMask(folder: Self.converted(folder), threads: 2)
        XCTAssertEqual(pipeline.tokenizer.token(of: pipeline.tokenizer.maskId), "<mask>")
        var masks = 0
        for case_ in fill["cases"] as! [[String: Any]] {
            let text = case_["text"] as! String
            XCTAssertEqual(pipeline.tokenizer.encode(text).ids, (case_["input_ids"] as! [Int]).map(Int32.init), text)
            let predictions = try pipeline.predict(text, topK: 10)
            XCTAssertEqual(predictions.map(\.position), case_["mask_positions"] as! [Int], text)
            let ids = Self.ids(case_["top_ids"]), probabilities = case_["top_probabilities"] as! [[Double]]
            for (k, prediction) in predictions.enumerated() {
                XCTAssertEqual(prediction.candidates.map(\.id), ids[k], "\(model) '\(text)' mask \(k)")
                assertClose(prediction.candidates.map(\.probability), probabilities[k].map(Float.init), "\(model) '\(text)' mask \(k)")
                masks += 1
            }
        }
        XCTAssertGreaterThanOrEqual(masks, 7)
        // The pipeline's token strings too (transformers' fill-mask pipeline, first text).
        let expected = (fill["pipeline_top10"] as! [[[String: Any]]])[0]
        let first = try pipeline.predict((fill["cases"] as! [[String: Any]])[0]["text"] as! String, topK: 10)[0]
        XCTAssertEqual(first.candidates.map { Int($0.id) }, expected.map { $0["token"] as! Int })
        XCTAssertEqual(first.candidates.map(\.token), expected.map { $0["token_str"] as! String }, "decoded as token_str")
    }

    func testXLMRobertaFillMaskMatchesTransformers() throws { try checkFillMask("xlmr", folder: "xlmr-mlm") }
    func testRobertaFillMaskMatchesTransformers() throws { try checkFillMask("roberta", folder: "roberta-mlm") }

    func testTextWithoutMaskNamesTheModelsMaskToken() throws {
        let pipeline = try FillMask(folder: Self.converted("xlmr-mlm"), threads: 1)
        XCTAssertThrowsError(try pipeline.predict("no mask here")) { error in
            XCTAssertTrue("\(error)".contains("<mask>"), "\(error)")
        }
    }

    // MARK: - bge-reranker's layout: XLMRobertaForSequenceClassification, one label

    /// Its classifier (dense + tanh on <s>, then out_proj) runs as BERT's pooler and classifier.
    /// Random encoders give near-equal <s> vectors, so the scores lie close (gaps of 1e-4 and
    /// more; SwiftBERT's differ from transformers' by ~1e-6, so the order is still decided).
    func testXLMRobertaRerankerMatchesCrossEncoder() throws {
        let reference = Self.section("xlmr")["rerank"] as! [String: Any]
        // The encoder shard also holds XLMRobertaModel's own pooler: the classifier's dense must win,
        // every time (it once depended on dictionary order).
        let head = try SafeTensorsFile(path: Self.fixtures.appendingPathComponent("xlmr-reranker/model-00002-of-00002.safetensors").path)
        let converted = try SafeTensorsFile(path: Self.converted("xlmr-reranker").appendingPathComponent("model.safetensors").path)
        XCTAssertEqual(try converted.floatArray("pooler.dense.weight"), try head.floatArray("classifier.dense.weight"))
        XCTAssertEqual(try converted.floatArray("classifier.weight"), try head.floatArray("classifier.out_proj.weight"))
        let reranker = try Reranker(folder: Self.converted("xlmr-reranker"), threads: 2)
        XCTAssertEqual(reranker.classifier.model.config.encoder.architecture, .xlmRoberta)
        for case_ in reference["cases"] as! [[String: Any]] {
            let query = case_["query"] as! String, documents = case_["documents"] as! [String]
            XCTAssertEqual(documents.map { reranker.classifier.tokenizer.encode(query, pair: $0).ids }, Self.ids(case_["input_ids"]))
            let scores = try reranker.scores(query: query, documents: documents)
            assertClose(scores, (case_["scores"] as! [Double]).map(Float.init), "scores for \(query)")
            XCTAssertEqual(try reranker.rerank(query: query, documents: documents).map(\.index), case_["rank"] as! [Int], query)
        }
    }

    // MARK: - BGE-M3's dense output: CLS pooling + Normalize

    func testBGEM3StyleFolderMatchesSentenceTransformers() throws {
        let section = Self.section("xlmr")["sentence_transformers"] as! [String: Any]
        let embedder = try SentenceEmbedder(folder: Self.converted("xlmr-st"), threads: 2)
        let texts = section["texts"] as! [String]
        let limit = embedder.model.config.encoder.maxSequenceLength
        XCTAssertEqual(texts.map { embedder.tokenizer.encode($0, maxLength: limit).ids }, Self.ids(section["input_ids"]))
        let result = try embedder.embed(texts)
        XCTAssertEqual(result.truncated, [texts.count - 1], "the long text is cut at max_seq_length")
        let expected = section["embeddings"] as! [[Double]]
        for i in texts.indices {
            assertClose(result.vectors[i], expected[i].map(Float.init), "xlmr-st text \(i)")
            XCTAssertEqual(result.vectors[i].reduce(0) { $0 + $1 * $1 }, 1, accuracy: 1e-5)
        }
    }
}

/// INT8 (`bert quantize`) against FP32 on the RANDOM-weight XLM-R and RoBERTa fixtures; prints
/// the figures quoted in docs/models.md. The bounds sit a little outside what was measured:
/// they catch a broken INT8 path, not the last bit of accuracy.
final class EncoderInt8Tests: XCTestCase {
    func int8Folder(_ name: String) throws -> URL { try quantizedOnce(EncoderFixtureTests.converted(name)) }

    func report(_ line: String) { print("INT8 vs FP32 (random-weight encoder fixtures): \(line)") }

    func testHiddenStatesInt8() throws {
        for (model, folder) in [("xlmr", "xlmr-mlm"), ("roberta", "roberta-mlm")] {
            let url = try int8Folder(folder)
            let ids = EncoderFixtureTests.ids(EncoderFixtureTests.section(model)["input_ids"])
            let fp32 = try BertModel(folder: url, threads: 2).encode(ids)
            let int8 = try BertModel(folder: url, threads: 2, precision: .int8).encode(ids)
            let cosines = (0..<ids.count).flatMap { i -> [Float] in
                let a = fp32.hiddenStates(i), b = int8.hiddenStates(i), h = fp32.hiddenSize
                return (0..<ids[i].count).map { t in cosine(Array(a[t * h..<(t + 1) * h]), Array(b[t * h..<(t + 1) * h])) }
            }
            report("\(folder): last hidden state, per-token cosine to FP32 min \(cosines.min()!), mean \(cosines.reduce(0, +) / Float(cosines.count)) over \(cosines.count) tokens")
            XCTAssertGreaterThan(cosines.min()!, 0.995, folder)
        }
    }

    func testFillMaskInt8() throws {
        for (model, folder) in [("xlmr", "xlmr-mlm"), ("roberta", "roberta-mlm")] {
            let url = try int8Folder(folder)
            let cases = (EncoderFixtureTests.section(model)["fill_mask"] as! [String: Any])["cases"] as! [[String: Any]]
            for precision in [Precision.int8, .int8Weights] {
                var top1 = 0, overlap = 0, masks = 0
                var worst: Float = 0
                let a = try FillMask(folder: url, threads: 2), b = try FillMask(folder: url, threads: 2, precision: precision)
                for case_ in cases {
                    let text = case_["text"] as! String
                    for (x, y) in zip(try a.predict(text, topK: 10), try b.predict(text, topK: 10)) {
                        masks += 1
                        if x.candidates[0].id == y.candidates[0].id { top1 += 1 }
                        overlap += Set(x.candidates.map(\.id)).intersection(y.candidates.map(\.id)).count
                        worst = max(worst, abs(x.candidates[0].probability - (y.candidates.first { $0.id == x.candidates[0].id }?.probability ?? 0)))
                    }
                }
                report("\(folder) fill-mask \(precision.rawValue): top-1 agrees on \(top1)/\(masks) masks, top-10 overlap \(overlap)/\(masks * 10), largest top-1 probability difference \(worst)")
                XCTAssertGreaterThanOrEqual(Double(top1), 0.8 * Double(masks), "\(folder) \(precision)")
                XCTAssertGreaterThanOrEqual(Double(overlap), 0.8 * Double(masks * 10), "\(folder) \(precision)")
            }
        }
    }

    func testBGEM3StyleEmbeddingsInt8() throws {
        let url = try int8Folder("xlmr-st")
        let texts = (EncoderFixtureTests.section("xlmr")["sentence_transformers"] as! [String: Any])["texts"] as! [String]
        let fp32 = try SentenceEmbedder(folder: url, threads: 2).embed(texts).vectors
        let int8 = try SentenceEmbedder(folder: url, threads: 2, precision: .int8).embed(texts).vectors
        let cosines = zip(fp32, int8).map { cosineSimilarity($0, $1) }
        report("xlmr-st (CLS pooling, Normalize): cosine to FP32 min \(cosines.min()!), mean \(cosines.reduce(0, +) / Float(cosines.count))")
        XCTAssertGreaterThan(cosines.min()!, 0.999)
    }
}

extension EncoderFixtureTests {
    func testPaddingIdxOutsideThePositionTableIsRefused() throws {
        for pad in ["-1", "20", "1e15"] {
            let config = #"{"model_type": "xlm-roberta", "pad_token_id": \#(pad), "vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 16, "max_position_embeddings": 20, "type_vocab_size": 1}"#
            XCTAssertThrowsError(try Converter.readConfig(Data(config.utf8), path: "config.json", folder: "."), pad) { error in
                XCTAssertTrue("\(error)".contains("padding_idx"), "\(error)")
            }
        }
        let fine = #"{"model_type": "xlm-roberta", "pad_token_id": 1, "vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 16, "max_position_embeddings": 20, "type_vocab_size": 1}"#
        XCTAssertEqual(try Converter.readConfig(Data(fine.utf8), path: "config.json", folder: ".").encoder.maxSequenceLength, 18)
    }
}
