#if Server  // the package trait (Package.swift); without it this target is empty
import Foundation
import SwiftBERT

/// A refused or failed request: status, message, and the error shape of the route's API.
struct APIError: Error {
    var status: Int
    var message: String
    /// OpenAI's `type` (invalid_request_error, ...); TEI's `error_type` is derived from status.
    var type: String
    var code, param: String?
    var retryAfter: Int?
    /// The answer ends the connection (`Connection: close`): the request was not read to its end.
    var closesConnection = false

    static func invalid(_ message: String, param: String? = nil, status: Int = 422) -> APIError {
        APIError(status: status, message: message, type: "invalid_request_error", code: nil, param: param)
    }

    static func unknownModel(_ name: String, available: [String]) -> APIError {
        APIError(status: 404, message: "The model `\(name)` does not exist on this server; it serves: \(available.joined(separator: ", ")).",
                 type: "invalid_request_error", code: "model_not_found", param: "model")
    }

    static func overloaded(_ message: String) -> APIError {
        APIError(status: 503, message: message, type: "server_overloaded", code: "overloaded", retryAfter: 1)
    }

    /// The request was not answered within --request-timeout of its body's arrival.
    static func timedOut(_ timeout: Duration) -> APIError {
        overloaded("the request was not answered within \(timeout.seconds) s (--request-timeout, counted from its body's arrival: decoding, tokenising and waiting for the model) and was not processed; retrying is safe, and a request with fewer or shorter texts takes less time")
    }
}

/// Which API's error JSON a route answers with.
enum ErrorShape {
    /// {"error": {"message", "type", "param", "code"}}
    case openAI
    /// {"error": "...", "error_type": "..."}
    case tei

    func body(_ error: APIError) -> [UInt8] {
        let json = JSONWriter()
        switch self {
        case .openAI:
            json.object {
                json.key("error")
                json.object {
                    json.key("message"); json.string(error.message)
                    json.key("type"); json.string(error.type)
                    json.key("param"); error.param.map { json.string($0) } ?? json.null()
                    json.key("code"); error.code.map { json.string($0) } ?? json.null()
                }
            }
        case .tei:
            let type: String
            switch error.status {
            case 503, 429: type = "Overloaded"
            case 401: type = "Unauthorized"
            case 404: type = "NotFound"
            case 400..<500: type = "Validation"
            default: type = "Backend"
            }
            json.object {
                json.key("error"); json.string(error.message)
                json.key("error_type"); json.string(type)
            }
        }
        return json.bytes
    }
}

/// Decodes a request body, turning decoder errors into messages that name the field: bad JSON
/// syntax is 400, a wrong shape 422.
func decodeBody<T: Decodable>(_ type: T.Type, from data: [UInt8]) throws -> T {
    guard !data.isEmpty else { throw APIError.invalid("the request body is empty; send a JSON object", status: 400) }
    do {
        let value = try JSONDecoder().decode(T.self, from: Data(data))
        // Foundation takes `[1,]` and `{"a":1,}`; JSON, Python's json and TEI's serde do not.
        if let comma = trailingComma(in: data) {
            throw APIError.invalid("the request body is not valid JSON: a comma before a closing bracket at byte \(comma + 1); remove it", status: 400)
        }
        // Foundation keeps the first of two equal keys, Python's json the last, and TEI's serde
        // refuses them: a proxy that checked one value must not see us use the other.
        if let key = duplicateKey(in: data) {
            throw APIError.invalid("the body names \"\(printable(key))\" twice in one object; send each field once", param: key)
        }
        return value
    } catch let error as DecodingError {
        // Foundation refuses a string with a lone surrogate escape as if the field had the wrong
        // type; name the escape instead.
        let lone = loneSurrogateEscapes(in: data)
        if let first = lone.first, !isSyntaxError(error, body: data, loneSurrogates: lone) {
            let field = fieldPath(error)
            let escape = String(decoding: data[first..<(first + 6)], as: UTF8.self)
            throw APIError.invalid((field.isEmpty ? "" : "`\(field)`: ") + "the string escape \(escape) at byte \(first + 1) is half of a UTF-16 surrogate pair, "
                + "which is no Unicode character; write a character beyond U+FFFF as both halves (\\ud83d\\ude00) or as UTF-8", param: field)
        }
        throw describe(error, body: data, schema: (T.self as? any Documented.Type)?.schema)
    } catch let error as APIError {
        throw error
    }
}

