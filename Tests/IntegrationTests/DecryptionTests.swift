import Foundation
import HTTPCache
import XCTest

/// Encrypted fixtures made at test time with `openssl enc`, served by nginx;
/// readers and proxy clients must get the plaintext.
final class DecryptionTests: XCTestCase {
    static let keyHex = "000102030405060708090a0b0c0d0e0f"
    // Low bytes near overflow: the counter carries across 32- and 64-bit words.
    static let ivHex = "f0f1f2f3f4f5f6f7fffffffffffffff0"
    static let key = bytes(hex: keyHex)
    static let iv = bytes(hex: ivHex)

    /// `.ctr` and `.ecb` files (and names containing them) are encrypted; the rest is plain.
    static let provider: DecryptionProvider = { url in
        if url.contains(".ctr") { return .aes128CTR(key: key, iv: iv) }
        if url.contains(".ecb") { return .aes128ECB(key: key) }
        return nil
    }

    static func bytes(hex: String) -> [UInt8] {
        var out: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            out.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        return out
    }

    /// Encrypts `plain` into `out` with openssl enc; returns the ciphertext.
    @discardableResult
    static func encrypt(_ plain: URL, to out: URL, ecb: Bool) throws -> [UInt8] {
        let openssl = try TestTools.requireTool("openssl")
        var args = ["enc", ecb ? "-aes-128-ecb" : "-aes-128-ctr", "-K", keyHex, "-in", plain.path, "-out", out.path]
        if ecb { args.append("-nopad") } else { args += ["-iv", ivHex] }
        let result = try TestTools.run(openssl, args, timeout: 60)
        guard result.succeeded else { throw TestSupportError("openssl enc failed: \(result.stderr)") }
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: out.path)
        return [UInt8](try Data(contentsOf: out))
    }

    /// A plain file and its CTR and ECB ciphertexts at the origin.
    func makeFixture(size: Int = 1_000_000, ecb: Bool = true) throws -> (ReaderFixture, plain: [UInt8]) {
        let fixture = try ReaderFixture { $0.decryption = Self.provider }
        let plain = try fixture.file("plain.bin", size: size, seed: 11)
        let ctr = try Self.encrypt(plain.url, to: fixture.root.appendingPathComponent("media.ctr"), ecb: false)
        XCTAssertEqual(ctr.count, size)
        XCTAssertNotEqual(ctr, plain.bytes)
        if ecb {
            let ecb = try Self.encrypt(plain.url, to: fixture.root.appendingPathComponent("media.ecb"), ecb: true)
            XCTAssertEqual(ecb.count, size)
            XCTAssertNotEqual(ecb, plain.bytes)
        }
        return (fixture, plain.bytes)
    }

    func testReaderGivesPlaintextForWholeAndRandomRanges() throws {
        // 1_000_000 is a multiple of 16 (ECB needs whole blocks).
        let (fixture, plain) = try makeFixture()
        for name in ["media.ctr", "media.ecb"] {
            var generator = SplitMix(seed: name == "media.ctr" ? 1 : 2)
            for pass in ["cold", "warm"] {
                for _ in 0..<200 {
                    let offset = Int64(generator.next() % UInt64(plain.count))
                    let length = generator.next() % 4 == 0 ? nil : Int64(generator.next() % 40_000)
                    let got = try fixture.read(name, offset: offset, length: length)
                    let end = length.map { min(Int(offset + $0), plain.count) } ?? plain.count
                    XCTAssertEqual(got, Array(plain[Int(offset)..<end]), "\(name) \(pass) \(offset) +\(length ?? -1)")
                }
                XCTAssertEqual(try fixture.read(name), plain, "\(name) whole, \(pass)")
            }
            // Bytes 1-10 come out of block 0-15: widened on the way in, cut on the way out.
            XCTAssertEqual(try fixture.read(name, offset: 1, length: 10), Array(plain[1..<11]))
        }
    }

    func testCTRWithAShortLastBlockAndSeeks() throws {
        // ECB needs whole blocks; CTR takes any length.
        let (fixture, plain) = try makeFixture(size: 1_000_003, ecb: false)
        let reader = try fixture.cache.openReader(url: fixture.origin.url("/media.ctr"))
        defer { reader.close() }
        XCTAssertEqual(try reader.info(timeout: 10).totalLength, 1_000_003)
        XCTAssertEqual(try readCount(reader, 1001), Array(plain[0..<1001]))
        try reader.seek(to: 999_990)
        XCTAssertEqual(try readAll(reader), Array(plain[999_990...]), "the short last block")
        try reader.seek(to: 500_007)
        XCTAssertEqual(try readCount(reader, 77_777), Array(plain[500_007..<577_784]))
        try reader.seek(to: 3)
        XCTAssertEqual(try readAll(reader), Array(plain[3...]))
    }

    func testECBOfAnUnalignedLengthFailsAtItsTail() throws {
        let (fixture, _) = try makeFixture(size: 100_003, ecb: false)
        try FileManager.default.copyItem(at: fixture.root.appendingPathComponent("media.ctr"),
                                         to: fixture.root.appendingPathComponent("odd.ecb"))
        let reader = try fixture.cache.openReader(url: fixture.origin.url("/odd.ecb"))
        var got = 0
        var buffer = [UInt8](repeating: 0, count: 65_536)
        XCTAssertThrowsError(try {
            while case let n = try buffer.withUnsafeMutableBytes({ try reader.read(into: $0, timeout: 10) }), n > 0 { got += n }
        }()) { error in
            XCTAssertEqual((error as? HTTPCacheError)?.code, .invalidArgument)
            XCTAssertTrue("\(error)".contains("cannot decrypt"), "\(error)")
        }
        XCTAssertEqual(got, 100_000, "every whole block came out first")
        reader.close()
    }

    func testProxyGivesPlaintextForWholeAndRandomRanges() throws {
        let (fixture, plain) = try makeFixture()
        try fixture.cache.serve()
        let total = plain.count
        for name in ["media.ctr", "media.ecb"] {
            let url = try fixture.cache.proxyURL(for: fixture.origin.url("/" + name))
            var generator = SplitMix(seed: name == "media.ctr" ? 3 : 4)
            for pass in ["cold", "warm"] {
                for i in 0..<200 {
                    let a = Int(generator.next() % UInt64(total))
                    let n = Int(generator.next() % 50_000) + 1
                    let range: String
                    let expected: Range<Int>
                    switch i % 3 {
                    case 0:
                        range = "bytes=\(a)-\(min(a + n, total) - 1)"
                        expected = a..<min(a + n, total)
                    case 1:
                        range = "bytes=-\(n)"
                        expected = (total - n)..<total
                    default:
                        range = "bytes=\(max(a, total - 200_000))-"
                        expected = max(a, total - 200_000)..<total
                    }
                    let response = try RawHTTPClient.get(url: url, range: range, timeout: 30)
                    XCTAssertEqual(response.status, 206, "\(name) \(pass) \(range)")
                    XCTAssertEqual(response.header("Content-Range"),
                                   "bytes \(expected.lowerBound)-\(expected.upperBound - 1)/\(total)")
                    XCTAssertEqual(response.contentLength, expected.count)
                    XCTAssertEqual(response.body, Array(plain[expected]), "\(name) \(pass) \(range)")
                }
                let whole = try RawHTTPClient.get(url: url, timeout: 30)
                XCTAssertEqual(whole.status, 200)
                XCTAssertEqual(whole.contentLength, total)
                XCTAssertEqual(whole.body, plain, "\(name) whole, \(pass)")
            }
        }
    }

    func testTheCacheKeepsTheCiphertext() async throws {
        let (fixture, plain) = try makeFixture()
        XCTAssertEqual(try fixture.read("media.ctr"), plain)
        let exported = fixture.directory.url.appendingPathComponent("exported.bin").path
        try await fixture.cache.exportResource(for: fixture.origin.url("/media.ctr"), to: exported)
        let stored = [UInt8](try Data(contentsOf: URL(fileURLWithPath: exported)))
        let ciphertext = [UInt8](try Data(contentsOf: fixture.root.appendingPathComponent("media.ctr")))
        XCTAssertEqual(stored, ciphertext, "the data file holds the origin's bytes")
    }

    func testAFailingKeyLookupLosesNothingCached() throws {
        let (fixture, plain) = try makeFixture()
        XCTAssertEqual(try fixture.read("media.ecb"), plain)
        let size = fixture.cache.cacheSize()
        try fixture.cache.serve()
        let url = try fixture.cache.proxyURL(for: fixture.origin.url("/media.ecb"))

        try fixture.cache.setDecryption { _ in throw HTTPCacheError(.notFound, "key server has no key") }
        let reader = try fixture.cache.openReader(url: fixture.origin.url("/media.ecb"))
        XCTAssertThrowsError(try reader.info(timeout: 10)) { error in
            XCTAssertEqual((error as? HTTPCacheError)?.code, .notFound)
            XCTAssertTrue("\(error)".contains("key server has no key"), "\(error)")
        }
        reader.close()
        let refused = try RawHTTPClient.get(url: url, range: "bytes=0-99", timeout: 10)
        XCTAssertEqual(refused.status, 500)
        XCTAssertTrue(refused.bodyString.contains("key server has no key"), refused.bodyString)

        // A key of the wrong size is refused the same way.
        try fixture.cache.setDecryption { _ in .aes128ECB(key: [1, 2, 3]) }
        let short = try fixture.cache.openReader(url: fixture.origin.url("/media.ecb"))
        XCTAssertThrowsError(try short.info(timeout: 10)) { XCTAssertEqual(($0 as? HTTPCacheError)?.code, .invalidArgument) }
        short.close()

        XCTAssertEqual(fixture.cache.cacheSize(), size, "nothing cached was dropped")
        try fixture.cache.setDecryption(Self.provider)
        fixture.origin.stop()
        XCTAssertEqual(try fixture.read("media.ecb"), plain, "offline, with the key back")
        XCTAssertEqual(try RawHTTPClient.get(url: url, timeout: 10).body, plain)
    }

    func testFFmpegPlaysAnEncryptedMP4FrameIdenticalToThePlainOne() throws {
        let ffmpeg = try TestTools.requireTool("ffmpeg")
        let fixture = try ReaderFixture { $0.decryption = Self.provider }
        let plainMP4 = fixture.root.appendingPathComponent("plain.mp4")
        try MediaFixtures.makeMP4(at: plainMP4, duration: 4)
        try Self.encrypt(plainMP4, to: fixture.root.appendingPathComponent("movie.ctr.mp4"), ecb: false)
        try fixture.cache.serve()
        let url = try fixture.cache.proxyURL(for: fixture.origin.url("/movie.ctr.mp4"))
        func framemd5(_ input: String) throws -> String {
            let result = try TestTools.run(ffmpeg, ["-nostdin", "-hide_banner", "-loglevel", "error",
                                                    "-i", input, "-f", "framemd5", "-"], timeout: 120)
            XCTAssertTrue(result.succeeded, result.stderr)
            return result.stdout
        }
        let expected = try framemd5(plainMP4.path)
        XCTAssertGreaterThan(expected.split(separator: "\n").filter { !$0.hasPrefix("#") }.count, 50)
        XCTAssertEqual(try framemd5(url), expected, "cold")
        XCTAssertEqual(try framemd5(url), expected, "warm")
    }
}
