import Foundation
import XCTest
@testable import SwiftBERT

/// `ModelFamilies.all` is the one table of architectures: the converter reads a Hugging Face
/// config.json through it, and `loadEncoder` loads a converted folder through it.
final class ModelFamilyTests: XCTestCase {
    /// Every architecture belongs to exactly one family, under a name no other family uses, and
    /// reads back from config.json as itself. A name no family declares is refused, naming the
    /// ones that run.
    func testEveryArchitectureHasOneFamilyAndOneName() throws {
        XCTAssertEqual(Architecture.allCases.count, 12)
        XCTAssertEqual(Set(Architecture.allCases.map(\.rawValue)).count, Architecture.allCases.count)
        for architecture in Architecture.allCases {
            let families = ModelFamilies.all.filter { $0.variants.contains(architecture) }.map(\.name)
            XCTAssertEqual(families.count, 1, "\(architecture.displayName): \(families)")
            let json = try JSONEncoder().encode([architecture])
            XCTAssertEqual(String(decoding: json, as: UTF8.self), "[\"\(architecture.rawValue)\"]")
            let read = try JSONDecoder().decode([Architecture].self, from: json)[0]
            XCTAssertEqual(read, architecture)
            XCTAssertEqual(read.className, architecture.className)
            XCTAssertEqual(Architecture(rawValue: architecture.rawValue)?.displayName, architecture.displayName)
        }
        XCTAssertEqual(Architecture.xlmRoberta.rawValue, "xlm-roberta")
        XCTAssertEqual(Architecture.gemma3.className, "Gemma3Text")
        XCTAssertNil(Architecture(rawValue: "albert"))
        var config = try ModelConfig.load(from: try convertedModel("all-MiniLM-L6-v2").appendingPathComponent("config.json"))
        config.encoder.architecture = .bert
        var document = try JSONSerialization.jsonObject(with: JSONEncoder().encode(config)) as! [String: Any]
        document["architecture"] = "albert"
        XCTAssertThrowsError(try ModelConfig.decode(JSONSerialization.data(withJSONObject: document), path: "config.json")) { error in
            XCTAssertTrue("\(error)".contains("architecture 'albert' is none SwiftBERT runs (nomic_bert, gte, modernbert, gemma3_text, qwen3, deberta-v2, mobilebert, bert, distilbert, roberta, xlm-roberta, mpnet)"), "\(error)")
        }
    }

    /// Each family's own fields sit under its key in config.json and belong to its config type
    /// alone: a config holds them through `EncoderConfig.familyConfigs`, which compares and writes
    /// them as the family's type, and BERT's configs hold none.
    func testFamilyFieldsAreTheFamilysOwn() throws {
        XCTAssertEqual(ModelFamilies.all.compactMap(\.configType).map { $0.key }, ["rotary", "gemma", "qwen3", "deberta", "mobilebert"])
        let minilm = try ModelConfig.load(from: try convertedModel("all-MiniLM-L6-v2").appendingPathComponent("config.json"))
        XCTAssertTrue(minilm.encoder.familyConfigs.isEmpty)
        var qwen = minilm.encoder
        qwen.qwen3 = Qwen3Config(headDim: 16, keyValueHeads: 2, ropeTheta: 10_000)
        XCTAssertNotEqual(qwen, minilm.encoder)
        XCTAssertNil(qwen.gemma)
        XCTAssertEqual(qwen.familyConfigs[Qwen3Config.self]?.headDim, 16)
        var other = qwen
        other.qwen3?.ropeTheta = 1_000_000
        XCTAssertNotEqual(other, qwen)
        other.qwen3?.ropeTheta = 10_000
        XCTAssertEqual(other, qwen)
        let document = try JSONSerialization.jsonObject(with: JSONEncoder().encode(qwen)) as! [String: Any]
        XCTAssertEqual(document["qwen3"] as? NSDictionary, ["head_dim": 16, "num_key_value_heads": 2, "rope_theta": 10_000] as NSDictionary)
        XCTAssertEqual(try JSONDecoder().decode(EncoderConfig.self, from: JSONEncoder().encode(qwen)), qwen)
        qwen.qwen3 = nil
        XCTAssertEqual(qwen, minilm.encoder)
    }

