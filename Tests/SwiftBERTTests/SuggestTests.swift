import Foundation
import XCTest
@testable import SwiftBERT
@testable import SwiftBERTCommandLine
import SwiftBERTBench

/// Word suggestions with a real masked-LM (splade-tiny). Its guesses are weak (it was fine-tuned
/// for retrieval), so these tests check behaviour and mechanics, never which word wins.
final class SuggestTests: XCTestCase {
    func suggester(userWords: [UserWord] = [], options: WordSuggester.Options = .init()) throws -> WordSuggester {
        let folder = try convertedModel("splade-tiny")
        return try WordSuggester(model: loadModel("splade-tiny"), tokenizer: Tokenizer.load(folder: folder),
                                 userWords: userWords, options: options)
    }

    /// Every suggestion a whole word (letters only: no ## piece, punctuation or special token),
    /// each word once, best first.
    func assertWellFormed(_ suggestions: [Suggestion], file: StaticString = #filePath, line: UInt = #line) {
        for s in suggestions {
            XCTAssertFalse(s.word.isEmpty, file: file, line: line)
            XCTAssertTrue(s.word.allSatisfy { $0.isLetter || innerMarks.contains($0) }, "not a whole word: \(s.word)", file: file, line: line)
            XCTAssertTrue(s.score.isFinite && s.score >= 0, "\(s)", file: file, line: line)
        }
        XCTAssertEqual(Set(suggestions.map { $0.word.lowercased() }).count, suggestions.count, "a word twice: \(suggestions)", file: file, line: line)
        XCTAssertEqual(suggestions.map(\.score), suggestions.map(\.score).sorted(by: >), "not best first", file: file, line: line)
    }

    // MARK: - Next word

    func testTextEndingInASpaceGetsNextWordsThatAreWholeWords() throws {
        let suggestions = try suggester().suggest("I would like a cup of ", topK: 25)
        XCTAssertEqual(suggestions.count, 25)
        XCTAssertTrue(suggestions.allSatisfy { $0.kind == .nextWord })
        assertWellFormed(suggestions)
        XCTAssertTrue(suggestions.allSatisfy { $0.word == $0.word.lowercased() }, "mid-sentence: no capitals")
    }

    func testEmptyTextGetsCapitalizedSentenceStarts() throws {
        let s = try suggester()
        for text in ["", "   ", "It rained. ", "Really?! \"", "first line\n"] {
            let suggestions = try s.suggest(text, topK: 5)
            XCTAssertEqual(suggestions.count, 5, text)
            assertWellFormed(suggestions)
            for suggestion in suggestions {
                XCTAssertEqual(suggestion.kind, .nextWord)
                XCTAssertTrue(suggestion.word.first!.isUppercase, "\(text): \(suggestion.word)")
            }
        }
    }

    func testPunctuationAtTheEndMeansTheWordIsDone() throws {
        let s = try suggester()
        for text in ["Hello,", "Well (", "see: \"", "Done;"] {
            let suggestions = try s.suggest(text, topK: 3)
            XCTAssertFalse(suggestions.isEmpty, text)
            XCTAssertTrue(suggestions.allSatisfy { $0.kind == .nextWord }, "\(text): \(suggestions)")
        }
    }

    // MARK: - Completion

    func testPartialWordGetsCompletionsStartingWithIt() throws {
        let s = try suggester()
        for (text, letters) in [("The weather is beau", "beau"), ("Hello, wor", "wor"), ("She said (pro", "pro"), ("über das", "das")] {
            let suggestions = try s.suggest(text, topK: 5)
            XCTAssertEqual(suggestions.count, 5, text)
            assertWellFormed(suggestions)
            let completions = suggestions.filter { $0.kind == .completion }
            XCTAssertFalse(completions.isEmpty, text)
            for c in completions { XCTAssertTrue(foldedWord(c.word).hasPrefix(letters), "\(text): \(c.word)") }
        }
    }

