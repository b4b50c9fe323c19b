// BlockDecryptor against real `openssl enc` output: whole files, random
// unaligned ranges (widen, decrypt at the block offset, cut), counter carry
// across the 64-bit halves and the 2^128 wrap, and the error cases.
import CSupport
import CacheIO
import Foundation
import XCTest

final class BlockDecryptorTests: XCTestCase {
    // MARK: whole files and random ranges

    func testCTRWholeFileMatchesOpenSSL() throws {
        var rng = SplitMix64(seed: 0xC7A1)
        let plain = rng.bytes(1 << 20 + 37)
        let spec = DecryptionSpec(kind: .aes128CTR, key: rng.bytes(16), iv: rng.bytes(16))
        let cipher = try OpenSSLEnc.encrypt(plain, spec)
        XCTAssertEqual(cipher.count, plain.count)
        XCTAssertNotEqual(cipher, plain)

        let decryptor = try BlockDecryptor(spec)
        XCTAssertEqual(try decryptor.decrypt(cipher, atOffset: 0), plain)

        // In place, as a reader decrypting its own read buffer would.
        var buffer = cipher
        try buffer.withUnsafeMutableBytes { bytes in
            try decryptor.decrypt(UnsafeRawBufferPointer(bytes), atOffset: 0, into: bytes)
        }
        XCTAssertEqual(buffer, plain)
    }

    func testCTRRandomRangesMatchPlaintext() throws {
        var rng = SplitMix64(seed: 0xC7A2)
        let plain = rng.bytes(1 << 20 + 37)
        let spec = DecryptionSpec(kind: .aes128CTR, key: rng.bytes(16), iv: rng.bytes(16))
        let cipher = try OpenSSLEnc.encrypt(plain, spec)
        try checkRanges(plain: plain, cipher: cipher, spec: spec, rng: &rng)
    }

    func testECBWholeFileMatchesOpenSSL() throws {
        var rng = SplitMix64(seed: 0xEC01)
        let plain = rng.bytes(1 << 20)
        let spec = DecryptionSpec(kind: .aes128ECB, key: rng.bytes(16))
        let cipher = try OpenSSLEnc.encrypt(plain, spec)
        XCTAssertEqual(cipher.count, plain.count, "-nopad keeps the length")
        XCTAssertEqual(try BlockDecryptor(spec).decrypt(cipher, atOffset: 0), plain)
    }

    func testECBRandomRangesMatchPlaintext() throws {
        var rng = SplitMix64(seed: 0xEC02)
        let plain = rng.bytes(1 << 20)
        let spec = DecryptionSpec(kind: .aes128ECB, key: rng.bytes(16))
        let cipher = try OpenSSLEnc.encrypt(plain, spec)
        try checkRanges(plain: plain, cipher: cipher, spec: spec, rng: &rng)
    }

    /// Sequential reads in chunks (block-aligned, of varying size) rebuild
    /// the whole plaintext, the way a streaming reader uses one decryptor.
    func testCTRSequentialChunksWithOneDecryptor() throws {
        var rng = SplitMix64(seed: 0xC7A3)
        let plain = rng.bytes(300_000 + 5)
        let spec = DecryptionSpec(kind: .aes128CTR, key: rng.bytes(16), iv: rng.bytes(16))
        let cipher = try OpenSSLEnc.encrypt(plain, spec)
        let decryptor = try BlockDecryptor(spec)
        var out: [UInt8] = []
        var offset = 0
        while offset < cipher.count {
            let length = min(16 * Int(rng.next() % 700 + 1), cipher.count - offset)
            out += try decryptor.decrypt(Array(cipher[offset..<offset + length]), atOffset: Int64(offset))
            offset += length
        }
        XCTAssertEqual(out, plain)
    }

    // MARK: counter carry

    /// The low 64 bits of the counter overflow after 16 blocks: the carry
    /// must reach the high half, as it does in openssl.
    func testCTRCarryAcrossTheSixtyFourBitHalves() throws {
        let iv: [UInt8] = [0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0xff,
                           0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xf0]
        try checkCounterEdge(iv: iv, seed: 0xCA01)
    }

    /// All 128 bits overflow after 16 blocks: the counter wraps to zero.
    func testCTRWrapAtTwoToThe128() throws {
        try checkCounterEdge(iv: [UInt8](repeating: 0xff, count: 15) + [0xf0], seed: 0xCA02)
    }