    /// What a family says one layer's Linear layers cost per token (`layerMultiplyAdds`, which
    /// `bert bench --profile` and the roofline turn into rates) is what the checkpoint's matrices
    /// hold: every 2-D weight of layer 0 but the norms, rows × columns, in a fixture of each
    /// family that has grouped heads, a gated feed-forward network, or BERT's layer. MobileBERT
    /// says nothing rather than something wrong.
    func testLayerMultiplyAddsCountTheCheckpointsMatrices() throws {
        let fixtures = repositoryRoot.appendingPathComponent("Tests/SwiftBERTTests/Fixtures")
        let cases: [(folder: String, layerPrefix: String, architecture: Architecture)] = [
            ("qwen3/model", "layers.0.", .qwen3), ("gemma-random/model", "layers.0.", .gemma3),
            ("rotary/modernbert", "layers.0.", .modernBERT), ("deberta/classifier", "encoder.layer.0.", .debertaV2),
        ]
        for (name, prefix, architecture) in cases {
            let folder = fixtures.appendingPathComponent(name)
            let config = try Converter.readConfig(folder).encoder
            XCTAssertEqual(config.architecture, architecture, name)
            var matrices = 0
            for file in try FileManager.default.contentsOfDirectory(atPath: folder.path) where file.hasSuffix(".safetensors") {
                for (tensor, info) in try SafeTensorsFile(path: folder.appendingPathComponent(file).path).tensors
                where tensor.contains(prefix) && info.shape.count == 2 && !tensor.lowercased().contains("norm") {
                    matrices += info.count
                }
            }
            let layer = try XCTUnwrap(ModelFamilies.family(of: config).layerMultiplyAdds(config), name)
            XCTAssertGreaterThan(matrices, 0, name)
            XCTAssertEqual(layer.linear, matrices, name)
        }
        let mobile = try Converter.readConfig(fixtures.appendingPathComponent("mobilebert/mobilebert-layernorm")).encoder
        XCTAssertNil(ModelFamilies.family(of: mobile).layerMultiplyAdds(mobile))
    }

