import CacheIO
import CacheLoading
import XCTest

/// The decryption transform takes input in pieces of any size and gives the
/// same plaintext as decrypting the whole run at once (BlockDecryptor, which
/// is itself checked against `openssl enc`).
final class DecryptTransformTests: XCTestCase {
    let key: [UInt8] = Array(0..<16)
    let iv: [UInt8] = [0xf0, 0xf1, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xf0]

    private func ciphertext(_ count: Int, seed: UInt8 = 1) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) }
    }

    private func run(_ spec: DecryptionSpec, _ input: [UInt8], from offset: Int64, pieces: [Int]) throws -> [UInt8] {
        let transform = try DecryptTransform(spec)
        var output: [UInt8] = []
        var at = 0
        for size in pieces where at < input.count {
            let end = min(input.count, at + size)
            try input[at..<end].withUnsafeBytes { try transform.process($0, at: offset + Int64(at), into: &output) }
            at = end
        }
        if at < input.count {
            try input[at...].withUnsafeBytes { try transform.process($0, at: offset + Int64(at), into: &output) }
        }
        try transform.finish(into: &output)
        return output
    }

    func testPiecesOfAnySizeGiveTheWholeRunsPlaintext() throws {
        for spec in [DecryptionSpec(kind: .aes128CTR, key: key, iv: iv), DecryptionSpec(kind: .aes128ECB, key: key)] {
            let input = ciphertext(16 * 200)
            let expected = try BlockDecryptor(spec).decrypt(input, atOffset: 160)
            for pieces in [[1], [7, 9, 16, 3], [15, 17], [4096], [16], [33, 1, 1, 1, 100]] {
                let repeated = Array(repeating: pieces, count: 400).flatMap { $0 }
                XCTAssertEqual(try run(spec, input, from: 160, pieces: repeated), expected, "\(spec.kind) \(pieces)")
            }
        }
    }

    func testCTRShortLastBlockComesOutAtFinish() throws {
        let spec = DecryptionSpec(kind: .aes128CTR, key: key, iv: iv)
        let input = ciphertext(16 * 10 + 5)
        let expected = try BlockDecryptor(spec).decrypt(input, atOffset: 0)
        let transform = try DecryptTransform(spec)
        var output: [UInt8] = []
        try input.withUnsafeBytes { try transform.process($0, at: 0, into: &output) }
        XCTAssertEqual(output.count, 160, "the partial block is held back")
        try transform.finish(into: &output)
        XCTAssertEqual(output, expected)
    }

    func testInputRangesAreWholeBlocks() throws {
        let transform = BodyTransform.decrypt(try DecryptTransform(DecryptionSpec(kind: .aes128ECB, key: key)))
        XCTAssertEqual(transform.inputRange(forOutput: 1..<11, totalLength: 1000), 0..<16)
        XCTAssertEqual(transform.inputRange(forOutput: 990..<1003, totalLength: 1003), 976..<1003)
        XCTAssertEqual(transform.inputRange(forOutput: 17..<Int64.max, totalLength: nil), 16..<Int64.max)
        XCTAssertNil(transform.rewrite, "decryption maps blocks; it rewrites no whole body")
    }

    func testMisplacedInputIsRefused() throws {
        let transform = try DecryptTransform(DecryptionSpec(kind: .aes128CTR, key: key, iv: iv))
        var output: [UInt8] = []
        let bytes = ciphertext(20)
        XCTAssertThrowsError(try bytes.withUnsafeBytes { try transform.process($0, at: 5, into: &output) })
        try bytes.withUnsafeBytes { try transform.process($0, at: 0, into: &output) }
        XCTAssertThrowsError(try bytes.withUnsafeBytes { try transform.process($0, at: 100, into: &output) }, "a hole")
    }

    func testLookupFailuresAreReported() {
        guard case .failure(let thrown) = DecryptTransform.make(url: "http://a/x", lookup: { _ in throw TransformError("down") }) else {
            return XCTFail()
        }
        XCTAssertTrue(thrown.description.contains("down"))
        guard case .failure(let bad) = DecryptTransform.make(url: "http://a/x", lookup: { _ in DecryptionSpec(kind: .aes128ECB, key: [1]) }) else {
            return XCTFail()
        }
        XCTAssertTrue(bad.description.contains("16 bytes"), bad.description)
        guard case .success(nil) = DecryptTransform.make(url: "http://a/x", lookup: { _ in nil }) else { return XCTFail() }
    }
}
