import Foundation
import XCTest
@testable import SwiftBERT

/// The model-free parts of word suggestions: splitting the typed text, casing, the word index
/// and the bounded edit-distance search (checked against a brute-force distance over every word).
final class SuggestIndexTests: XCTestCase {
    // MARK: - Typed text

    func testTypedTextSplitsContextAndPartialWord() {
        func split(_ text: String) -> (String, String, Bool) {
            let typed = TypedText(text)
            return (String(typed.context), String(typed.partial), typed.startsSentence)
        }
        XCTAssertTrue(split("") == ("", "", true))
        XCTAssertTrue(split("Hello, wor") == ("Hello, ", "wor", false))
        XCTAssertTrue(split("Hello,") == ("Hello,", "", false), "punctuation ends the word: next words come")
        XCTAssertTrue(split("I said (ma") == ("I said (", "ma", false))
        XCTAssertTrue(split("Stop. Th") == ("Stop. ", "Th", true))
        XCTAssertTrue(split("Really?! \"wh") == ("Really?! \"", "wh", true), "opening quotes are looked past")
        XCTAssertTrue(split("first line\nsec") == ("first line\n", "sec", true), "a line break starts a sentence")
        XCTAssertTrue(split("café au l") == ("café au ", "l", false))
        XCTAssertTrue(split("I don'") == ("I don'", "", false))
        XCTAssertTrue(split("2 apples and 3") == ("2 apples and ", "3", false))
    }

    func testInnerApostropheJoinsAWordOnlyWhenTheIndexKnowsOne() {
        let knows: (String) -> Bool = { $0 == "o'br" }
        XCTAssertEqual(String(TypedText("Ask O'Br", extendsAcross: knows).partial), "O'Br")
        XCTAssertEqual(String(TypedText("I don't", extendsAcross: knows).partial), "t")
        XCTAssertEqual(String(TypedText("e-ma").partial), "ma", "without a known word the hyphen splits, as in BERT")
    }

    func testCasingFollowsTheUser() {
        func cased(_ partial: String, start: Bool = false, _ word: String) -> String {
            TypedCasing(partial: Substring(partial), startsSentence: start).apply(to: word)
        }
        XCTAssertEqual(cased("", start: true, "the"), "The")
        XCTAssertEqual(cased("", start: false, "the"), "the")
        XCTAssertEqual(cased("th", start: true, "the"), "the", "a lowercase letter typed at sentence start is kept")
        XCTAssertEqual(cased("Wor", "world"), "World")
        XCTAssertEqual(cased("WOR", "world"), "WORLD")
        XCTAssertEqual(cased("W", "world"), "World", "one capital is a capital, not caps lock")
        XCTAssertEqual(cased("wOR", "world"), "world", "the first letter decides mixed case")
        XCTAssertEqual(cased("", start: true, "iPhone"), "iPhone", "a word's own inner capitals stay")
        XCTAssertEqual(cased("É", "école"), "École")
    }

    /// Special tokens typed in the text are read as text, as HF's tokenizers with
    /// encode_special_tokens = True read them (ids from tokenizers 0.23 on these tokenizer.json files).
    func testSpecialTokensInTheTextAreReadAsText() throws {
        let text = "I typed <mask> and <s> </s> [MASK] [CLS] "
        let roberta = try Tokenizer.load(folder: repositoryRoot.appendingPathComponent("Tests/SwiftBERTTests/Fixtures/encoders/roberta-mlm"))
        XCTAssertEqual(roberta.plainTextIds(text), [45, 5360, 364, 796, 81, 3517, 34, 1704, 796, 87, 34, 796, 19, 87, 34, 509, 1729, 55, 47, 65, 509, 39, 4975, 65, 225])
        let bert = try Tokenizer.load(folder: convertedModel("splade-tiny"))
        XCTAssertEqual(bert.plainTextIds(text), [1045, 21189, 1026, 7308, 1028, 1998, 1026, 1055, 1028, 1026, 1013, 1055, 1028, 1031, 7308, 1033, 1031, 18856, 2015, 1033])
        // The same tokenizers still match them where control tokens are meant.
        XCTAssertEqual(roberta.encode("a <mask>", addSpecialTokens: false).ids.last, roberta.maskId)
        XCTAssertEqual(bert.encode("a [MASK]", addSpecialTokens: false).ids.last, bert.maskId)
    }

