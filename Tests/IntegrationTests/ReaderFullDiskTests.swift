import Foundation
import HTTPCache
import XCTest

/// The reader on a cache folder that fills up: bytes pass through (and are
/// decrypted on the way) once the disk is full, as for proxy clients.
final class ReaderFullDiskTests: XCTestCase {
    func testReadsPassThroughAFullDisk() throws {
        let directory = try TemporaryDirectory(prefix: "httpcache-reader")
        let root = directory.url.appendingPathComponent("www")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let cacheDirectory = directory.url.appendingPathComponent("cache").path
        try FileManager.default.createDirectory(atPath: cacheDirectory, withIntermediateDirectories: true)
        let mounted = try TestTools.run("/bin/mount", ["-t", "tmpfs", "-o", "size=3m,mode=0700", "tmpfs", cacheDirectory])
        guard mounted.succeeded else { throw XCTSkip("cannot mount a tmpfs here: \(mounted.stderr)") }
        defer { _ = try? TestTools.run("/bin/umount", ["-l", cacheDirectory]) }
        let origin = try NginxOrigin(root: root)
        let plain = try TestFile.random(size: 10_000_000, seed: 21, in: root, name: "big.bin")
        try DecryptionTests.encrypt(plain.url, to: root.appendingPathComponent("big.ctr"), ecb: false)
        var configuration = HTTPCacheConfiguration(cacheDirectory: cacheDirectory)
        configuration.decryption = DecryptionTests.provider
        let cache = try MediaCache(configuration: configuration)
        defer { cache.close() }

        for name in ["big.bin", "big.ctr"] {
            let reader = try cache.openReader(url: origin.url("/" + name))
            XCTAssertEqual(try readAll(reader), plain.bytes, "\(name) whole, past a full disk")
            for range in [0..<1_000_000, 2_500_007..<6_000_000, 9_000_000..<10_000_000] {
                try reader.seek(to: Int64(range.lowerBound))
                XCTAssertEqual(try readCount(reader, range.count), Array(plain.bytes[range]), "\(name) \(range)")
            }
            reader.close()
        }
    }
}
