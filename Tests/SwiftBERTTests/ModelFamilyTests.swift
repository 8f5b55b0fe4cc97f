import Foundation
import XCTest
@testable import SwiftBERT

/// `ModelFamilies.all` is the one table of architectures: the converter reads a Hugging Face
/// config.json through it, and `loadEncoder` loads a converted folder through it.
final class ModelFamilyTests: XCTestCase {
    /// Every architecture belongs to exactly one family.
    func testEveryArchitectureHasOneFamily() {
        for architecture in Architecture.allCases {
            let families = ModelFamilies.all.filter { $0.variants.contains(architecture) }.map(\.name)
            XCTAssertEqual(families.count, 1, "\(architecture.displayName): \(families)")
        }
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
}