    // MARK: - Index

    let words = ["a", "an", "and", "ant", "the", "then", "them", "there", "they", "hello", "help", "helm",
                 "university", "universe", "universal", "form", "from", "forms", "café", "Café", "zebra"]

    func index(_ list: [String]) -> WordIndex {
        WordIndex(words: list.enumerated().map { i, word in
            WordIndex.Word(key: WordIndex.Word.key(foldedWord(word)), spelling: word, ids: [Int32(i)],
                           weight: 1, isUserWord: false, inVocabulary: true)
        })
    }

    func testCompletionsAreTheRangeOfWordsWithThePrefix() {
        let index = index(words)
        XCTAssertEqual(index.count, words.count - 1, "café and Café are one word with two variants")
        for prefix in ["", "a", "an", "the", "ther", "univers", "hel", "x", "cafe", "café", "thereof"] {
            let key = WordIndex.Word.key(foldedWord(prefix))
            let found = Set(index.completions(of: key).map { index.words[Int($0)].key })
            let expected = Set(index.words.filter { $0.key.starts(with: key) }.map(\.key))
            XCTAssertEqual(found, expected, prefix)
        }
        let cafe = index.word(spelled: WordIndex.Word.key("cafe")).map { index.words[Int($0)] }
        XCTAssertEqual(cafe?.ids.sorted(), [18, 19], "variants keep all their vocabulary ids")
        XCTAssertNil(index.word(spelled: WordIndex.Word.key("ther")))
    }

    func testFastKeysFoldLikeFoldedWord() {
        for word in ["Hello", "ABC", "x", "ÉCOLE", "naïve", "Zoë", "O'Brien"] {
            XCTAssertEqual(WordIndex.Word.key(folding: word), WordIndex.Word.key(foldedWord(word)), word)
        }
    }

    func testUserWordsMergeWithVocabularyWordsAndKeepTheirSpelling() {
        let vocabulary = WordIndex.Word(key: WordIndex.Word.key("paris"), spelling: "paris", ids: [7], weight: 1,
                                        isUserWord: false, inVocabulary: true)
        let user = WordIndex.Word(key: WordIndex.Word.key("paris"), spelling: "Paris", ids: [3], weight: 0.1,
                                  isUserWord: true, inVocabulary: false, count: 4)
        for order in [[vocabulary, user], [user, vocabulary]] {
            let word = WordIndex(words: order).words[0]
            XCTAssertEqual(word.spelling, "Paris")
            XCTAssertEqual(word.ids, [7], "the vocabulary entry beats the first-piece estimate")
            XCTAssertEqual(word.weight, 1)
            XCTAssertEqual(word.count, 4)
        }
    }

    // MARK: - Edit search

    func testEditCostsOfCommonTypos() {
        let index = index(words)
        func cost(_ typed: String, _ meant: String, prefixes: Bool = false) -> Float? {
            var search = EditSearch(index: index, errors: TypingErrorModel(), typed: WordIndex.Word.key(typed), maxCost: 2,
                                    matchesPrefixes: prefixes)
            let target = index.word(spelled: WordIndex.Word.key(meant))!
            return search.run().first { $0.words.contains(target) }?.cost
        }
        XCTAssertEqual(cost("teh", "the"), 0.75, "swap")
        XCTAssertEqual(cost("thw", "the"), 0.5, "w is next to e on QWERTY")
        XCTAssertEqual(cost("thr", "the"), 0.5, "r is next to e")
        XCTAssertEqual(cost("thm", "the"), 1, "m is far from e")
        XCTAssertEqual(cost("helllo", "hello"), 0.5, "a key pressed twice")
        XCTAssertEqual(cost("hllo", "hello"), 1, "a letter left out")
        XCTAssertEqual(cost("fomr", "form"), 0.75)
        XCTAssertNil(cost("univerd", "university"), "too far as a whole word")
        XCTAssertEqual(cost("univerd", "university", prefixes: true), 0.5, "near as a beginning: univers(e)")
    }

