// A package that uses SwiftBERT as a user's package would: through the library product only,
// depending on a tagged version (tools/consumer_test.sh writes its Package.swift and builds it).
//
//   consumer check MODEL REFERENCE.json REFERENCE.safetensors
//       embeds the reference sentences and compares them with sentence-transformers' embeddings
//       (the fixture's sentence_embedding.N); prints the smallest cosine, exits 1 below 0.9999.
//   consumer time MODEL SENTENCES.txt SECONDS
//       embeds one text of exactly 128 tokens ([CLS] and [SEP] included) again and again for
//       SECONDS; prints the median milliseconds of one call as JSON.
//   consumer vectors MODEL REFERENCE.json
//       the embeddings of the reference sentences, one line of floats each (to compare two
//       builds, e.g. native and emulated portable, bit for bit).
//   consumer serve MODEL REFERENCE.json REFERENCE.safetensors
//       (a consumer that depends on SwiftBERT with `traits: ["Server"]` and on the product
//       SwiftBERTServer) runs the HTTP server in this process on a free port, posts the reference
//       sentences to its /v1/embeddings, and compares the answer as `check` does.

import Foundation
import SwiftBERT
#if canImport(SwiftBERTServer)
import FoundationNetworking
import SwiftBERTServer
#endif

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("consumer: \(message)\n".utf8))
    exit(1)
}

/// The sentences of a reference fixture (tools/fixtures/make_reference_fixtures.py).
func referenceSentences(_ path: String) throws -> [String] {
    let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path)))
    guard let sentences = (object as? [String: Any])?["sentences"] as? [String] else { fail("\(path) has no sentences") }
    return sentences
}

/// One float32 tensor of a safetensors file, read by hand: 8-byte header length, JSON header, data.
func tensor(_ name: String, in path: String) throws -> [Float] {
    let data = try Data(contentsOf: URL(fileURLWithPath: path))
    let headerLength = data.prefix(8).withUnsafeBytes { Int($0.loadUnaligned(as: UInt64.self).littleEndian) }
    let header = try JSONSerialization.jsonObject(with: data.subdata(in: 8..<(8 + headerLength))) as? [String: Any]
    guard let entry = header?[name] as? [String: Any], entry["dtype"] as? String == "F32",
          let offsets = entry["data_offsets"] as? [Int], offsets.count == 2 else { fail("\(path) has no F32 tensor \(name)") }
    let bytes = data.subdata(in: (8 + headerLength + offsets[0])..<(8 + headerLength + offsets[1]))
    return bytes.withUnsafeBytes { raw in (0..<(bytes.count / 4)).map { raw.loadUnaligned(fromByteOffset: $0 * 4, as: Float.self) } }
}

let arguments = CommandLine.arguments
guard arguments.count >= 4 else { fail("usage: consumer check|time|vectors MODEL ...") }
let embedder = try SentenceEmbedder(folder: URL(fileURLWithPath: arguments[2]))
print("kernels: \(KernelReport.current)")

switch arguments[1] {
case "check" where arguments.count == 5:
    let sentences = try referenceSentences(arguments[3])
    let vectors = try embedder.embed(sentences).vectors
    var smallest: Float = 1
    for (index, vector) in vectors.enumerated() {
        let reference = try tensor("sentence_embedding.\(index)", in: arguments[4])
        smallest = min(smallest, cosineSimilarity(vector, reference))
    }
    print("sentences: \(sentences.count); min cosine against sentence-transformers: \(smallest)")
    if !(smallest >= 0.9999) { fail("min cosine \(smallest) is below 0.9999") }

case "vectors" where arguments.count == 4:
    for vector in try embedder.embed(referenceSentences(arguments[3])).vectors {
        print(vector.map { String($0.bitPattern, radix: 16) }.joined(separator: " "))
    }

case "time" where arguments.count == 5:
    guard let seconds = Double(arguments[4]) else { fail("SECONDS must be a number") }
    // Words of real sentences until the text has at least 128 tokens, then cut at 128.
    let words = try String(contentsOfFile: arguments[3], encoding: .utf8).split(whereSeparator: \.isWhitespace)
    var text = ""
    for word in words where embedder.tokenizer.encode(text).ids.count < 128 { text += (text.isEmpty ? "" : " ") + word }
    let options = SentenceEmbedder.Options(maxLength: 128)
    guard embedder.tokenizer.encode(text, maxLength: 128).ids.count == 128 else { fail("could not make a 128-token text") }
    for _ in 0..<3 { _ = try embedder.embed(text, options: options) }  // warm-up
    // Wall time, and process CPU time (all threads; steadier on a shared machine), as `bert bench`.
    func cpuMilliseconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now)
        return Double(now.tv_sec) * 1e3 + Double(now.tv_nsec) / 1e6
    }
    var wall: [Double] = [], cpu: [Double] = []
    let start = Date()
    repeat {
        let (began, cpuBegan) = (DispatchTime.now().uptimeNanoseconds, cpuMilliseconds())
        _ = try embedder.embed(text, options: options)
        wall.append(Double(DispatchTime.now().uptimeNanoseconds - began) / 1e6)
        cpu.append(cpuMilliseconds() - cpuBegan)
    } while Date().timeIntervalSince(start) < seconds || wall.count < 5
    let median = { (values: [Double]) in values.sorted()[values.count / 2] }
    print("{\"tokens\": 128, \"runs\": \(wall.count), \"median_ms\": \(median(wall)), \"cpu_median_ms\": \(median(cpu))}")