    /// The all-ones IV wraps after the first block.
    func testCTRAllOnesIV() throws {
        try checkCounterEdge(iv: [UInt8](repeating: 0xff, count: 16), seed: 0xCA03)
    }

    func testCounterArithmetic() {
        func counter(_ iv: [UInt8], _ index: UInt64) -> [UInt8] {
            var out = [UInt8](repeating: 0, count: 16)
            cs_cipher_counter_at(iv, index, &out)
            return out
        }
        let zero = [UInt8](repeating: 0, count: 16)
        let ones = [UInt8](repeating: 0xff, count: 16)
        XCTAssertEqual(counter(zero, 0x0102), zero.prefix(14) + [0x01, 0x02])
        XCTAssertEqual(counter(ones, 1), zero, "wraps modulo 2^128")
        // (2^128 - 1) + (2^64 - 1) = 2^64 - 2 mod 2^128: high half 0, low half ff..fe.
        XCTAssertEqual(counter(ones, UInt64.max), zero.prefix(8) + [UInt8](repeating: 0xff, count: 7) + [0xfe])
        // Low half all ones + 1 carries into the high half.
        let lowOnes = zero.prefix(8) + [UInt8](repeating: 0xff, count: 8)
        XCTAssertEqual(counter(Array(lowOnes), 1), zero.prefix(7) + [0x01] + zero.prefix(8))
    }

    // MARK: errors

    func testSetupErrors() {
        XCTAssertThrowsError(try BlockDecryptor(DecryptionSpec(kind: .aes128CTR, key: [UInt8](repeating: 1, count: 15),
                                                               iv: [UInt8](repeating: 0, count: 16)))) {
            XCTAssertEqual($0 as? DecryptionError, .badKeyLength(15))
            XCTAssertEqual("\($0)", "AES-128 key must be 16 bytes, got 15")
        }
        XCTAssertThrowsError(try BlockDecryptor(DecryptionSpec(kind: .aes128CTR, key: [UInt8](repeating: 1, count: 16),
                                                               iv: [UInt8](repeating: 0, count: 8)))) {
            XCTAssertEqual($0 as? DecryptionError, .badIVLength(8))
            XCTAssertEqual("\($0)", "AES-128 IV must be 16 bytes, got 8")
        }
        XCTAssertThrowsError(try BlockDecryptor(DecryptionSpec(kind: .aes128CTR, key: [UInt8](repeating: 1, count: 16)))) {
            XCTAssertEqual($0 as? DecryptionError, .badIVLength(0), "CTR needs its IV")
        }
        XCTAssertThrowsError(try BlockDecryptor(DecryptionSpec(kind: .aes128ECB, key: [UInt8](repeating: 1, count: 32)))) {
            XCTAssertEqual($0 as? DecryptionError, .badKeyLength(32))
        }
        XCTAssertNoThrow(try BlockDecryptor(DecryptionSpec(kind: .aes128ECB, key: [UInt8](repeating: 1, count: 16))),
                         "ECB needs no IV")
        XCTAssertThrowsError(try BlockDecryptor(DecryptionSpec(kind: .aes128ECB, key: [UInt8](repeating: 1, count: 16),
                                                               iv: [1, 2, 3]))) {
            XCTAssertEqual($0 as? DecryptionError, .badIVLength(3), "an IV given to ECB is still checked")
        }
    }

