extension String {
    /// The text's lines as UTF-8 bytes: split at `\n`, each line's `\r` before it dropped (a
    /// file written with `\r\n`). Split as bytes, since a `Character` holds `"\r\n"` whole and
    /// would not split there: how the host reads the files it is given (tokens, `.pgpass`).
    ///
    /// - Parameter omittingEmpty: Whether lines with nothing between two `\n` are left out.
    package func lineBytes(omittingEmpty: Bool = false) -> [Substring.UTF8View] {
        utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: omittingEmpty).map { line in
            line.last == UInt8(ascii: "\r") ? line.dropLast() : line
        }
    }
}
