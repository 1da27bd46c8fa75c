import Foundation
import Testing

/// Every file of the `csv` fuzz corpus, seeds and crashes alike, replayed through ``fuzzCSV(_:)``.
///
/// `make fuzz` saves an input that crashes the harness in Tests/Fuzz/Corpus/csv/, so from then
/// on it is a regression test here.
@Suite("CSV tokenizer: the fuzz corpus, replayed")
struct CSVFuzzReplayTests {
    /// Tests/Fuzz/Corpus/csv, found from this file.
    static let corpus = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz/Corpus/csv")

    /// The corpus's file names, sorted.
    static let files = ((try? FileManager.default.contentsOfDirectory(atPath: corpus.path)) ?? []).sorted()

    @Test func theCorpusHasSeeds() {
        #expect(Self.files.contains { $0.hasPrefix("seed-") }, "no seeds in \(Self.corpus.path)")
    }

    @Test(arguments: files)
    func replay(file: String) throws {
        let bytes = [UInt8](try Data(contentsOf: Self.corpus.appendingPathComponent(file)))
        do {
            try fuzzCSV(bytes)
        } catch {
            Issue.record("\(file): \(error)")
        }
    }
}