    func testEditSearchFindsExactlyTheWordsABruteForceDistanceFinds() {
        var vocabulary = words
        var generator = SystemRandomNumberGenerator()
        let letters = Array("abcdefghijklmnopqrstuvwxyz")
        for _ in 0..<400 { vocabulary.append(String((0..<Int.random(in: 1...7, using: &generator)).map { _ in letters.randomElement(using: &generator)! })) }
        let index = index(vocabulary)
        let errors = TypingErrorModel()
        for _ in 0..<150 {
            let typed = String((0..<Int.random(in: 2...6)).map { _ in letters.randomElement()! })
            let key = WordIndex.Word.key(typed)
            for prefixes in [false, true] {
                var search = EditSearch(index: index, errors: errors, typed: key, maxCost: 1.5, matchesPrefixes: prefixes)
                var found: [[UInt32]: Float] = [:]
                for match in search.run() {
                    for w in match.words {
                        XCTAssertNil(found[index.words[Int(w)].key], "each word once")
                        found[index.words[Int(w)].key] = match.cost
                    }
                }
                var expected: [[UInt32]: Float] = [:]
                for word in index.words {
                    let candidates = prefixes ? (0...word.key.count).map { Array(word.key.prefix($0)) } : [word.key]
                    let cost = candidates.map { weightedOSA(meant: $0, typed: key, errors) }.min()!
                    if cost <= 1.5 { expected[word.key] = cost }
                }
                XCTAssertEqual(found, expected, "\(typed) prefixes: \(prefixes)")
            }
        }
    }

    func testNeighbouringKeys() {
        let qwerty = KeyboardLayout.qwerty
        for (a, b) in [("q", "w"), ("a", "q"), ("a", "w"), ("s", "z"), ("s", "x"), ("g", "b"), ("m", "k"), ("p", "l")] {
            XCTAssertTrue(qwerty.areNeighbours(Unicode.Scalar(a)!, Unicode.Scalar(b)!), "\(a)\(b)")
            XCTAssertTrue(qwerty.areNeighbours(Unicode.Scalar(b)!, Unicode.Scalar(a)!), "\(b)\(a)")
        }
        for (a, b) in [("q", "s"), ("a", "x"), ("e", "m"), ("z", "m")] {
            XCTAssertFalse(qwerty.areNeighbours(Unicode.Scalar(a)!, Unicode.Scalar(b)!), "\(a)\(b)")
        }
    }
}

/// Weighted optimal-string-alignment distance, by the textbook full table: the reference the
/// trie search must agree with.
func weightedOSA(meant: [UInt32], typed: [UInt32], _ errors: TypingErrorModel) -> Float {
    let m = meant.count, n = typed.count
    var d = Array(repeating: Array(repeating: Float(0), count: n + 1), count: m + 1)
    func insertion(_ j: Int) -> Float { j >= 2 && typed[j - 1] == typed[j - 2] ? errors.repeatedInsertion : errors.insertion }
    for j in stride(from: 1, through: n, by: 1) { d[0][j] = d[0][j - 1] + insertion(j) }
    for i in stride(from: 1, through: m, by: 1) {
        d[i][0] = d[i - 1][0] + errors.omission
        for j in stride(from: 1, through: n, by: 1) {
            var cost = min(d[i - 1][j] + errors.omission, d[i][j - 1] + insertion(j),
                           d[i - 1][j - 1] + errors.substitutionCost(meant: meant[i - 1], typed: typed[j - 1]))
            if i >= 2, j >= 2, meant[i - 1] == typed[j - 2], meant[i - 2] == typed[j - 1], meant[i - 1] != typed[j - 1] {
                cost = min(cost, d[i - 2][j - 2] + errors.transposition)
            }
            d[i][j] = cost
        }
    }
    return d[m][n]
}
