import Foundation
import XCTest
@testable import SwiftBERT

/// `bert suggest`: the same suggestions as the library, as a list or JSON, and its failures.
final class SuggestCLITests: CLITestCase {
    func library(_ text: String, topK: Int = 3, userWords: [UserWord] = []) throws -> [Suggestion] {
        let folder = try convertedModel("splade-tiny")
        return try WordSuggester(model: loadModel("splade-tiny"), tokenizer: Tokenizer.load(folder: folder), userWords: userWords)
            .suggest(text, topK: topK)
    }

    func parse(_ stdout: String) throws -> [(word: String, kind: String, score: Double)] {
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(stdout.utf8)) as? [String: Any])
        XCTAssertEqual(Array(object.keys), ["suggestions"])
        return try XCTUnwrap(object["suggestions"] as? [[String: Any]]).map {
            XCTAssertEqual(Set($0.keys), ["word", "kind", "score"])
            return (try XCTUnwrap($0["word"] as? String), try XCTUnwrap($0["kind"] as? String), try XCTUnwrap($0["score"] as? Double))
        }
    }

    func testJSONMatchesTheLibraryForEachKind() throws {
        for (text, kind) in [("I would like a ", "next_word"), ("The weather is beau", "completion"), ("We xould", "correction")] {
            let result = try bert("suggest", "--json", "--top-k", "4", text)
            XCTAssertEqual(result.status, 0, result.stderr)
            XCTAssertEqual(result.stderr, "")
            let got = try parse(result.stdout)
            let expected = try library(text, topK: 4)
            XCTAssertEqual(got.map(\.word), expected.map(\.word), text)
            XCTAssertEqual(got.map(\.kind), expected.map(\.kind.rawValue), text)
            for (a, b) in zip(got, expected) { XCTAssertEqual(Float(a.score), b.score, text) }
            XCTAssertEqual(got.first?.kind, kind, text)
        }
    }

    func testTextListForPeopleAndEmptyInput() throws {
        let result = try bert("suggest", "")
        XCTAssertEqual(result.status, 0, result.stderr)
        let lines = result.stdout.split(separator: "\n")
        XCTAssertEqual(lines.count, 3)
        let expected = try library("")
        for (line, suggestion) in zip(lines, expected) {
            XCTAssertTrue(line.contains(suggestion.word) && line.contains("next_word"), String(line))
        }
        let none = try bert("suggest", "zzzzqqqq")
        XCTAssertEqual(none.status, 0, none.stderr)
        XCTAssertEqual(none.stdout, "(no suggestions)\n")
        XCTAssertEqual(try parse(try bert("suggest", "--json", "zzzzqqqq").stdout).count, 0)
    }

    func testUserWordsFromAFile() throws {
        let list = try temporaryFile("# names\nKubernetes 5\nZoë\n")
        let result = try bert("suggest", "--json", "--words", list, "We deploy on Kub")
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(try parse(result.stdout).first?.word, "Kubernetes")
    }

    func testFailures() throws {
        assertFailure(try bert("suggest", "--top-k", "0", "hello "), status: 64, mentions: ["--top-k"])
        assertFailure(try bert("suggest", "--words", "/nonexistent/words.txt", "hello "), status: 66, mentions: ["/nonexistent/words.txt"])
        assertFailure(try bert("suggest", "--words", try temporaryFile("word twice over\n"), "hello "), status: 65, mentions: ["line 1"])
        assertFailure(try bert("suggest", "--model", "all-MiniLM-L6-v2", "hello "), status: 65, mentions: ["masked-LM"])
        assertFailure(try bert("suggest"), status: 64, mentions: ["text"])
    }
}
