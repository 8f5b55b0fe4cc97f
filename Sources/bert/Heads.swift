import ArgumentParser
import Foundation
import SwiftBERT
import SwiftBERTCommandLine

extension AggregationStrategy: ExpressibleByArgument {}

/// Every text of the input (arguments, --input FILE or stdin), read whole, with its place in
/// the input: classification and NER keep one output record per input record, in order, and
/// name its index, so that records skipped by --skip-invalid leave gaps rather than shift lines.
struct InputTexts {
    var texts: [String]
    var indices: [Int]
    let skips: SkipReport
    let source: String
}

func readAllTexts(_ input: InputOptions, expected: ExpectedInput) throws -> InputTexts {
    let skips = SkipReport()
    let reader = try input.plan.reader(report: skips)
    let records = try reader.readAll()
    guard !records.isEmpty else { throw StreamError.emptyInput(source: reader.sourceName, skipped: reader.skippedCount, expected: expected) }
    return InputTexts(texts: records.map(\.text), indices: records.map(\.index), skips: skips, source: reader.sourceName)
}

/// Runs `results` over every text `read` (the pipeline batches them itself, so an error names
/// the input by its place in the whole input), and writes one record per text, in input order:
/// a JSON line `{"index": i, ...}` (the fields of `jsonFields`), or `text`'s rendering. Then the
/// count of texts that `model` cut to its limit, each paired with `pair` if given.
func writeRecords<Record>(of read: InputTexts, json: Bool, truncatedBy model: LoadedModel,
                          pairedWith pair: String? = nil, _ results: ([String]) throws -> [Record],
                          jsonFields: (Record) -> [(String, OrderedJSON)], text: (Record) -> String) throws {
    let sink = OutputSink.standardOutput()
    for (index, record) in zip(read.indices, try results(read.texts)) {
        try sink.write(json ? OrderedJSON.object([("index", .int(index))] + jsonFields(record)).text + "\n" : text(record))
    }
    try sink.close()
    read.skips.summarize(source: read.source)
    reportTruncation(truncatedCount(model, read.texts, pairs: pair.map { Array(repeating: $0, count: read.texts.count) }),
                     of: read.texts.count, limit: model.encoder.config.encoder.maxSequenceLength)
}

/// How many of `texts` (each with its pair, if any) are longer than the model's limit, so that
/// the classifiers cut them. They return no such count: the texts are tokenized again, which
/// costs little beside the forward passes.
func truncatedCount(_ model: LoadedModel, _ texts: [String], pairs: [String]? = nil) -> Int {
    let limit = model.encoder.config.encoder.maxSequenceLength
    return texts.indices.count { model.tokenizer.encode(texts[$0], pair: pairs?[$0], maxLength: limit).wasTruncated }
}

struct Classify: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Label texts with a sequence classifier (sentiment, topic, ...).",
        discussion: """
            The model is a converted BertForSequenceClassification or DistilBertForSequenceClassification \
            checkpoint; labels come from its id2label. Scores are softmax probabilities, or one sigmoid \
            per label when its problem_type is multi_label_classification, as Hugging Face's \
            text-classification pipeline gives them. Same inputs as embed.

            With --labels, any labels, through an NLI classifier (one with an entailment label, \
            such as a DeBERTa-v3 trained on MNLI): each text against "This example is {label}." \
            (--hypothesis-template), scored as Hugging Face's zero-shot-classification pipeline does.

            Examples:
              bert classify --model weights/my-sentiment "What a lovely day."
              bert classify --model M --json --top-k 1 --input reviews.txt
              bert classify --model weights/deberta-v3-mnli --labels sports,politics,cooking "The match went to penalties."
            """)

    @OptionGroup var input: InputOptions

    @Option(help: "A converted sequence-classification model: a name under weights/ or a path.") var model: String

    @Option(name: .customLong("top-k"), help: "Labels per input, best first (default: all).") var topK: Int?

    @Flag(help: "JSON Lines: {\"labels\": [{\"label\", \"score\"}]} per input, best first.") var json = false

    @Option(help: ArgumentHelp("Zero-shot: these labels, comma-separated, through an NLI classifier.", valueName: "labels"))
    var labels: String?

    @Option(name: .customLong("hypothesis-template"), help: "Zero-shot: the hypothesis each label goes into at {}.")
    var hypothesisTemplate = ZeroShotClassifier.defaultTemplate

    @Flag(name: .customLong("multi-label"), help: "Zero-shot: score each label on its own (entailment against contradiction), not across labels.")
    var multiLabel = false

    @OptionGroup var batch: BatchOptions

    @OptionGroup var engine: EngineOptions

    /// The --labels list, blanks dropped.
    var candidates: [String]? {
        labels.map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty } }
    }

    func validate() throws {
        if let topK, topK < 1 { throw ValidationError("--top-k must be at least 1") }
        if let candidates, candidates.isEmpty { throw ValidationError("--labels needs at least one label, comma-separated") }
        if labels == nil, multiLabel || hypothesisTemplate != ZeroShotClassifier.defaultTemplate {
            throw ValidationError("--multi-label and --hypothesis-template go with --labels (zero-shot classification)")
        }
        if !hypothesisTemplate.contains("{}") { throw ValidationError("--hypothesis-template needs {} where the label goes") }
    }

    func run() throws {
        // Read first, as embed does: an empty input fails before the model loads.
        let read = try readAllTexts(input, expected: .texts(to: "classify"))
        let loaded = try engine.load(model)
        let classifier = try TextClassifier(loaded)
        let classify: ([String]) throws -> [[LabelScore]]
        // Zero-shot pairs each text with every label's hypothesis: the longest one cuts first.
        let longestHypothesis = candidates.flatMap { candidates in
            ZeroShotClassifier.hypotheses(candidates, template: hypothesisTemplate).max { loaded.tokenizer.encode($0).count < loaded.tokenizer.encode($1).count }
        }
        if let candidates {
            let zeroShot = try ZeroShotClassifier(classifier: classifier)
            classify = { texts in
                try zeroShot.classify(texts, labels: candidates, template: hypothesisTemplate, multiLabel: multiLabel,
                                      batchSize: batch.batchSize, truncation: batch.truncation).map { Array($0.prefix(topK ?? $0.count)) }
            }
        } else {
            classify = { try classifier.classify($0, topK: topK, batchSize: batch.batchSize, truncation: batch.truncation) }
        }
        try writeRecords(of: read, json: json, truncatedBy: loaded, pairedWith: longestHypothesis, classify,
                         jsonFields: ClassificationReport.fields, text: { ClassificationReport.text($0) })
    }
}

