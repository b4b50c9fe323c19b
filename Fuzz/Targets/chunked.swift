// Chunked transfer decoding. The input is split into pieces at
// fuzzer-chosen points (the first bytes choose them). Beyond "no crash":
// - the outcome (body bytes, bytes consumed, done, error) is the same
//   whatever the split, and the same as feeding everything at once;
// - until done the decoder consumes every byte it is given; the body is
//   never larger than what was consumed;
// - a body re-encoded as chunks (sizes chosen by the fuzzer) decodes back to
//   itself, with the bytes after it left unconsumed.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzChunked(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    fuzzRun(data, size) { input in
        // First byte: how many of the next bytes choose the split.
        var head = FuzzChoices(input)
        let choiceCount = Int(head.byte()) % 16
        let stream = Array(input.dropFirst(1 + choiceCount))
        var choices = FuzzChoices(input.dropFirst(1).prefix(choiceCount))

        let whole = decode(stream, pieces: [0..<stream.count])
        let split = decode(stream, pieces: pieceRanges(count: stream.count, maxPiece: 64, &choices))
        fuzzCheck(whole == split, "split changes the outcome: \(whole) vs \(split)")
        let bytewise = decode(stream, pieces: (0..<stream.count).map { $0..<($0 + 1) })
        fuzzCheck(whole == bytewise, "byte-at-a-time changes the outcome: \(whole) vs \(bytewise)")

        var sizes = FuzzChoices(stream.reversed())
        let body = whole.body
        let encoded = encodeChunked(body, &sizes) + Array("NEXT".utf8)
        let round = decode(encoded, pieces: pieceRanges(count: encoded.count, maxPiece: 64, &sizes))
        let expected = Outcome(body: body, consumed: encoded.count - 4, done: true, error: nil)
        fuzzCheck(round == expected, "re-encoded body decodes to \(round)")
    }
}

private struct Outcome: Equatable, CustomStringConvertible {
    var body: [UInt8]
    var consumed: Int
    var done: Bool
    var error: ChunkedError?

    var description: String { "body \(body.count) B, consumed \(consumed), done \(done), error \(String(describing: error))" }
}

/// Feeds the pieces in order as a caller would: stops at the first error, or
/// once done (what is left then belongs to the next message).
private func decode(_ stream: [UInt8], pieces: [Range<Int>]) -> Outcome {
    var decoder = ChunkedDecoder()
    var out = Outcome(body: [], consumed: 0, done: false, error: nil)
    stream.withUnsafeBytes { all in
        for piece in pieces {
            do throws(ChunkedError) {
                let r = try decoder.feed(UnsafeRawBufferPointer(rebasing: all[piece])) { out.body += $0 }
                fuzzCheck(r.consumed <= piece.count, "consumed \(r.consumed) of a \(piece.count)-byte piece")
                fuzzCheck(r.done || r.consumed == piece.count, "left input while not done")
                fuzzCheck(r.done == decoder.isDone, "done disagrees with isDone")
                out.consumed += r.consumed
                out.done = r.done
                if r.done { break }
            } catch {
                // How much of the failing piece was used is not reported, so
                // a count would depend on the split.
                out.error = error
                out.consumed = -1
                break
            }
        }
    }
    fuzzCheck(out.error != nil || out.body.count <= out.consumed, "body larger than its encoding")
    return out
}

/// Chunks of fuzzer-chosen sizes (hex, case and leading zeros varied, some
/// extensions), the last-chunk and an optional trailer.
private func encodeChunked(_ body: [UInt8], _ choices: inout FuzzChoices) -> [UInt8] {
    var out: [UInt8] = []
    for r in pieceRanges(count: body.count, maxPiece: 300, &choices) {
        let style = choices.byte()
        var size = String(r.count, radix: 16, uppercase: style & 1 == 1)
        if style & 2 != 0 { size = "00" + size }
        out += Array(size.utf8)
        if style & 4 != 0 { out += Array(" ; name=\"v\"".utf8) }
        out += Array("\r\n".utf8) + body[r] + Array("\r\n".utf8)
    }
    out += Array("0\r\n".utf8)
    if choices.byte() & 1 == 1 { out += Array("Trailer: x\r\n".utf8) }
    out += Array("\r\n".utf8)
    return out
}