    func testCompletionsAreRankedByTheModelInContext() throws {
        // The order must be the model's: the probability of each word at a [MASK] after the context.
        let s = try suggester(options: { var o = WordSuggester.Options(); o.recencyWeight = 0; return o }())
        let suggestions = try s.suggest("They walked into the gar", topK: 20).filter { $0.kind == .completion }.prefix(4)
        let fill = try FillMask(folder: convertedModel("splade-tiny"))
        let expected = try fill.predict("They walked into the [MASK]", topK: 4, prefix: "gar")[0].candidates
        XCTAssertEqual(suggestions.map(\.word), expected.map(\.token))
        for (a, b) in zip(suggestions, expected) { XCTAssertEqual(a.score, b.probability, accuracy: 1e-6) }
    }

    func testCasingFollowsTheLettersTyped() throws {
        let s = try suggester()
        let lower = try s.suggest("It is a beau", topK: 3).map(\.word)
        XCTAssertEqual(try s.suggest("It is a Beau", topK: 3).map(\.word), lower.map { $0.prefix(1).uppercased() + $0.dropFirst() })
        XCTAssertEqual(try s.suggest("It is a BEAU", topK: 3).map(\.word), lower.map { $0.uppercased() })
        XCTAssertEqual(try s.suggest("It is a bEAu", topK: 3).map(\.word), lower, "mixed case: the first letter decides")
        XCTAssertTrue(try s.suggest("Th", topK: 3).allSatisfy { $0.word.first!.isUppercase }, "sentence start, capital typed")
    }

    // MARK: - Correction

    func testLettersThatFitNoWordGetCorrectionsWithinTheEditBound() throws {
        let s = try suggester()
        for text in ["I saw tge", "We xould", "This is an exmaple", "Go to the libary", "helllo"] {
            let typed = WordIndex.Word.key(foldedWord(TypedText(text).partial))
            let suggestions = try s.suggest(text, topK: 5)
            assertWellFormed(suggestions)
            XCTAssertFalse(suggestions.isEmpty, text)
            XCTAssertTrue(suggestions.allSatisfy { $0.kind == .correction }, "\(text): no word starts with these letters: \(suggestions)")
            let bound = TypingErrorModel().maxCost(forLength: typed.count)
            for c in suggestions {
                let word = WordIndex.Word.key(foldedWord(c.word))
                // Corrected completions count at the cost of their nearest beginning.
                let cost = (0...word.count).map { weightedOSA(meant: Array(word.prefix($0)), typed: typed, TypingErrorModel()) }.min()!
                XCTAssertLessThanOrEqual(cost, bound, "\(text): \(c.word)")
            }
        }
    }

    func testTheTypedWordIsOfferedWithCorrectionsWhenItIsAWord() throws {
        // Typos as likely as exact letters: corrections surely make the list.
        var options = WordSuggester.Options()
        options.typoFactor = 1
        let suggestions = try suggester(options: options).suggest("I came form", topK: 3)
        XCTAssertTrue(suggestions.contains { $0.kind == .correction }, "\(suggestions)")
        XCTAssertTrue(suggestions.contains { $0.word == "form" }, "\(suggestions)")
    }

    func testCorrectionScoresAreTheModelsProbabilityTimesTheTypoLikelihood() throws {
        var options = WordSuggester.Options()
        options.recencyWeight = 0
        let s = try suggester(options: options)
        let correction = try XCTUnwrap(try s.suggest("I want teh", topK: 50).first { $0.word == "the" })
        let next = try XCTUnwrap(try s.suggest("I want ", topK: 30_000).first { $0.word == "the" })
        // "teh" for "the" is one swap: 0.75 of an error.
        XCTAssertEqual(correction.score, next.score * pow(options.typoFactor, 0.75), accuracy: next.score * 1e-4)
    }

    // MARK: - Text that is not what it seems

