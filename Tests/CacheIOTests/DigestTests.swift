import CacheIO
import Foundation
import XCTest

final class DigestTests: XCTestCase {
    func testKnownVectors() {
        XCTAssertEqual(Digest.sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        XCTAssertEqual(Digest.sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        // Non-ASCII text is hashed as its UTF-8 bytes.
        XCTAssertEqual(Digest.sha256Hex("\u{00E9}"), "4a99557e4033c3539de2eb65472017cad5f9557f7a0625a09f1c3f6e2ba69c4c")
    }

    /// FIPS 180-4's longer examples: two blocks, and a million bytes.
    func testStandardLongVectors() {
        XCTAssertEqual(Digest.sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
                       "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        XCTAssertEqual(Digest.sha256Hex(String(repeating: "a", count: 1_000_000)),
                       "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    /// Every length around the block and padding boundaries, against sha256sum.
    func testAgreesWithSha256sumAtEveryBoundary() throws {
        let lengths = Array(0...200) + [447, 448, 511, 512, 513, 1000, 4099]
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("digest-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var texts: [String] = []
        for length in lengths {
            let text = String((0..<length).map { Character(UnicodeScalar(UInt8(33 + ($0 * 7 + length) % 94))) })
            texts.append(text)
            try Data(text.utf8).write(to: directory.appendingPathComponent("\(length)"))
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
        process.arguments = lengths.map { directory.appendingPathComponent("\($0)").path }
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let sums = output.split(separator: "\n").map { String($0.prefix(64)) }
        XCTAssertEqual(sums.count, lengths.count)
        for (index, text) in texts.enumerated() where index < sums.count {
            XCTAssertEqual(Digest.sha256Hex(text), sums[index], "length \(lengths[index])")
        }
    }
}
