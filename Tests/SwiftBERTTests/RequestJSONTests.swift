import Foundation
import XCTest
#if Server
@testable import SwiftBERTServer

/// The server's scans of a request body beside Foundation's decoder: keys given twice, and
/// string escapes that are half a surrogate pair.
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
}
#endif