    func testAMaskTypedByTheUserIsReadAsText() throws {
        let s = try suggester()
        let tokenizer = s.tokenizer
        for text in ["I typed [MASK] and ", "[CLS] [SEP] [MASK] [PAD] [UNK] ", "a[MASK]b "] {
            let input = s.modelInput(context: Substring(text))
            XCTAssertEqual(input.filter { $0 == tokenizer.maskId }.count, 1, text)
            XCTAssertEqual(input[input.count - 2], tokenizer.maskId, text)
            XCTAssertEqual(input.first, tokenizer.clsId)
            XCTAssertEqual(input.filter { $0 == tokenizer.clsId || $0 == tokenizer.sepId }.count, 2, text)
            let plain = tokenizer.encode(text.replacingOccurrences(of: "[", with: "( ").replacingOccurrences(of: "]", with: " )"), addSpecialTokens: false)
            XCTAssertEqual(input.count, plain.count + 3, "the same pieces as any bracketed word: \(text)")
            let suggestions = try s.suggest(text, topK: 3)
            XCTAssertEqual(suggestions.count, 3)
            XCTAssertTrue(suggestions.allSatisfy { $0.kind == .nextWord })
        }
        let typing = try s.suggest("Look at [MAS", topK: 3)
        XCTAssertTrue(typing.allSatisfy { $0.word.uppercased() == $0.word && $0.word.hasPrefix("MAS") || $0.kind == .correction }, "\(typing)")
    }

    /// RoBERTa (the random-weight `roberta-mlm` fixture: which word wins means nothing) reads the
    /// context with its own <mask> and framing, a typed "<mask>" as text, and offers whole words
    /// spelt without Ġ: its word-start entries, never pieces from inside a word.
    func testRobertaUsesItsOwnMaskAndWordStartPieces() throws {
        let folder = try EncoderFixtureTests.converted("roberta-mlm")
        let s = try WordSuggester(folder: folder, threads: 1)
        let tokenizer = s.tokenizer
        XCTAssertEqual(tokenizer.token(of: tokenizer.maskId), "<mask>")
        for text in ["I typed <mask> and ", "<s> </s> [MASK] ", "I would like a cup of "] {
            let input = s.modelInput(context: Substring(text))
            XCTAssertEqual(input.first, tokenizer.clsId, text)
            XCTAssertEqual(input.suffix(2), [tokenizer.maskId, tokenizer.sepId], text)
            XCTAssertEqual(input.filter { $0 == tokenizer.maskId || $0 == tokenizer.clsId || $0 == tokenizer.sepId }.count, 3, text)
            // No lone "Ġ" for the trailing space: <mask> takes it, as in transformers.
            XCTAssertEqual(Array(input.dropFirst().dropLast(2)), tokenizer.plainTextIds(String(text.dropLast())), text)
        }
        // Entries that start a word, as transformers' fill-mask pipeline shows them (" fox" for "Ġfox").
        let starts = Set((0..<Int32(tokenizer.vocabularySize)).compactMap { id -> String? in
            guard let token = tokenizer.token(of: id), token.hasPrefix("Ġ") else { return nil }
            return tokenizer.decode([id], skipSpecialTokens: false).trimmingCharacters(in: .whitespaces)
        })
        for text in ["I would like a cup of ", "", "The weather is be"] {
            let suggestions = try s.suggest(text, topK: 10)
            XCTAssertEqual(suggestions.count, 10, text)
            assertWellFormed(suggestions)
            for suggestion in suggestions {
                XCTAssertFalse(suggestion.word.contains("Ġ"), "\(text): \(suggestion.word)")
                XCTAssertTrue(starts.contains(suggestion.word) || starts.contains(suggestion.word.lowercased()),
                              "\(text): \(suggestion.word) is not a word-start entry")
            }
        }
        let completions = try s.suggest("The weather is be", topK: 10).filter { $0.kind == .completion }
        XCTAssertFalse(completions.isEmpty)
        XCTAssertTrue(completions.allSatisfy { $0.word.lowercased().hasPrefix("be") }, "\(completions)")
        // A user's word is scored by its word-start piece ("ĠK" for "Kubrick").
        s.addUserWords(["Kubrick"])
        XCTAssertTrue(try s.suggest("Meet me at Kubr", topK: 10).contains { $0.word == "Kubrick" && $0.kind == .completion })
    }

    func testLongTextsAreCutToTheContextWindow() throws {
        let s = try suggester()
        let long = String(repeating: "The quick brown fox jumps over the lazy dog. ", count: 400)
        XCTAssertEqual(s.modelInput(context: Substring(long)).count, s.options.contextTokens + 3)
        XCTAssertEqual(try s.suggest(long + "The qu", topK: 3).count, 3)
    }