    func testDecryptErrors() throws {
        let ctr = try BlockDecryptor(DecryptionSpec(kind: .aes128CTR, key: [UInt8](repeating: 7, count: 16),
                                                    iv: [UInt8](repeating: 9, count: 16)))
        let ecb = try BlockDecryptor(DecryptionSpec(kind: .aes128ECB, key: [UInt8](repeating: 7, count: 16)))
        let block = [UInt8](repeating: 0xab, count: 32)

        XCTAssertThrowsError(try ctr.decrypt(block, atOffset: 5)) {
            XCTAssertEqual($0 as? DecryptionError, .unalignedOffset(5))
            XCTAssertEqual("\($0)", "decryption offset 5 is not a non-negative multiple of 16")
        }
        XCTAssertThrowsError(try ctr.decrypt(block, atOffset: -16)) {
            XCTAssertEqual($0 as? DecryptionError, .unalignedOffset(-16))
        }
        XCTAssertThrowsError(try ecb.decrypt(Array(block.prefix(17)), atOffset: 0)) {
            XCTAssertEqual($0 as? DecryptionError, .lengthNotBlockAligned(17))
            XCTAssertEqual("\($0)", "AES-128-ECB input of 17 bytes is not a multiple of 16")
        }
        XCTAssertNoThrow(try ctr.decrypt(Array(block.prefix(17)), atOffset: 16), "CTR takes a short tail")

        var small = [UInt8](repeating: 0, count: 16)
        var refusal: DecryptionError?
        block.withUnsafeBytes { input in
            small.withUnsafeMutableBytes { output in
                do throws(DecryptionError) {
                    try ecb.decrypt(input, atOffset: 0, into: output)
                } catch {
                    refusal = error
                }
            }
        }
        XCTAssertEqual(refusal, .outputTooSmall(needed: 32, available: 16))
        XCTAssertEqual(small, [UInt8](repeating: 0, count: 16), "nothing written on a refused call")
        XCTAssertEqual(try ctr.decrypt([], atOffset: 0), [])
    }

    // MARK: range arithmetic

    func testWiden() {
        XCTAssertEqual(BlockDecryptor.widen(5..<6, totalLength: 100), 0..<16)
        XCTAssertEqual(BlockDecryptor.widen(16..<32, totalLength: 100), 16..<32, "aligned stays")
        XCTAssertEqual(BlockDecryptor.widen(17..<33, totalLength: nil), 16..<48, "unknown length: no clamp")
        XCTAssertEqual(BlockDecryptor.widen(90..<100, totalLength: 100), 80..<100, "short last block")
        XCTAssertEqual(BlockDecryptor.widen(0..<1000, totalLength: 37), 0..<37)
        XCTAssertEqual(BlockDecryptor.widen(36..<37, totalLength: 37), 32..<37)
        XCTAssertTrue(BlockDecryptor.widen(40..<50, totalLength: 37).isEmpty, "past the end")
        XCTAssertTrue(BlockDecryptor.widen(37..<38, totalLength: 37).isEmpty, "at the end")
        XCTAssertEqual(BlockDecryptor.widen(33..<50, totalLength: 37), 32..<37, "clamped before rounding")
        XCTAssertEqual(BlockDecryptor.widen(20..<20, totalLength: 100), 16..<16, "empty stays empty")
    }

    func testCut() {
        XCTAssertEqual(BlockDecryptor.cut(5..<6, from: 0..<16), 5..<6)
        XCTAssertEqual(BlockDecryptor.cut(17..<45, from: 16..<48), 1..<29)
        XCTAssertEqual(BlockDecryptor.cut(30..<1000, from: 16..<37), 14..<21, "clamped to the resource end")
        let plain: [UInt8] = Array(0..<48)
        plain.withUnsafeBytes { raw in
            XCTAssertEqual(Array(BlockDecryptor.cut(20..<23, from: raw, covering: 16..<64)), [4, 5, 6])
        }
    }

    // MARK: helpers

    /// Widen + decrypt at the block offset + cut, for 200 ranges of all
    /// shapes, each compared byte for byte with the plaintext.
    private func checkRanges(plain: [UInt8], cipher: [UInt8], spec: DecryptionSpec,
                             rng: inout SplitMix64, file: StaticString = #filePath, line: UInt = #line) throws {
        let total = Int64(plain.count)
        let decryptor = try BlockDecryptor(spec)
        var ranges: [Range<Int64>] = [
            0..<1, 15..<16, 16..<17, total - 1..<total,             // single bytes at block edges and the end
            (total - 1) / 16 * 16..<total, total - 20..<total,     // the last (maybe partial) block
            1..<total - 1, 0..<total,                               // across nearly everything
        ]
        while ranges.count < 200 {
            let start = Int64(rng.next() % UInt64(total))
            let maxLength: Int64 = switch ranges.count % 4 {
            case 0: 1                   // single bytes
            case 1: 48                  // inside or across a couple of blocks
            case 2: 70_000              // across thousands of blocks
            default: total              // often to the end
            }
            let length = Int64(rng.next() % UInt64(maxLength)) + 1
            ranges.append(start..<min(start + length, total))
        }
        var mismatches = 0
        var buffer = [UInt8](repeating: 0, count: plain.count)
        for range in ranges {
            let widened = BlockDecryptor.widen(range, totalLength: total)
            XCTAssertEqual(widened.lowerBound % 16, 0, file: file, line: line)
            XCTAssertTrue(widened.contains(range.lowerBound) && widened.upperBound >= range.upperBound,
                          "\(widened) covers \(range)", file: file, line: line)
            let input = cipher[Int(widened.lowerBound)..<Int(widened.upperBound)]
            try input.withUnsafeBytes { inBytes in
                try buffer.withUnsafeMutableBytes { outBytes in
                    try decryptor.decrypt(inBytes, atOffset: widened.lowerBound, into: outBytes)
                }
            }
            let got = buffer.withUnsafeBytes { Array(BlockDecryptor.cut(range, from: $0, covering: widened)) }
            if got != Array(plain[Int(range.lowerBound)..<Int(range.upperBound)]) {
                mismatches += 1
                XCTFail("range \(range) (widened \(widened)) differs", file: file, line: line)
            }
        }
        XCTAssertEqual(ranges.count, 200, file: file, line: line)
        XCTAssertEqual(mismatches, 0, file: file, line: line)
    }