/// The first field where `value` holds a number that `schema` says is an integer but is not a
/// whole number within Int's range ("dimensions", "documents[2]"); nil when there is none.
func fieldWithNonInteger(_ value: Any, schema: Schema, path: String = "") -> (field: String, value: String)? {
    switch schema {
    case .integer:
        guard let number = value as? NSNumber else { return nil }
        let double = number.doubleValue
        let whole = double.rounded() == double && double >= -9.2e18 && double <= 9.2e18
        return whole ? nil : (path, number.stringValue)
    case let .array(items), let .nonEmptyArray(items):
        guard let list = value as? [Any] else { return nil }
        for (index, item) in list.enumerated() {
            if let found = fieldWithNonInteger(item, schema: items, path: "\(path)[\(index)]") { return found }
        }
        return nil
    case let .object(properties):
        guard let object = value as? [String: Any] else { return nil }
        for (name, property, _) in properties {
            if let item = object[name], let found = fieldWithNonInteger(item, schema: property, path: path.isEmpty ? name : "\(path).\(name)") {
                return found
            }
        }
        return nil
    case .string, .number, .boolean, .oneOf, .ref, .nullable, .enumeration, .pattern:
        // A oneOf (texts or token ids) reports its own shape error; the rest hold no integer.
        return nil
    }
}

private func describe(_ error: DecodingError, body: [UInt8], schema: Schema?) -> APIError {
    // Foundation's JSONDecoder reports a number that does not fit the field's type (4.5 or 1e30
    // for an Int) as invalid JSON at the root, naming no field: parse the body again to tell
    // the two apart, and find the field from the request's schema.
    if case let .dataCorrupted(context) = error, context.codingPath.isEmpty,
       let value = try? JSONSerialization.jsonObject(with: Data(body), options: [.fragmentsAllowed]) {
        if let schema, let (field, number) = fieldWithNonInteger(value, schema: schema) {
            return .invalid("`\(field)` must be a whole number (an integer); got \(number)", param: field)
        }
        return .invalid("a number in the body does not fit its field (a fraction or an out-of-range value where a whole number is needed)")
    }
    if case let .dataCorrupted(context) = error, context.codingPath.isEmpty, let limit = beyondParserLimits(body) {
        return .invalid("the request body cannot be read: \(limit)", status: 400)
    }
    return describe(error)
}

/// What JSON's grammar allows but Foundation's parser refuses, reporting it only as invalid
/// JSON: objects and arrays nested deeper than 512 levels, and a number beyond a 64-bit float
/// (1e400). nil when the body has neither (then it is invalid JSON).
func beyondParserLimits(_ body: [UInt8]) -> String? {
    let maximumDepth = 512
    var depth = 0
    var i = 0
    while i < body.count {
        switch body[i] {
        case UInt8(ascii: "["), UInt8(ascii: "{"):
            depth += 1
            if depth > maximumDepth {
                return "its objects and arrays are nested more than \(maximumDepth) levels deep at byte \(i + 1); nest at most \(maximumDepth) levels"
            }
        case UInt8(ascii: "]"), UInt8(ascii: "}"):
            depth -= 1
        case UInt8(ascii: "\""):
            var end = i + 1
            while end < body.count, body[end] != UInt8(ascii: "\"") { end += body[end] == UInt8(ascii: "\\") ? 2 : 1 }
            i = end
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            var end = i + 1
            while end < body.count, "0123456789.eE+-".utf8.contains(body[end]) { end += 1 }
            let literal = String(decoding: body[i..<end], as: UTF8.self)
            if let value = Double(literal), value.isInfinite {
                return "the number \(printable(literal)) at byte \(i + 1) is beyond the range of a 64-bit float (about ±1.8e308); send a number within it"
            }
            i = end - 1
        default:
            break
        }
        i += 1
    }
    return nil
}

