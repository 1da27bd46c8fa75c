extension StringProtocol {
    /// The longest prefix of whole characters that fits in `limit` bytes of UTF-8: where every
    /// line the host cuts (a report, an echoed action, a close frame's reason, a thread's name)
    /// is cut, so that none ends in half a character.
    package func prefix(utf8Bytes limit: Int) -> SubSequence {
        guard utf8.count > limit else { return self[...] }
        var end = startIndex
        var kept = 0
        for index in indices {
            let next = self.index(after: index)
            let size = utf8.distance(from: index, to: next)
            if kept + size > limit { break }
            kept += size
            end = next
        }
        return self[..<end]
    }

    /// The string, or its ``prefix(utf8Bytes:)`` and how many bytes were left out:
    /// `abc … (1021 more bytes)`, with `note` inside the parentheses when given. How the host
    /// shortens what it echoes (an action, a report line, a state description).
    package func cut(utf8Bytes limit: Int, note: String = "") -> String {
        let kept = prefix(utf8Bytes: limit)
        guard kept.endIndex < endIndex else { return String(self) }
        return "\(kept) … (\(utf8.count - kept.utf8.count) more bytes\(note))"
    }
}
