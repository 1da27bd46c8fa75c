import Foundation
import Testing

/// Every file of the `input-line` fuzz corpus, seeds and crashes alike, replayed through
/// ``fuzzInputLine(_:)``.
///
/// `make fuzz` saves an input that crashes the harness in Tests/Fuzz/Corpus/input-line/, so from
/// then on it is a regression test here.
@Suite("Input lines and JSON: the fuzz corpus, replayed")
struct InputLineFuzzReplayTests {
    /// Tests/Fuzz/Corpus/input-line, found from this file.
    static let corpus = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz/Corpus/input-line")

    /// The corpus's file names, sorted.
    static let files = ((try? FileManager.default.contentsOfDirectory(atPath: corpus.path)) ?? []).sorted()

    @Test func theCorpusHasSeeds() {
        #expect(Self.files.contains { $0.hasPrefix("seed-") }, "no seeds in \(Self.corpus.path)")
    }

    @Test(arguments: files)
    func replay(file: String) throws {
        let bytes = [UInt8](try Data(contentsOf: Self.corpus.appendingPathComponent(file)))
        do {
            try fuzzInputLine(bytes)
        } catch {
            Issue.record("\(file): \(error)")
        }
    }
}