/// A coding path as the API's messages write it: "documents[2].text".
private func path(_ context: DecodingError.Context) -> String {
    context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined().drop { $0 == "." }.description
}

/// The field a decoding error is about ("" for the body itself).
private func fieldPath(_ error: DecodingError) -> String {
    switch error {
    case let .dataCorrupted(context), let .keyNotFound(_, context), let .typeMismatch(_, context), let .valueNotFound(_, context):
        return path(context)
    @unknown default:
        return ""
    }
}

/// The first key that an object of a valid JSON text holds twice (escapes decoded, so "\u0069d"
/// is "id"); nil when every object's keys differ.
func duplicateKey(in body: [UInt8]) -> String? {
    var objects: [Set<String>?] = []  // per open bracket: an object's keys so far, nil for an array
    var expectsKey = false
    var i = 0
    while i < body.count {
        switch body[i] {
        case UInt8(ascii: "{"): objects.append([]); expectsKey = true
        case UInt8(ascii: "["): objects.append(nil); expectsKey = false
        case UInt8(ascii: "}"), UInt8(ascii: "]"): _ = objects.popLast(); expectsKey = false
        case UInt8(ascii: ","): expectsKey = objects.last.map { $0 != nil } ?? false
        case UInt8(ascii: "\""):
            var end = i + 1
            while end < body.count, body[end] != UInt8(ascii: "\"") { end += body[end] == UInt8(ascii: "\\") ? 2 : 1 }
            if expectsKey, end < body.count {
                let quoted = body[i...end]
                let key = quoted.contains(UInt8(ascii: "\\")) ? (try? JSONDecoder().decode(String.self, from: Data(quoted))) ?? ""
                                                                : String(decoding: quoted.dropFirst().dropLast(), as: UTF8.self)
                if objects[objects.count - 1]?.insert(key).inserted == false { return key }
                expectsKey = false
            }
            i = end
        default: break
        }
        i += 1
    }
    return nil
}

/// The offset of the first comma followed (after white space) by `]` or `}`, outside strings.
func trailingComma(in body: [UInt8]) -> Int? {
    var comma: Int?
    var i = 0
    while i < body.count {
        switch body[i] {
        case UInt8(ascii: ","): comma = i
        case UInt8(ascii: "]"), UInt8(ascii: "}"): if let comma { return comma }
        case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"): break
        case UInt8(ascii: "\""):
            comma = nil
            var end = i + 1
            while end < body.count, body[end] != UInt8(ascii: "\"") { end += body[end] == UInt8(ascii: "\\") ? 2 : 1 }
            i = end
        default: comma = nil
        }
        i += 1
    }
    return nil
}

/// Where a JSON text has a `\uXXXX` escape that is a surrogate without its other half: the
/// offset of each one's backslash. Escapes are read left to right, so an escaped backslash
/// (`\\u…`) is not taken for one; outside strings valid JSON has no backslash.
func loneSurrogateEscapes(in body: [UInt8]) -> [Int] {
    func unit(at i: Int) -> UInt16? {
        guard i + 5 < body.count, body[i] == UInt8(ascii: "\\"), body[i + 1] == UInt8(ascii: "u") else { return nil }
        var value: UInt16 = 0
        for byte in body[(i + 2)...(i + 5)] {
            guard let digit = Character(Unicode.Scalar(byte)).hexDigitValue else { return nil }
            value = value << 4 | UInt16(digit)
        }
        return value
    }
    var found: [Int] = []
    var i = 0
    while i < body.count {
        guard body[i] == UInt8(ascii: "\\") else { i += 1; continue }
        guard let value = unit(at: i) else { i += 2; continue }
        if (0xD800...0xDBFF).contains(value), let next = unit(at: i + 6), (0xDC00...0xDFFF).contains(next) { i += 12; continue }
        if (0xD800...0xDFFF).contains(value) { found.append(i) }
        i += 6
    }
    return found
}

