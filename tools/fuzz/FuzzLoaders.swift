// libFuzzer target: the small files a model folder holds. The first byte picks the loader:
//   0  config.json as `bert convert` writes it (ModelConfig.decode + validate)
//   1  a Hugging Face config.json as the converter reads it
//   2  tokenizer.json, then a tokenizer built from it encodes and decodes a few texts
//   3  vocab.txt, the same
// The rest of the input is the file's bytes.
import Foundation

private let probes = ["Hello, world! [MASK] is [CLS] here.", "naïve café 東京 🙂 \u{0}\u{7}", "", "##ing un##able",
                      String(repeating: "a", count: 300)]

private func exercise(_ tokenizer: Tokenizer) {
    for text in probes {
        for maxLength in [nil, 2, 5] as [Int?] {
            let encoding = tokenizer.encode(text, pair: text.isEmpty ? nil : "second text", maxLength: maxLength)
            precondition(encoding.ids.count == encoding.tokens.count && encoding.ids.count == encoding.offsets.count
                         && encoding.ids.count == encoding.typeIds.count && encoding.ids.count == encoding.attentionMask.count)
            _ = tokenizer.decode(encoding.ids)
            _ = tokenizer.decode(encoding.ids, skipSpecialTokens: false)
        }
    }
    _ = tokenizer.encodeBatch(probes, maxLength: 16)
    for id: Int32 in [-1, 0, 1, tokenizer.clsId, tokenizer.sepId, tokenizer.padId, tokenizer.maskId, Int32(clamping: tokenizer.vocabularySize), .max, .min] {
        _ = tokenizer.token(of: id)
        _ = tokenizer.decode([id])
    }
}

func fuzzLoaders(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 1 else { return 0 }
    let body = Data(bytes: data + 1, count: size - 1)
    switch data[0] % 4 {
    case 0:
        if let config = try? ModelConfig.decode(body, path: "config.json") {
            precondition(config.encoder.hiddenSize % config.encoder.numAttentionHeads == 0 && config.encoder.vocabSize > 0)
        }
    case 1:
        if let config = try? Converter.readConfig(body, path: "config.json", folder: "checkpoint") {
            precondition(config.encoder.hiddenSize > 0 && config.encoder.numHiddenLayers > 0)
        }
    case 2:
        if let configuration = try? TokenizerConfiguration(tokenizerJSON: body, path: "tokenizer.json"),
           let tokenizer = try? Tokenizer(configuration: configuration, path: "tokenizer.json") {
            exercise(tokenizer)
        }
    default:
        if let configuration = try? TokenizerConfiguration(vocabTXT: body, path: "vocab.txt", lowercase: data[0] & 4 == 0),
           let tokenizer = try? Tokenizer(configuration: configuration, path: "vocab.txt") {
            exercise(tokenizer)
        }
    }
    return 0
}
