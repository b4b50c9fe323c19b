import CacheIO
import CacheLoading
import XCTest

/// Widen → transform → cut, the one copy of it the proxy and the in-process reader share.
final class BodyPipelineTests: XCTestCase {
    private func run(_ pipeline: inout BodyPipeline, _ input: [UInt8], _ range: Range<Int64>, piece: Int) throws -> [UInt8] {
        var out: [UInt8] = []
        var at = Int(range.lowerBound)
        while at < Int(range.upperBound) {
            let end = min(at + piece, Int(range.upperBound))
            try input[at..<end].withUnsafeBytes { try pipeline.feed($0, at: Int64(at), into: &out) }
            at = end
        }
        try pipeline.finish(into: &out)
        return out
    }

    func testUntransformedBytesAreCutToTheRange() throws {
        let input = (0..<100).map { UInt8($0) }
        var pipeline = BodyPipeline(.none)
        XCTAssertEqual(pipeline.want(10..<20, totalLength: 100), 10..<20)
        XCTAssertEqual(try run(&pipeline, input, 0..<100, piece: 7), Array(input[10..<20]),
                       "bytes outside the range (an origin that ignored Range) are dropped")
    }

    /// Pieces at any offsets (never block-aligned after the first): the
    /// output is exactly the asked plaintext.
    func testDecryptionWidensAndCutsToTheAskedPlaintext() throws {
        for kind in [CipherKind.aes128CTR, .aes128ECB] {
            let spec = DecryptionSpec(kind: kind, key: Array(0..<16), iv: kind == .aes128CTR ? Array(repeating: 0xfe, count: 16) : [])
            let length = kind == .aes128CTR ? 1003 : 1008
            let ciphertext = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 7) }
            let plaintext = try BlockDecryptor(spec).decrypt(ciphertext, atOffset: 0)
            for (first, last) in [(1, 10), (0, length - 1), (17, 17), (990, length - 1), (500, 777)] {
                for piece in [5, 16, 4096] {
                    var pipeline = BodyPipeline(.decrypt(try DecryptTransform(spec)))
                    let input = pipeline.want(Int64(first)..<Int64(last + 1), totalLength: Int64(length))
                    XCTAssertEqual(input.lowerBound % 16, 0)
                    XCTAssertTrue(input.upperBound % 16 == 0 || input.upperBound == Int64(length))
                    XCTAssertEqual(try run(&pipeline, ciphertext, input, piece: piece), Array(plaintext[first...last]),
                                   "\(kind) \(first)-\(last) in pieces of \(piece)")
                }
            }
        }
    }
}