/// Whether a decoding error at the body's root is bad JSON syntax even with its lone surrogate
/// escapes made U+FFFD (Foundation reports a lone surrogate outside our own decoders at the root).
private func isSyntaxError(_ error: DecodingError, body: [UInt8], loneSurrogates: [Int]) -> Bool {
    guard case let .dataCorrupted(context) = error, context.codingPath.isEmpty else { return false }
    var repaired = body
    for offset in loneSurrogates { repaired.replaceSubrange((offset + 2)..<(offset + 6), with: Array("fffd".utf8)) }
    return (try? JSONSerialization.jsonObject(with: Data(repaired), options: [.fragmentsAllowed])) == nil
}

private func describe(_ error: DecodingError) -> APIError {
    switch error {
    case let .dataCorrupted(context) where context.codingPath.isEmpty:
        let detail = (context.underlyingError as NSError?)?.userInfo[NSDebugDescriptionErrorKey] as? String
        return .invalid("the request body is not valid JSON" + (detail.map { ": \($0)" } ?? ""), status: 400)
    case let .dataCorrupted(context):
        return .invalid("`\(path(context))`: \(context.debugDescription)", param: path(context))
    case let .keyNotFound(key, context):
        let field = (path(context).isEmpty ? "" : path(context) + ".") + key.stringValue
        return .invalid("`\(field)` is required", param: field)
    case let .typeMismatch(type, context):
        let wanted = context.debugDescription.isEmpty ? "a value of type \(type)" : context.debugDescription
        return .invalid(path(context).isEmpty ? "the body must be a JSON object" : "`\(path(context))`: \(wanted)", param: path(context))
    case let .valueNotFound(_, context):
        guard !path(context).isEmpty else { return .invalid("the body is null; send a JSON object") }
        return .invalid("`\(path(context))` must not be null", param: path(context))
    @unknown default:
        return .invalid("the request does not have the expected shape")
    }
}

/// `input` of /v1/embeddings and `inputs` of /embed: a text, texts, token ids, or lists of token ids.
enum EmbeddingInput: Decodable, Sendable {
    case texts([String])
    case tokenIDs([[Int]])

    init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let text = try? container.decode(String.self) { self = .texts([text]); return }
        if let texts = try? container.decode([String].self) { self = .texts(texts); return }
        if let ids = try? container.decode([Int].self) { self = .tokenIDs([ids]); return }
        if let lists = try? container.decode([[Int]].self) { self = .tokenIDs(lists); return }
        throw DecodingError.typeMismatch(EmbeddingInput.self, .init(codingPath: decoder.codingPath, debugDescription:
            "must be a string, an array of strings, an array of token ids, or an array of arrays of token ids"))
    }

    var count: Int {
        switch self {
        case let .texts(t): return t.count
        case let .tokenIDs(t): return t.count
        }
    }
}

/// `inputs` of the TEI routes that take text only: one text or several.
struct TextInputs: Decodable, Sendable {
    var texts: [String]
    var single: Bool

    init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let text = try? container.decode(String.self) { texts = [text]; single = true; return }
        if let list = try? container.decode([String].self) { texts = list; single = false; return }
        throw DecodingError.typeMismatch(TextInputs.self, .init(codingPath: decoder.codingPath, debugDescription:
            "must be a string or an array of strings"))
    }
}

/// `inputs` of /predict, as TEI reads it: a text; a pair ["text", "text pair"]; or a batch of
/// texts and pairs.
struct PredictInputs: Decodable, Sendable {
    var items: [(text: String, pair: String?)]
    var single: Bool