struct Rerank: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Order documents by relevance to a query with a cross-encoder.",
        discussion: """
            The model is a converted cross-encoder: a BertForSequenceClassification with one label, fed \
            (query, document) pairs with token types 0 and 1. Scores are the sigmoid of its logit, as \
            sentence-transformers' CrossEncoder gives them.

            Examples:
              bert rerank --model weights/ms-marco-MiniLM "how do I reset it" "Hold the button 5 s." "It is blue."
              bert rerank --model M --documents docs.txt --top-k 3 --json "query"
            """)

    @Argument(help: "The query, then the documents (or give them with --documents).")
    var arguments: [String] = []

    @Option(help: ArgumentHelp("Read the documents from FILE, one per line (- is stdin).", valueName: "file"))
    var documents: String?

    @Option(help: "A converted cross-encoder: a name under weights/ or a path.") var model: String

    @Option(name: .customLong("top-k"), help: "Documents to show, best first (default: all).") var topK: Int?

    @Flag(help: "JSON: {\"query\", \"results\": [{\"index\", \"score\", \"text\"}]}, best first.") var json = false

    @OptionGroup var engine: EngineOptions

    func validate() throws {
        if arguments.isEmpty { throw ValidationError("give the query first") }
        if documents == nil, arguments.count < 2 { throw ValidationError("give documents after the query, or --documents FILE") }
        if documents != nil, arguments.count > 1 { throw ValidationError("give documents as arguments or with --documents, not both") }
        if let topK, topK < 1 { throw ValidationError("--top-k must be at least 1") }
    }

    func run() throws {
        let query = arguments[0]
        var docs = Array(arguments.dropFirst())
        if let documents {
            var options = try InputOptions.parse([])
            options.input = documents
            docs = try readAllTexts(options, expected: ExpectedInput("documents to rerank", advice: "give --documents a file of documents, one per line, or the documents as arguments after the query")).texts
        }
        let loaded = try engine.load(model)
        let reranker = try Reranker(loaded)
        let results = try reranker.rerank(query: query, documents: docs, topK: topK)
        let sink = OutputSink.standardOutput()
        try sink.write(json ? RerankReport.json(query: query, results).text + "\n" : RerankReport.text(results))
        try sink.close()
        reportTruncation(truncatedCount(loaded, Array(repeating: query, count: docs.count), pairs: docs),
                         of: docs.count, limit: loaded.encoder.config.encoder.maxSequenceLength)
    }
}

struct NER: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ner",
        abstract: "Find named entities (or any token labels) with a token classifier.",
        discussion: """
            The model is a converted BertForTokenClassification or DistilBertForTokenClassification \
            checkpoint. Tokens are grouped into entities with Hugging Face's aggregation strategies \
            (none, simple, first, average, max); offsets are in Unicode code points of the input, \
            [start, end). Same inputs as embed.

            Examples:
              bert ner --model weights/bert-ner "Angela Merkel visited Paris."
              bert ner --model M --aggregation first --json --input news.txt
            """)

    @OptionGroup var input: InputOptions

    @Option(help: "A converted token-classification model: a name under weights/ or a path.") var model: String

    @Option(help: "How tokens become entities: none, simple, first, average or max.")
    var aggregation: AggregationStrategy = .simple

    @Flag(help: "JSON Lines: {\"entities\": [{\"entity_group\", \"score\", \"word\", \"start\", \"end\"}]} per input.") var json = false

    @OptionGroup var batch: BatchOptions

    @OptionGroup var engine: EngineOptions

    func run() throws {
        let read = try readAllTexts(input, expected: .texts(to: "find entities in"))
        let loaded = try engine.load(model)
        let ner = try TokenClassifier(loaded)
        try writeRecords(of: read, json: json, truncatedBy: loaded, { try ner.entities($0, aggregation: aggregation, batchSize: batch.batchSize, truncation: batch.truncation) },
                         jsonFields: EntityReport.fields, text: { EntityReport.text($0) })
    }
}
