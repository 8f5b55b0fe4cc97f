// libFuzzer target: the tokenizer, and the line reader that feeds it, on arbitrary bytes.
// The first byte picks a tokenizer and options; the rest is the text (decoded as UTF-8 with
// replacement, as any String), split in two at the first 0xFF byte for a pair. Invariants:
// parallel arrays of one length, offsets inside the text, truncation honoured.
// The models are read from $SWIFTBERT_FUZZ_WEIGHTS (default ./weights).
import Foundation
#if canImport(Glibc)
import Glibc
#endif

private let tokenizers: [Tokenizer] = {
    let weights = ProcessInfo.processInfo.environment["SWIFTBERT_FUZZ_WEIGHTS"] ?? "weights"
    var all: [Tokenizer] = []
    for name in ["all-MiniLM-L6-v2", "splade-tiny"] {
        let folder = URL(fileURLWithPath: weights).appendingPathComponent(name)
        all.append(try! Tokenizer(tokenizerJSON: folder.appendingPathComponent("tokenizer.json")))
    }
    let vocab = URL(fileURLWithPath: weights).appendingPathComponent("all-MiniLM-L6-v2/vocab.txt")
    all.append(try! Tokenizer(vocabTXT: vocab, lowercase: false))
    // Added tokens with every matching rule, normalized and raw.
    let json = """
    {"model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 12,
               "vocab": {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "[MASK]": 4, "a": 5, "##a": 6, "b": 7, "##b": 8, "ab": 9, "é": 10, "##é": 11, "東": 12}},
     "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": null, "lowercase": true},
     "pre_tokenizer": {"type": "BertPreTokenizer"},
     "added_tokens": [{"id": 0, "content": "[PAD]", "special": true},
                      {"id": 4, "content": "[MASK]", "special": true, "lstrip": true, "rstrip": true},
                      {"id": 20, "content": "ab c", "single_word": true, "normalized": true},
                      {"id": 21, "content": "<x>", "normalized": false, "rstrip": true},
                      {"id": 22, "content": "Éé", "normalized": true, "special": false}],
     "post_processor": {"type": "TemplateProcessing",
        "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
        "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "[SEP]", "type_id": 0}},
                 {"Sequence": {"id": "B", "type_id": 1}}, {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
        "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [2], "tokens": ["[CLS]"]}, "[SEP]": {"id": "[SEP]", "ids": [3], "tokens": ["[SEP]"]}}},
     "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": true},
     "truncation": {"max_length": 8, "direction": "Left"}, "padding": {"pad_id": 0, "pad_token": "[PAD]", "direction": "Left"}}
    """
    all.append(try! Tokenizer(configuration: TokenizerConfiguration(tokenizerJSON: Data(json.utf8), path: "added"), path: "added"))
    return all
}()

private func check(_ encoding: Encoding, scalars: Int, maxLength: Int?) {
    let n = encoding.ids.count
    precondition(encoding.tokens.count == n && encoding.offsets.count == n && encoding.typeIds.count == n && encoding.attentionMask.count == n)
    for offset in encoding.offsets { precondition(offset.lowerBound >= 0 && offset.upperBound <= scalars, "offset outside the text") }
    if let maxLength, maxLength >= 3 { precondition(n <= maxLength, "truncation not honoured") }
}

/// One unlinked scratch file, rewritten for every input.
private let scratch: Int32 = {
    var template = Array("/tmp/swiftbert-fuzz-XXXXXX".utf8CString)
    let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
    precondition(fd >= 0, "cannot create a scratch file in /tmp")
    unlink(String(cString: template))
    return fd
}()

/// Every record of `bytes` read as a file, with bad lines skipped (the path `bert embed --input` takes).
private func readLines(_ bytes: UnsafeRawBufferPointer, format: InputFormat) {
    guard ftruncate(scratch, 0) == 0 else { return }
    if bytes.count > 0, pwrite(scratch, bytes.baseAddress!, bytes.count, 0) != bytes.count { return }
    // /proc/self/fd/N opens the file afresh, at offset 0.
    guard let reader = try? TextRecordReader(.file("/proc/self/fd/\(scratch)"), format: format, skipInvalid: true, recordLimit: 1 << 16) else { return }
    var last = -1
    while let record = try? reader.next() {
        precondition(record.index > last)
        last = record.index
    }
}

func fuzzTokenizer(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 1 else { return 0 }
    let control = data[0]
    let body = UnsafeBufferPointer(start: data + 1, count: size - 1)
    if control & 0xC0 == 0xC0 {
        readLines(UnsafeRawBufferPointer(body), format: control & 1 == 0 ? .lines : .jsonl)
        return 0
    }
    let tokenizer = tokenizers[Int(control) % tokenizers.count]
    let split = body.firstIndex(of: 0xFF)
    let first = String(decoding: body[..<(split ?? body.endIndex)], as: UTF8.self)
    let pair = split.map { String(decoding: body[($0 + 1)...], as: UTF8.self) }
    let maxLength: Int? = control & 0x10 == 0 ? nil : Int(control >> 5) * 3
    let special = control & 0x08 == 0
    let encoding = tokenizer.encode(first, pair: pair, maxLength: maxLength, addSpecialTokens: special)
    check(encoding, scalars: max(first.unicodeScalars.count, pair?.unicodeScalars.count ?? 0), maxLength: special ? maxLength : nil)
    _ = tokenizer.decode(encoding.ids)
    _ = tokenizer.tokenize(first)
    if pair == nil { _ = tokenizer.encodeBatch([first, "x"], maxLength: maxLength) }
    return 0
}