    init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let text = try? container.decode(String.self) { items = [(text, nil)]; single = true; return }
        if let list = try? container.decode([String].self) {
            // TEI: two strings are one pair; any other count is a batch of texts.
            (items, single) = list.count == 2 ? ([(list[0], list[1])], true) : (list.map { ($0, nil) }, false)
            return
        }
        if let batch = try? container.decode([PredictItem].self) { items = batch.map { ($0.text, $0.pair) }; single = false; return }
        throw DecodingError.typeMismatch(PredictInputs.self, .init(codingPath: decoder.codingPath, debugDescription:
            "must be a text, a pair [text, text_pair], or an array of texts and pairs"))
    }

    private struct PredictItem: Decodable, Sendable {
        var text: String
        var pair: String?
        init(from decoder: Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let text = try? container.decode(String.self) { (self.text, pair) = (text, nil); return }
            if let list = try? container.decode([String].self), (1...2).contains(list.count) {
                (text, pair) = (list[0], list.count == 2 ? list[1] : nil); return
            }
            throw DecodingError.typeMismatch(PredictItem.self, .init(codingPath: decoder.codingPath, debugDescription:
                "each item must be a text or a pair [text, text_pair]"))
        }
    }
}

/// A document of /v1/rerank: a text, or an object with a "text" field (Cohere, Jina).
struct RerankDocument: Decodable, Sendable {
    var text: String

    init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let text = try? container.decode(String.self) { self.text = text; return }
        struct Object: Decodable { var text: String }
        if let object = try? container.decode(Object.self) { text = object.text; return }
        throw DecodingError.typeMismatch(RerankDocument.self, .init(codingPath: decoder.codingPath, debugDescription:
            "each document must be a string or an object with a \"text\" field"))
    }
}

/// `ids` of /decode: one list of token ids or several.
struct TokenIdLists: Decodable, Sendable {
    var lists: [[Int]]

    init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let ids = try? container.decode([Int].self) { lists = [ids]; return }
        if let lists = try? container.decode([[Int]].self) { self.lists = lists; return }
        throw DecodingError.typeMismatch(TokenIdLists.self, .init(codingPath: decoder.codingPath, debugDescription:
            "must be an array of token ids or an array of arrays of token ids"))
    }
}

struct OpenAIEmbeddingRequest: Decodable, Sendable {
    var input: EmbeddingInput
    var model, encoding_format, user: String?
    var dimensions: Int?
    /// Not in OpenAI's API: false refuses inputs over the model's limit instead of cutting them.
    var truncate: Bool?
}

struct TEIEmbedRequest: Decodable, Sendable {
    var inputs: EmbeddingInput
    var normalize, truncate: Bool?
    var truncation_direction, prompt_name: String?
    var dimensions: Int?
    /// Not in TEI's API (one model per TEI process): which of this server's models.
    var model: String?
    /// Not in TEI's API: long texts cut into chunks of at most `chunk` tokens, consecutive
    /// chunks sharing at most `overlap`; `chunk_pooling` "none" (a record per chunk) or "mean".
    var chunk, overlap: Int?
    var chunk_pooling: String?

    var chunks: Bool { chunk != nil || overlap != nil || chunk_pooling != nil }
}

/// A TEI text route's request: its own `inputs`, and the options every such route takes.
struct TEIRequest<Inputs: Decodable & Sendable>: Decodable, Sendable {
    var inputs: Inputs
    var truncate: Bool?
    var truncation_direction, prompt_name: String?
    var model: String?
}

/// /embed_sparse, /embed_multi_vector and /embed_all.
typealias TEITokenRequest = TEIRequest<TextInputs>

/// What every text route's request has: texts, truncation, a prompt name, a model.
protocol TextRouteRequest: Decodable, Sendable {
    var inputs: TextInputs { get }
    var truncate: Bool? { get }
    var truncation_direction: String? { get }
    var prompt_name: String? { get }
    var model: String? { get }
}
extension TEIRequest: TextRouteRequest where Inputs == TextInputs {}
extension OutputsRequest: TextRouteRequest {}
/// /similarity.
typealias SimilarityRequest = TEIRequest<SimilarityInputs>

/// `encoding_format` of /v1/embeddings: JSON numbers, or base64 of little-endian float32.
enum EncodingFormat: String, CaseIterable {
    case float, base64
}

/// An output /embed_outputs can give, by its name in the request and the answer.
enum OutputName: String, CaseIterable {
    case dense, sparse, multi_vector