    func testTopKAndModelErrors() throws {
        let s = try suggester()
        XCTAssertThrowsError(try s.suggest("hello ", topK: 0)) { XCTAssertEqual(($0 as? SwiftBERTError)?.exitStatus, 65) }
        XCTAssertTrue(try s.suggest("zzzzqqqq", topK: 3).isEmpty, "nothing near: no suggestion rather than a wild one")
        let embedder = try convertedModel("all-MiniLM-L6-v2")
        XCTAssertThrowsError(try WordSuggester(folder: embedder)) { error in
            XCTAssertTrue(String(describing: error).contains("masked-LM"), "\(error)")
        }
    }

    // MARK: - Speed mechanics

    func testOneForwardPassPerWordNotPerKeystroke() throws {
        let s = try suggester()
        XCTAssertEqual(s.modelRuns, 0)
        _ = try s.suggest("We took the ")
        for letters in ["t", "tr", "tra", "trai", "train"] { _ = try s.suggest("We took the " + letters) }
        XCTAssertEqual(s.modelRuns, 1, "the context stays the same while a word is typed")
        _ = try s.suggest("We took the train ")
        XCTAssertEqual(s.modelRuns, 2)
        _ = try s.suggest("We took the trai")  // backspace to an earlier context: read again
        XCTAssertEqual(s.modelRuns, 3)
    }

    func testWordsPassedOverMakeRoomForOthers() throws {
        let s = try suggester()
        let first = try s.suggest("I like t", topK: 3).map(\.word)
        let next = try s.suggest("I like tr", topK: 3)
        XCTAssertEqual(next.count, 3)
        XCTAssertTrue(next.allSatisfy { !first.contains($0.word) }, "\(first) were passed over: \(next)")
        // A fresh start (another context) offers them again.
        var options = WordSuggester.Options()
        options.passedOverFactor = 1
        let plain = try suggester(options: options)
        XCTAssertEqual(try s.suggest("You like tr", topK: 3).map(\.word), try plain.suggest("You like tr", topK: 3).map(\.word))
    }

    func testRecentWordsAreFavoured() throws {
        var options = WordSuggester.Options()
        options.recencyWeight = 0
        let without = try suggester(options: options).suggest("we met at the marina. the weather was fine at the mar", topK: 30)
        let with = try suggester().suggest("we met at the marina. the weather was fine at the mar", topK: 30)
        let rank = { (list: [Suggestion]) in list.firstIndex { $0.word == "marina" } ?? list.count }
        XCTAssertLessThanOrEqual(rank(with), rank(without), "marina was just written")
        XCTAssertLessThan(rank(with), 3)
    }

    // MARK: - User words

    func testUserWordsAreCompletedAndCorrectedWithTheirSpelling() throws {
        let s = try suggester(userWords: try UserWord.readList(URL(fileURLWithPath: fixture("words.txt"))))
        let tokenizer = s.tokenizer
        XCTAssertGreaterThan(tokenizer.tokenize("kubernetes").count, 1, "the test needs a word outside the vocabulary")
        let completed = try s.suggest("We deploy on Kub", topK: 5)
        XCTAssertEqual(completed.first?.word, "Kubernetes", "\(completed)")
        XCTAssertEqual(completed.first?.kind, .completion)
        let corrected = try s.suggest("We deploy on kuberntes", topK: 3)
        XCTAssertEqual(corrected.first?.word, "Kubernetes", "\(corrected)")
        XCTAssertEqual(corrected.first?.kind, .correction)
        XCTAssertTrue(try s.suggest("I bought an iph", topK: 5).contains { $0.word == "iPhone" })
        XCTAssertEqual(try s.suggest("My friend Zoe", topK: 3).first?.word, "Zoë", "accents fold; the user's spelling wins")
        XCTAssertTrue(try s.suggest("Ask O'Br", topK: 5).contains { $0.word == "O'Brien" }, "an inner apostrophe joins a known word")
    }

