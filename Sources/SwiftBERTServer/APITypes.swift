#if Server  // the package trait (Package.swift); without it this target is empty
import Foundation

/// A refused or failed request: status, message, and the error shape of the route's API.
struct APIError: Error {
    var status: Int
    var message: String
    /// OpenAI's `type` (invalid_request_error, ...); TEI's `error_type` is derived from status.
    var type: String
    var code: String?
    var param: String?
    var retryAfter: Int?

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
            case 413, 422, 400: type = "Validation"
            case 401: type = "Unauthorized"
            case 404: type = "NotFound"
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
        return try JSONDecoder().decode(T.self, from: Data(data))
    } catch let error as DecodingError {
        throw describe(error)
    } catch let error as APIError {
        throw error
    }
}

private func describe(_ error: DecodingError) -> APIError {
    func path(_ context: DecodingError.Context) -> String {
        context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined().drop { $0 == "." }.description
    }
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
        return .invalid("`\(path(context))` must not be null", param: path(context))
    @unknown default:
        return .invalid("the request does not have the expected shape")
    }
}

/// `input` of /v1/embeddings: a text, texts, token ids, or lists of token ids.
enum EmbeddingInput: Decodable {
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

/// `inputs` of the TEI routes: one text or several.
struct TextInputs: Decodable {
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

struct OpenAIEmbeddingRequest: Decodable {
    var input: EmbeddingInput
    var model, encoding_format, user: String?
    var dimensions: Int?
    /// Not in OpenAI's API: false refuses inputs over the model's limit instead of cutting them.
    var truncate: Bool?
}

struct TEIEmbedRequest: Decodable {
    var inputs: TextInputs
    var normalize, truncate: Bool?
    var truncation_direction, prompt_name: String?
    var dimensions: Int?
    /// Not in TEI's API (one model per TEI process): which of this server's models.
    var model: String?
}

struct TokenizeRequest: Decodable {
    var inputs: TextInputs
    var add_special_tokens: Bool?
    var prompt_name: String?
    var model: String?
}

struct FillRequest: Decodable {
    var inputs: String
    var top_k: Int?
    var words_only: Bool?
    var model: String?
}

/// A small JSON writer: responses are mostly long float arrays, written straight into bytes.
/// A class, so that the closures of `object` and `array` can write into the same writer.
final class JSONWriter {
    private(set) var bytes: [UInt8] = []
    private var needsComma = [false]

    init(capacity: Int = 256) { bytes.reserveCapacity(capacity) }

    private func separate() {
        if needsComma[needsComma.count - 1] { bytes.append(UInt8(ascii: ",")) }
        needsComma[needsComma.count - 1] = true
    }

    func object(_ body: () -> Void) {
        separate(); bytes.append(UInt8(ascii: "{")); needsComma.append(false)
        body()
        needsComma.removeLast(); bytes.append(UInt8(ascii: "}"))
    }

    func array(_ body: () -> Void) {
        separate(); bytes.append(UInt8(ascii: "[")); needsComma.append(false)
        body()
        needsComma.removeLast(); bytes.append(UInt8(ascii: "]"))
    }

    /// A key, then its value (the next call) without a comma between.
    func key(_ name: String) {
        string(name)
        bytes.append(UInt8(ascii: ":"))
        needsComma[needsComma.count - 1] = false
    }

    func string(_ value: String) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": bytes += [0x5C, 0x22]
            case "\\": bytes += [0x5C, 0x5C]
            case "\n": bytes += [0x5C, UInt8(ascii: "n")]
            case "\r": bytes += [0x5C, UInt8(ascii: "r")]
            case "\t": bytes += [0x5C, UInt8(ascii: "t")]
            case _ where scalar.value < 0x20:
                bytes += Array(String(format: "\\u%04x", scalar.value).utf8)
            default: bytes += Array(String(scalar).utf8)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    func number(_ value: Int) { separate(); bytes += Array(String(value).utf8) }

    /// Shortest text that reads back as the same Float; non-finite values (which JSON cannot hold) as null.
    func number(_ value: Float) {
        separate()
        bytes += value.isFinite ? Array(value.description.utf8) : Array("null".utf8)
    }

    func bool(_ value: Bool) { separate(); bytes += Array((value ? "true" : "false").utf8) }
    func null() { separate(); bytes += Array("null".utf8) }

    func floats(_ values: [Float]) {
        array { for v in values { number(v) } }
    }
}
#endif