    var output: RetrievalOutputs {
        switch self {
        case .dense: return .dense
        case .sparse: return .sparse
        case .multi_vector: return .multiVector
        }
    }
}

/// The names of a string enumeration's cases, in order, for messages and the schema.
func names<Choice: RawRepresentable & CaseIterable>(of _: Choice.Type) -> [String] where Choice.RawValue == String {
    Choice.allCases.map(\.rawValue)
}

/// `value` as one of `Choice`'s cases, or a 422 that names the field and every choice.
func choice<Choice: RawRepresentable & CaseIterable>(_ value: String, of _: Choice.Type, param: String) throws -> Choice where Choice.RawValue == String {
    guard let choice = Choice(rawValue: value) else {
        let choices = names(of: Choice.self).map { "\"\($0)\"" }.joined(separator: ", ")
        throw APIError.invalid("\(param) must be one of \(choices); got \"\(printable(value))\"", param: param)
    }
    return choice
}

/// /embed_outputs: the options of /embed_sparse, with the outputs to give and the dense
/// vector's normalisation.
struct OutputsRequest: Decodable, Sendable {
    var inputs: TextInputs
    /// `OutputName`s: one forward pass gives all that are named.
    var outputs: [String]
    var normalize, truncate: Bool?
    var truncation_direction, prompt_name: String?
    var model: String?
}

/// `inputs` of /similarity.
struct SimilarityInputs: Decodable, Sendable {
    var source_sentence: String
    var sentences: [String]
}

struct PredictRequest: Decodable, Sendable {
    var inputs: PredictInputs
    var raw_scores, truncate: Bool?
    var truncation_direction: String?
    var model: String?
}

struct RerankRequest: Decodable, Sendable {
    var query: String
    var texts: [String]
    var raw_scores, return_text, truncate: Bool?
    var truncation_direction: String?
    var model: String?
}

struct CohereRerankRequest: Decodable, Sendable {
    var query: String
    var documents: [RerankDocument]
    var top_n: Int?
    var return_documents: Bool?
    var model: String?
}

/// Cohere's v2 rerank: documents are strings; `model` is required by Cohere, optional here.
struct CohereV2RerankRequest: Decodable, Sendable {
    var query: String
    var documents: [String]
    var top_n, max_tokens_per_doc: Int?
    var model: String?
}

/// Cohere's embed (v1 and v2): `texts` with an `input_type`, answered in the `embedding_types`
/// asked for. `model` and `input_type` are required by Cohere, optional here.
struct CohereEmbedRequest: Decodable, Sendable {
    var texts, images, embedding_types: [String]?
    var model, input_type, truncate: String?
    var max_tokens, output_dimension: Int?
}

/// Cohere's input_type: what the texts are for, each a `TextRole` (the model's prompt for it).
enum CohereInputType: String, CaseIterable {
    case search_query, search_document, classification, clustering

    var role: TextRole {
        switch self {
        case .search_query: .query
        case .search_document: .document
        case .classification: .classification
        case .clustering: .clustering
        }
    }
}

/// Cohere's embedding_types: floats, their little-endian bytes in base64, or the signs packed
/// 8 to a byte (sentence-transformers' binary quantisation: ubinary the bytes, binary each
/// minus 128); int8 and uint8 in 255 steps per dimension between the ranges of `bert serve
/// --calibration`, refused without them (`Endpoints.cohereEmbed` says why).
enum CohereEmbeddingType: String, CaseIterable {
    case float, int8, uint8, binary, ubinary, base64

    /// The library's quantisation of the byte types; nil for the floats and their base64.
    var stored: EmbeddingType? {
        switch self {
        case .int8: .int8
        case .uint8: .uint8
        case .binary: .binary
        case .ubinary: .ubinary
        case .float, .base64: nil
        }
    }
}

/// Cohere's truncate: cut a long text's end (END, the default) or start, or refuse it (NONE).
enum CohereTruncate: String, CaseIterable {
    case NONE, START, END
}

struct DecodeRequest: Decodable, Sendable {
    var ids: TokenIdLists
    var skip_special_tokens: Bool?
    var model: String?
}