#if canImport(SwiftBERTServer)
case "serve" where arguments.count == 5:
    // The report lines say when the server listens (and on which port) and when the model is loaded.
    final class Started: @unchecked Sendable {
        let lock = NSLock()
        var port: Int?
        var ready = false
        var failure: String?
    }
    let started = Started()
    let configuration = ServerConfiguration(models: [arguments[2]], port: 0)
    Task.detached {
        do {
            try await BertServer.run(configuration) { line in
                FileHandle.standardError.write(Data("server: \(line)\n".utf8))
                started.lock.withLock {
                    if line.hasPrefix("listening on "), let port = line.split(separator: ":").last.flatMap({ Int($0) }) { started.port = port }
                    if line.hasPrefix("ready in ") { started.ready = true }
                }
            }
        } catch {
            started.lock.withLock { started.failure = "\(error)" }
        }
    }
    let deadline = Date().addingTimeInterval(60)
    var port: Int?
    while port == nil {
        if let failure = started.lock.withLock({ started.failure }) { fail("the server stopped: \(failure)") }
        if Date() > deadline { fail("the server did not start within 60 s") }
        port = started.lock.withLock { started.ready ? started.port : nil }
        Thread.sleep(forTimeInterval: 0.05)
    }
    let sentences = try referenceSentences(arguments[3])
    var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port!)/v1/embeddings")!)
    request.httpMethod = "POST"
    request.setValue("application/json", forHTTPHeaderField: "Content-Type")
    request.httpBody = try JSONSerialization.data(withJSONObject: ["input": sentences])
    final class Answer: @unchecked Sendable { var body: Data?; var error: Error? }
    let answer = Answer(), done = DispatchSemaphore(value: 0)
    URLSession.shared.dataTask(with: request) { body, _, error in
        answer.body = body; answer.error = error; done.signal()
    }.resume()
    done.wait()
    guard let body = answer.body else { fail("POST /v1/embeddings failed: \(answer.error.map { "\($0)" } ?? "no body")") }
    guard let rows = (try JSONSerialization.jsonObject(with: body) as? [String: Any])?["data"] as? [[String: Any]],
          rows.count == sentences.count else { fail("unexpected answer: \(String(decoding: body, as: UTF8.self).prefix(300))") }
    var smallest: Float = 1
    for row in rows {
        guard let index = row["index"] as? Int, let embedding = row["embedding"] as? [Double] else { fail("a row without index or embedding") }
        let reference = try tensor("sentence_embedding.\(index)", in: arguments[4])
        smallest = min(smallest, cosineSimilarity(embedding.map { Float($0) }, reference))
    }
    print("served sentences: \(rows.count); min cosine against sentence-transformers: \(smallest)")
    if !(smallest >= 0.9999) { fail("min cosine \(smallest) is below 0.9999") }
#endif

default:
    fail("usage: consumer check MODEL REF.json REF.safetensors | time MODEL SENTENCES.txt SECONDS | vectors MODEL REF.json | serve MODEL REF.json REF.safetensors")
}
