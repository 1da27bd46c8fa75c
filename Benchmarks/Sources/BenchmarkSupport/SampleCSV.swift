/// Deterministic CSV text of about `byteCount` bytes: plain, quoted, doubled-quote and
/// multi-line fields, CRLF line ends.
public func sampleCSV(byteCount: Int) -> [UInt8] {
    let fields = ["alpha", "1234", "\"quoted, with comma\"", "\"say \"\"hi\"\"\"", "", "\"two\nlines\"", "x"]
    var text: [UInt8] = []
    var index = 0
    while text.count < byteCount {
        for column in 0..<5 {
            if column > 0 { text.append(UInt8(ascii: ",")) }
            text += fields[(index &* 31 &+ column &* 7) % fields.count].utf8
        }
        text += "\r\n".utf8
        index += 1
    }
    return text
}