struct TokenizeRequest: Decodable, Sendable {
    var inputs: TextInputs
    var add_special_tokens: Bool?
    var prompt_name: String?
    var model: String?
}

struct FillRequest: Decodable, Sendable {
    var inputs: String
    var top_k: Int?
    var words_only: Bool?
    var model: String?
}

// MARK: - The request schemas of /openapi.json, beside the types they describe

private let textsSchema = Schema.oneOf([.string, .array(.string)])
private let textsOrIds = Schema.oneOf([.string, .array(.string), .array(.integer), .array(.array(.integer))])
/// "Left" or "Right", in any case (`Endpoints.truncatesLeft`).
private let truncationDirection = Schema.pattern("^([Ll][Ee][Ff][Tt]|[Rr][Ii][Gg][Hh][Tt])$", meaning: "\"Left\" | \"Right\" (any case)")

extension OpenAIEmbeddingRequest: Documented {
    static let schema = Schema.object([("input", textsOrIds, true), ("model", .string, false), ("encoding_format", .enumeration(names(of: EncodingFormat.self)), false),
                                       ("dimensions", .integer, false), ("user", .string, false), ("truncate", .boolean, false)])
}
extension TEIEmbedRequest: Documented {
    static let schema = Schema.object([("inputs", textsOrIds, true), ("normalize", .boolean, false), ("truncate", .boolean, false),
                                       ("truncation_direction", truncationDirection, false), ("prompt_name", .string, false),
                                       ("dimensions", .integer, false), ("model", .string, false),
                                       ("chunk", .integer, false), ("overlap", .integer, false), ("chunk_pooling", .enumeration(names(of: ChunkPooling.self)), false)])
}
/// What a TEIRequest's `inputs` look like.
protocol DocumentedInputs {
    static var schema: Schema { get }
}
extension TextInputs: DocumentedInputs {
    static var schema: Schema { textsSchema }
}
extension SimilarityInputs: DocumentedInputs {
    static var schema: Schema { .object([("source_sentence", .string, true), ("sentences", .nonEmptyArray(.string), true)]) }
}
extension OutputsRequest: Documented {
    static var schema: Schema {
        .object([("inputs", textsSchema, true), ("outputs", .nonEmptyArray(.enumeration(names(of: OutputName.self))), true), ("normalize", .boolean, false),
                 ("truncate", .boolean, false), ("truncation_direction", truncationDirection, false), ("prompt_name", .string, false),
                 ("model", .string, false)])
    }
}
extension TEIRequest: Documented where Inputs: DocumentedInputs {
    static var schema: Schema {
        .object([("inputs", Inputs.schema, true), ("truncate", .boolean, false), ("truncation_direction", truncationDirection, false),
                 ("prompt_name", .string, false), ("model", .string, false)])
    }
}
extension PredictRequest: Documented {
    static let schema = Schema.object([("inputs", .oneOf([.string, .array(.string), .array(.oneOf([.string, .array(.string)]))]), true),
                                       ("raw_scores", .boolean, false), ("truncate", .boolean, false),
                                       ("truncation_direction", truncationDirection, false), ("model", .string, false)])
}
extension RerankRequest: Documented {
    static let schema = Schema.object([("query", .string, true), ("texts", .array(.string), true), ("raw_scores", .boolean, false),
                                       ("return_text", .boolean, false), ("truncate", .boolean, false),
                                       ("truncation_direction", truncationDirection, false), ("model", .string, false)])
}
extension CohereRerankRequest: Documented {
    static let schema = Schema.object([("query", .string, true), ("documents", .array(.oneOf([.string, .object([("text", .string, true)])])), true),
                                       ("top_n", .integer, false), ("return_documents", .boolean, false), ("model", .string, false)])
}
extension CohereV2RerankRequest: Documented {
    static let schema = Schema.object([("query", .string, true), ("documents", .array(.string), true), ("top_n", .integer, false),
                                       ("max_tokens_per_doc", .integer, false), ("model", .string, false)])
}
extension CohereEmbedRequest: Documented {
    static let schema = Schema.object([("texts", .nonEmptyArray(.string), true), ("input_type", .enumeration(names(of: CohereInputType.self)), false),
                                       ("embedding_types", .nonEmptyArray(.enumeration(names(of: CohereEmbeddingType.self))), false),
                                       ("truncate", .pattern("^([Nn][Oo][Nn][Ee]|[Ss][Tt][Aa][Rr][Tt]|[Ee][Nn][Dd])$", meaning: "\"NONE\" | \"START\" | \"END\" (any case)"), false), ("max_tokens", .integer, false),
                                       ("output_dimension", .integer, false), ("model", .string, false)])
}
extension DecodeRequest: Documented {
    static let schema = Schema.object([("ids", .oneOf([.array(.integer), .array(.array(.integer))]), true),
                                       ("skip_special_tokens", .boolean, false), ("model", .string, false)])
}
extension TokenizeRequest: Documented {
    static let schema = Schema.object([("inputs", textsSchema, true), ("add_special_tokens", .boolean, false),
                                       ("prompt_name", .string, false), ("model", .string, false)])
}
extension FillRequest: Documented {
    static let schema = Schema.object([("inputs", .string, true), ("top_k", .integer, false), ("words_only", .boolean, false),
                                       ("model", .string, false)])
}