    func testUserWordsWithoutCountsDoNotTakeOverNextWords() throws {
        let s = try suggester()
        let before = try s.suggest("I would like a ", topK: 5).map(\.word)
        s.addUserWords(["Kubernetes", "Zoë", "Xylophonist"])
        XCTAssertEqual(try s.suggest("I would like a ", topK: 5).map(\.word), before)
        XCTAssertTrue(try s.suggest("I would like a xyl", topK: 5).contains { $0.word == "Xylophonist" })
    }

    func testWordListParsing() throws {
        let words = try UserWord.parseList("# comment\nKubernetes 12\n\n  Zoë  \niPhone\t3\n", source: "list")
        XCTAssertEqual(words, [UserWord("Kubernetes", count: 12), UserWord("Zoë"), UserWord("iPhone", count: 3)])
        XCTAssertThrowsError(try UserWord.parseList("one two three\n", source: "list")) {
            XCTAssertTrue(String(describing: $0).contains("line 1"), "\($0)")
        }
        XCTAssertThrowsError(try UserWord.parseList("word many\n", source: "list"))
        XCTAssertThrowsError(try UserWord.readList(URL(fileURLWithPath: "/nonexistent/words.txt"))) {
            XCTAssertEqual(($0 as? SwiftBERTError)?.exitStatus, 66)
        }
        // Lowercase unless the text never writes the word so: a capital at sentence start does not stick.
        XCTAssertEqual(UserWord.counted(in: "The GNU license. The license of GNU, the Licensor said."), [
            UserWord("GNU", count: 2), UserWord("license", count: 2), UserWord("Licensor", count: 1),
            UserWord("of", count: 1), UserWord("said", count: 1), UserWord("the", count: 3),
        ])
    }

    // MARK: - Typing simulation (the benchmark's measure, on a tiny text)

    func testKeystrokeSavingsArithmetic() throws {
        /// Offers the word meant as soon as one letter of it is typed.
        struct Oracle: WordPredictor {
            let words: [String]
            func words(for text: String, topK: Int) -> [String] {
                let partial = TypedText(text).partial
                return partial.isEmpty ? [] : words.filter { $0.hasPrefix(partial) }
            }
        }
        // "Hi there, you." = 14 keys; picking "there" after "t" and "you" after "y" costs 2 each,
        // and the space after "there," is typed (a comma comes first).
        let result = try TypingSimulation.run("Hi  there,\n you.", predictor: Oracle(words: ["there", "you"]))
        XCTAssertEqual(result.characters, 14)
        XCTAssertEqual(result.words, 3)
        XCTAssertEqual(result.keystrokes, 2 + 1 + 2 + 1 + 1 + 2 + 1)
        XCTAssertEqual(result.nextWordHits, 0)
        let picks = try TypingSimulation.run("go on", predictor: Oracle(words: ["go", "on"]))
        XCTAssertEqual(picks.characters, 5)
        XCTAssertEqual(picks.keystrokes, 4, "g, pick (and its space), o, pick")
    }

    func testTypingSimulationSmoke() throws {
        let text = try String(contentsOfFile: fixture("typing.txt"), encoding: .utf8)
        let s = try suggester(userWords: UserWord.counted(in: text))
        let result = try TypingSimulation.run(text, predictor: s)
        XCTAssertEqual(result.words, text.split(whereSeparator: { !$0.isLetter }).count)
        XCTAssertGreaterThan(result.keystrokeSavings, 0.2)
        XCTAssertLessThan(result.keystrokeSavings, 1)
        let baseline = try TypingSimulation.run(text, predictor: FrequencyBaseline(trainingText: text))
        XCTAssertGreaterThan(baseline.keystrokeSavings, 0)
        let handRolled = try TypingSimulation.run(text, predictor: HandRolledMaskedLM(model: s.model, tokenizer: s.tokenizer))
        XCTAssertGreaterThan(result.keystrokeSavings, handRolled.keystrokeSavings)
    }

    func fixture(_ name: String) -> String {
        repositoryRoot.appendingPathComponent("Tests/SwiftBERTTests/Fixtures/suggest/\(name)").path
    }
}