    /// For an IV near a carry or the wrap: whole file against openssl, then
    /// every block alone, so each one's counter comes from cs_cipher's own
    /// addition rather than OpenSSL's increment.
    private func checkCounterEdge(iv: [UInt8], seed: UInt64,
                                  file: StaticString = #filePath, line: UInt = #line) throws {
        var rng = SplitMix64(seed: seed)
        let plain = rng.bytes(40 * 16 + 9)
        let spec = DecryptionSpec(kind: .aes128CTR, key: rng.bytes(16), iv: iv)
        let cipher = try OpenSSLEnc.encrypt(plain, spec)
        let decryptor = try BlockDecryptor(spec)
        XCTAssertEqual(try decryptor.decrypt(cipher, atOffset: 0), plain, file: file, line: line)
        for start in stride(from: 0, to: cipher.count, by: 16) {
            let end = min(start + 16, cipher.count)
            XCTAssertEqual(try decryptor.decrypt(Array(cipher[start..<end]), atOffset: Int64(start)),
                           Array(plain[start..<end]), "block \(start / 16)", file: file, line: line)
        }
        // A run straddling the carry point, started past it and before it.
        XCTAssertEqual(try decryptor.decrypt(Array(cipher[160..<400]), atOffset: 160), Array(plain[160..<400]),
                       file: file, line: line)
        XCTAssertEqual(try decryptor.decrypt(Array(cipher[272..<cipher.count]), atOffset: 272),
                       Array(plain[272...]), file: file, line: line)
    }
}

/// Deterministic random bytes, so a failure reproduces with its seed.
private struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func bytes(_ count: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        var i = 0
        while i < count {
            let word = next()
            for k in 0..<min(8, count - i) { out[i + k] = UInt8(truncatingIfNeeded: word >> (8 * k)) }
            i += 8
        }
        return out
    }
}

/// The real `openssl enc`, run on temporary files.
private enum OpenSSLEnc {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static func encrypt(_ plain: [UInt8], _ spec: DecryptionSpec) throws -> [UInt8] {
        guard let openssl = ["/usr/bin/openssl", "/usr/local/bin/openssl"]
            .first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw XCTSkip("openssl is not installed")
        }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("cipher-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = dir.appendingPathComponent("plain")
        let output = dir.appendingPathComponent("cipher")
        try Data(plain).write(to: input)

        var arguments = ["enc", "-e", "-nosalt", "-K", hex(spec.key), "-in", input.path, "-out", output.path]
        switch spec.kind {
        case .aes128CTR: arguments += ["-aes-128-ctr", "-iv", hex(spec.iv)]
        case .aes128ECB: arguments += ["-aes-128-ecb", "-nopad"]
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: openssl)
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        // stderr to a file: a pipe could fill and block the child.
        let errors = dir.appendingPathComponent("stderr")
        _ = FileManager.default.createFile(atPath: errors.path, contents: nil)
        let errorHandle = try FileHandle(forWritingTo: errors)
        defer { try? errorHandle.close() }
        process.standardError = errorHandle
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            let message = (try? String(contentsOf: errors, encoding: .utf8)) ?? ""
            throw Failure(description: "openssl \(arguments.joined(separator: " ")) failed: \(message)")
        }
        return Array(try Data(contentsOf: output))
    }

    static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { String(format: "%02x", $0) }.joined()
    }
}