/// A small JSON writer: responses are mostly long float arrays, written straight into bytes.
/// A class, so that the closures of `object` and `array` can write into the same writer.
final class JSONWriter {
    // Unchecked: only this class's methods touch them, none while another runs, and the runtime
    // checks of a class's stored properties took a third of writing /tokenize's answer.
    @exclusivity(unchecked) private(set) var bytes: [UInt8] = []
    @exclusivity(unchecked) private var needsComma = [false]

    init(capacity: Int = 256) { bytes.reserveCapacity(capacity) }

    private func separate() {
        if needsComma[needsComma.count - 1] { bytes.append(UInt8(ascii: ",")) }
        needsComma[needsComma.count - 1] = true
    }

    func object(_ body: () throws -> Void) rethrows {
        separate(); bytes.append(UInt8(ascii: "{")); needsComma.append(false)
        try body()
        needsComma.removeLast(); bytes.append(UInt8(ascii: "}"))
    }

    func array(_ body: () throws -> Void) rethrows {
        separate(); bytes.append(UInt8(ascii: "[")); needsComma.append(false)
        try body()
        needsComma.removeLast(); bytes.append(UInt8(ascii: "]"))
    }

    /// A key, then its value (the next call) without a comma between.
    func key(_ name: String) {
        string(name)
        bytes.append(UInt8(ascii: ":"))
        needsComma[needsComma.count - 1] = false
    }

    /// Escaped as every JSON output of SwiftBERT is (`appendJSONString`).
    func string(_ value: String) {
        separate()
        appendJSONString(value, to: &bytes)
    }

    /// In decimal, written in place (no String per number).
    func number(_ value: Int) {
        separate()
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        let start = bytes.count
        var rest = value.magnitude
        repeat {
            bytes.append(UInt8(ascii: "0") + UInt8(rest % 10))
            rest /= 10
        } while rest > 0
        bytes[start...].reverse()
    }

    /// Shortest text that reads back as the same Float; non-finite values (which JSON cannot hold) as null.
    func number(_ value: Float) {
        separate()
        appendJSONNumber(value, to: &bytes)
    }

    func bool(_ value: Bool) { separate(); bytes.append(contentsOf: (value ? "true" : "false").utf8) }
    func null() { separate(); bytes.append(contentsOf: "null".utf8) }

    func floats(_ values: [Float]) {
        array { for v in values { number(v) } }
    }

    /// A sparse vector as TEI's /embed_sparse writes it: [{"index": id, "value": w}, ...].
    func sparse(_ vector: SparseVector) {
        array {
            for (index, value) in zip(vector.indices, vector.values) {
                object { key("index"); number(Int(index)); key("value"); number(value) }
            }
        }
    }
}
#endif