    /// model_type picks the family; without one, the architectures' class names do. Others are
    /// refused with a message that lists what runs.
    func testHuggingFaceConfigsPickTheirFamily() throws {
        let expected: [(modelType: String, architectures: [String], family: String?)] = [
            ("bert", [], "BERT"), ("distilbert", [], "BERT"), ("roberta", [], "BERT"), ("xlm-roberta", [], "BERT"),
            ("mpnet", [], "BERT"), ("mobilebert", [], "MobileBERT"), ("nomic_bert", [], "rotary encoders"),
            ("gte", [], "rotary encoders"), ("new", [], "rotary encoders"), ("modernbert", [], "rotary encoders"),
            ("", ["BertForMaskedLM"], "BERT"), ("", ["DistilBertModel"], "BERT"), ("", ["MobileBertForMaskedLM"], "MobileBERT"),
            ("", ["NewModel"], "rotary encoders"), ("", ["ModernBertModel"], "rotary encoders"),
            ("gemma3_text", ["Gemma3TextModel"], "Gemma 3"), ("", ["Gemma3TextModel"], "Gemma 3"),
            ("qwen3", ["Qwen3ForCausalLM"], "Qwen3"), ("", ["Qwen3Model"], "Qwen3"), ("qwen2", ["Qwen2Model"], nil),
            ("deberta-v2", ["DebertaV2ForSequenceClassification"], "DeBERTa"), ("", ["DebertaV2Model"], "DeBERTa"),
            ("deberta", ["DebertaModel"], nil), ("albert", ["AlbertForMaskedLM"], nil), ("", [], nil),
        ]
        for (modelType, architectures, family) in expected {
            XCTAssertEqual(ModelFamilies.family(modelType: modelType, architectures: architectures)?.name, family, "\(modelType) \(architectures)")
        }
        let albert = Data(#"{"model_type": "albert", "architectures": ["AlbertForMaskedLM"]}"#.utf8)
        XCTAssertThrowsError(try Converter.readConfig(albert, path: "config.json", folder: "albert")) { error in
            XCTAssertEqual("\(error)", "albert: unsupported checkpoint: model_type is 'albert', architectures [\"AlbertForMaskedLM\"]; SwiftBERT runs NomicBERT, GTE, ModernBERT, Gemma 3, Qwen3, DeBERTa-v2, MobileBERT, BERT, DistilBERT, RoBERTa, XLM-RoBERTa and MPNet encoders (docs/models.md)")
        }
    }

    /// A converted folder loads as its family's encoder class, and its config is that family's alone.
    func testConvertedFoldersLoadThroughTheirFamily() throws {
        let folders: [(URL, String, any EncoderModel.Type)] = [
            (try convertedModel("all-MiniLM-L6-v2"), "BERT", BertModel.self),
            (try convertedModel("all-mpnet-base-v2"), "BERT", BertModel.self),
            (try MobileBertTests.converted("mobilebert-nonorm"), "MobileBERT", MobileBertModel.self),
            (try RotaryEncoderTests.conversions.folder("gte"), "rotary encoders", RotaryEncoderModel.self),
        ]
        for (folder, family, type) in folders {
            let config = try ModelConfig.load(from: folder.appendingPathComponent("config.json"))
            XCTAssertEqual(ModelFamilies.all.filter { $0.describes(config.encoder) }.map(\.name), [family], folder.lastPathComponent)
            let encoder = try loadEncoder(folder: folder, threads: 1)
            XCTAssertTrue(Swift.type(of: encoder) == type, "\(folder.lastPathComponent): \(Swift.type(of: encoder))")
        }
    }

    /// config.json keeps its one flat format: each field lands in its part (`encoder` or
    /// `heads`), and writing the config back gives the same document, so a folder converted by
    /// an earlier SwiftBERT reads unchanged and one converted now reads in an earlier SwiftBERT.
    func testFlatConfigSplitsIntoEncoderAndHeadsAndWritesBackTheSame() throws {
        let flat = """
        {"architecture": "deberta-v2", "classifier_pooling": "mean", "colbert_dim": 8,
         "deberta": {"c2p": true, "max_relative_positions": 512, "norm_rel_ebd": true,
                     "position_biased_input": false, "position_buckets": 256, "p2c": true},
         "dense_layers": [{"activation": "identity", "bias": false, "in_features": 64, "out_features": 32}],
         "has_masked_lm_head": true, "has_pooler": true, "has_sparse_linear": true, "has_untied_decoder": false,
         "head": "sequence_classification", "hidden_act": "gelu", "hidden_size": 64, "include_prompt": false,
         "intermediate_size": 128, "labels": ["entailment", "neutral", "contradiction"], "layer_norm_eps": 1e-07,
         "max_position_embeddings": 512, "max_seq_length": 256, "normalize": true, "num_attention_heads": 4,
         "num_hidden_layers": 2, "pooler_activation": "gelu", "pooling": "mean", "problem_type": "single_label_classification",
         "prompts": {"query": "query: "}, "default_prompt_name": "query", "type_vocab_size": 1, "vocab_size": 1000}
        """
        let config = try ModelConfig.decode(Data(flat.utf8), path: "config.json")
        XCTAssertEqual(config.encoder.architecture, .debertaV2)
        XCTAssertEqual(config.encoder.hiddenSize, 64)
        XCTAssertEqual(config.encoder.maxSequenceLength, 256)
        XCTAssertEqual(config.encoder.deberta?.positionBuckets, 256)
        XCTAssertTrue(config.heads.hasMaskedLMHead)
        XCTAssertEqual(config.heads.task?.labels, ["entailment", "neutral", "contradiction"])
        XCTAssertEqual(config.heads.task?.poolerActivation, .gelu)
        XCTAssertEqual(config.heads.sentence.prompts, ["query": "query: "])
        XCTAssertEqual(config.heads.colbertDimension, 8)
        XCTAssertEqual(config.embeddingDimension, 32)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("flat-config-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try config.write(to: folder.appendingPathComponent("config.json"))
        let written = try JSONSerialization.jsonObject(with: Data(contentsOf: folder.appendingPathComponent("config.json"))) as? NSDictionary
        let original = try JSONSerialization.jsonObject(with: Data(flat.utf8)) as? NSDictionary
        XCTAssertEqual(written, original)
        XCTAssertEqual(try ModelConfig.load(from: folder.appendingPathComponent("config.json")), config)
    }
}
