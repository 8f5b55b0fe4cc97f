import Foundation
import XCTest
#if Server
@testable import SwiftBERTServer

/// The server's scans of a request body beside Foundation's decoder (keys given twice, string
/// escapes that are half a surrogate pair), and its JSON writer.
final class RequestJSONTests: XCTestCase {
    func testDuplicateKeysAreFoundInEveryObjectAndOnlyThere() {
        func duplicate(_ json: String) -> String? { duplicateKey(in: Array(json.utf8)) }
        XCTAssertEqual(duplicate(#"{"documents": [{"text": "a", "text": "b"}], "query": "q"}"#), "text")
        XCTAssertEqual(duplicate(#"{"a": {"b": 1}, "c": [1, {"d": 2}], "a": 3}"#), "a")
        XCTAssertEqual(duplicate(#"{"\u00e9": 1, "é": 2}"#), "é")
        XCTAssertNil(duplicate(#"{"documents": [{"text": "a"}, {"text": "b"}], "text": {"text": 1}}"#))
        XCTAssertNil(duplicate(#"{"input": "\"input\": \\", "texts": ["input", "input"]}"#))
        XCTAssertNil(duplicate(#"[{"a": 1}, {"a": 2}]"#))
    }

    func testLoneSurrogateEscapesAreFoundAndPairsAreNot() {
        func lone(_ json: String) -> [Int] { loneSurrogateEscapes(in: Array(json.utf8)) }
        XCTAssertEqual(lone(#"{"a": "\ud800"}"#), [7])
        XCTAssertEqual(lone(#"{"a": "\udc00\ud83d\ude00\ud83d"}"#), [7, 25])
        XCTAssertEqual(lone(#"{"a": "\ud83d\ude00", "b": "\\ud800", "c": "\u00e9"}"#), [])
        XCTAssertEqual(lone(#"{"a": "\ud83d\u0041"}"#), [7])
    }

    /// Integers are written digit by digit in place (they went through a String each): every
    /// sign and length, the extremes included, reads back as what was written.
    func testJSONWriterWritesEveryIntegerAndLiteral() throws {
        let values = [0, 7, -1, 9, 10, -10, 99, 100, 12345, -987654321, Int.max, Int.min]
        let json = JSONWriter()
        json.object {
            json.key("n"); json.array { for value in values { json.number(value) } }
            json.key("t"); json.bool(true)
            json.key("f"); json.bool(false)
            json.key("z"); json.null()
        }
        let text = String(decoding: json.bytes, as: UTF8.self)
        XCTAssertEqual(text, #"{"n":[0,7,-1,9,10,-10,99,100,12345,-987654321,9223372036854775807,-9223372036854775808],"t":true,"f":false,"z":null}"#)
        let parsed = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(json.bytes)) as? [String: Any])
        XCTAssertEqual((parsed["n"] as? [NSNumber])?.map(\.int64Value), values.map { Int64($0) })
    }
}
#endif
