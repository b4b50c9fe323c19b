import CacheStorage
import Foundation
import HTTPCache
import XCTest

/// Encryption at rest (`--encryption-key-file`, `encryptionKey`): the folder
/// holds no plaintext byte, URL or header value; every range is served and
/// read byte-exact; keys are checked; rekey, export and import.
final class EncryptionTests: XCTestCase {
    static func key(_ fill: UInt8) -> [UInt8] { (0..<32).map { UInt8($0) &* 13 &+ fill } }

    /// A key file of 64 hex digits, mode 600 (a key others can read is refused).
    static func keyFile(_ directory: TemporaryDirectory, _ fill: UInt8) throws -> String {
        let path = directory.file("key-\(fill)").path
        try Data(key(fill).map { String(format: "%02x", $0) }.joined().utf8).write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        return path
    }

    // MARK: the folder scan

    /// Every regular file under `folder` (its root files, index, journals, entries).
    static func files(under folder: String) -> [String] {
        let paths = (try? FileManager.default.subpathsOfDirectory(atPath: folder)) ?? []
        return paths.map { folder + "/" + $0 }.filter {
            var isDirectory: ObjCBool = false
            return FileManager.default.fileExists(atPath: $0, isDirectory: &isDirectory) && !isDirectory.boolValue
        }
    }

    /// What of `plaintexts` (any 16-byte window) and `strings` the files and
    /// names under `folder` show; empty when nothing.
    static func leaks(in folder: String, plaintexts: [[UInt8]], strings: [String]) -> [String] {
        // Every plaintext window by its first 8 bytes; a hit is then compared whole.
        var windows: [UInt64: (Int, Int)] = [:]
        for (which, plain) in plaintexts.enumerated() where plain.count >= 16 {
            plain.withUnsafeBytes { raw in
                for offset in 0...(plain.count - 16) {
                    windows[raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)] = (which, offset)
                }
            }
        }
        var found: [String] = []
        for path in files(under: folder) {
            for string in strings where path.contains(string) { found.append("name \(path) has \(string)") }
            guard let bytes = FileManager.default.contents(atPath: path).map([UInt8].init), bytes.count >= 16 else { continue }
            for string in strings where bytes.firstRange(of: Array(string.utf8)) != nil {
                found.append("\(path) holds \"\(string)\"")
            }
            bytes.withUnsafeBytes { raw in
                for offset in 0...(bytes.count - 16) {
                    guard let (which, at) = windows[raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)] else { continue }
                    if bytes[offset..<(offset + 16)].elementsEqual(plaintexts[which][at..<(at + 16)]) {
                        found.append("\(path) holds plaintext of resource \(which) at \(offset)")
                        return
                    }
                }
            }
        }
        return found
    }

    // MARK: proxy

    func testFolderHoldsNoPlaintextURLOrHeaderAndProxyRangesAreExact() throws {
        let fixture = try ProxyFixture { $0.encryptionKey = Self.key(1) }
        defer { fixture.stop() }
        let a = try fixture.file("enc-a.bin", size: 1_200_000, seed: 21)
        let b = try fixture.file("enc-b.bin", size: 5_000, seed: 22)
        func check(_ range: String?, _ expected: Range<Int>, _ file: TestFile = a, _ name: String = "enc-a.bin") throws {
            let response = try fixture.get(name, range: range)
            XCTAssertEqual(response.status, range == nil ? 200 : 206, range ?? "whole")
            XCTAssertBytes(response.body, equal: file, range: expected)
        }
        try check("bytes=300000-700000", 300_000..<700_001)  // cold
        try check("bytes=600000-900000", 600_000..<900_001)  // partly cached
        try check(nil, 0..<a.size)
        var generator = SplitMix(seed: 5)
        for _ in 0..<30 {  // warm, across units and the end
            let start = Int(generator.next() % UInt64(a.size))
            let end = min(a.size, start + 1 + Int(generator.next() % 20_000))
            try check("bytes=\(start)-\(end - 1)", start..<end)
        }
        try check("bytes=4095-8192", 4095..<8193)
        try check("bytes=-7", (a.size - 7)..<a.size)
        try check(nil, 0..<b.size, b, "enc-b.bin")
        try check("bytes=4090-", 4090..<b.size, b, "enc-b.bin")

        fixture.server.close()  // everything flushed: metadata, index
        let urls = [fixture.origin.url("/enc-a.bin"), fixture.origin.url("/enc-b.bin")]
        let leaks = Self.leaks(in: fixture.cacheDirectory, plaintexts: [a.bytes, b.bytes],
                               strings: ["enc-a.bin", "enc-b.bin", "127.0.0.1:\(fixture.origin.port)", "nginx",
                                         "application/octet-stream"] + urls.map { ResourceStore.key(for: $0) })
        XCTAssertEqual(leaks, [])
        XCTAssertFalse(Self.files(under: fixture.cacheDirectory + "/resources").isEmpty)
        // The scan finds what is there: the origin's own copy shows plaintext and its name.
        XCTAssertFalse(Self.leaks(in: fixture.root.path, plaintexts: [a.bytes], strings: ["enc-a.bin"]).isEmpty)

        // Restarted with the key and the origin gone: served from the encrypted files.
        try fixture.restartProxy()
        fixture.origin.stop()
        try check(nil, 0..<a.size)
        try check("bytes=1000-70000", 1000..<70_001)
        try check(nil, 0..<b.size, b, "enc-b.bin")
    }

    /// A download's record names its URL and title: sealed like the
    /// metadata in an encrypted folder, and read back only with the key.
    func testDownloadRecordsAreSealed() throws {
        let directory = try TemporaryDirectory(prefix: "encrypted-download")
        defer { directory.remove() }
        let www = directory.file("www")
        try FileManager.default.createDirectory(at: www, withIntermediateDirectories: true)
        let file = try TestFile.random(size: 300_000, seed: 31, in: www, name: "secret-file.bin")
        let origin = try NginxOrigin(root: www)
        let folder = directory.file("cache").path
        let key = try Self.keyFile(directory, 4)
        func cli(_ arguments: [String]) throws -> ProcessResult {
            try TestTools.run(CLITests.binary, ["download"] + arguments + ["--cache-dir", folder], timeout: 120)
        }
        let added = try cli(["add", origin.url("/secret-file.bin"), "--name", "Secret Title", "--encryption-key-file", key])
        XCTAssertTrue(added.succeeded, added.stderr)
        let id = added.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertEqual(try cli(["wait", id, "--encryption-key-file", key]).exitCode, 0)

        XCTAssertFalse(Self.files(under: folder + "/downloads").isEmpty)
        XCTAssertEqual(Self.leaks(in: folder, plaintexts: [file.bytes],
                                  strings: ["secret-file.bin", "Secret Title", "127.0.0.1:\(origin.port)"]), [])
        let listed = try cli(["list", "--json", "--encryption-key-file", key])
        let records = try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [[String: Any]] ?? []
        XCTAssertEqual(records.map { $0["name"] as? String }, ["Secret Title"], listed.stderr)
        XCTAssertEqual(records.first?["state"] as? String, "completed")
        XCTAssertEqual(try cli(["list", "--json"]).exitCode, 22, "no key for an encrypted folder")
    }

    /// Two loops and a size limit: entries of both shards evicted, every byte served exact.
    func testSeveralLoopsAndEviction() throws {
        let fixture = try ProxyFixture {
            $0.encryptionKey = Self.key(2)
            $0.loops = 2
            $0.maxCacheSize = 2_500_000
        }
        defer { fixture.stop() }
        let files = try (0..<6).map { try fixture.file("loop\($0).bin", size: 700_000, seed: UInt64(30 + $0)) }
        for pass in 0..<2 {
            for file in files {
                XCTAssertBytes(try fixture.get(file.name).body, equal: file, range: 0..<file.size)
                let response = try fixture.get(file.name, range: "bytes=123456-654321")
                XCTAssertBytes(response.body, equal: file, range: 123_456..<654_322)
                _ = pass
            }
        }
        XCTAssertTrue(TestTools.waitUntil(timeout: 5) { fixture.server.cacheSize() <= 2_500_000 })
        XCTAssertLessThan(fixture.server.cachedResources().count, 6, "some were evicted")
    }

    // MARK: reader

    func testReaderRangesColdPartialWarmAndAfterRestart() throws {
        let fixture = try ReaderFixture { $0.encryptionKey = Self.key(3) }
        let file = try fixture.file("r.bin", size: 900_001, seed: 41)
        XCTAssertEqual(try fixture.read("r.bin", offset: 200_000, length: 100_000), file.slice(200_000..<300_000))
        XCTAssertEqual(try fixture.read("r.bin", offset: 250_000, length: 300_000), file.slice(250_000..<550_000))
        XCTAssertEqual(try fixture.read("r.bin"), file.bytes)
        XCTAssertEqual(try fixture.read("r.bin", offset: 4_097, length: 3), file.slice(4_097..<4_100))
        fixture.cache.close()
        fixture.origin.stop()
        var configuration = HTTPCacheConfiguration(cacheDirectory: fixture.cacheDirectory)
        configuration.encryptionKey = Self.key(3)
        fixture.cache = try MediaCache(configuration: configuration)
        XCTAssertEqual(try fixture.read("r.bin"), file.bytes)
        XCTAssertEqual(try fixture.read("r.bin", offset: 899_990), file.slice(899_990..<900_001))
    }

    /// Both layers: an origin's AES-CTR ciphertext decrypted while serving,
    /// stored encrypted at rest; readers get the plaintext.
    func testDecryptWhileServingOverAnEncryptedFolder() throws {
        let fixture = try ReaderFixture {
            $0.decryption = DecryptionTests.provider
            $0.encryptionKey = Self.key(4)
        }
        let plain = try fixture.file("plain.bin", size: 300_000, seed: 11)
        let cipher = try DecryptionTests.encrypt(plain.url, to: fixture.root.appendingPathComponent("media.ctr"), ecb: false)
        XCTAssertEqual(try fixture.read("media.ctr"), plain.bytes)
        XCTAssertEqual(try fixture.read("media.ctr", offset: 77_777, length: 1_000), plain.slice(77_777..<78_777))
        fixture.cache.close()
        XCTAssertEqual(Self.leaks(in: fixture.cacheDirectory, plaintexts: [plain.bytes, cipher], strings: ["media.ctr"]), [])
    }

    // MARK: HLS

    func testHLSPlaysFrameExactFromAnEncryptedFolder() throws {
        let fixture = try HLSFixture()
        let directory = try TemporaryDirectory(prefix: "hls-encrypted")
        defer { directory.remove() }
        var configuration = HTTPCacheConfiguration(cacheDirectory: directory.file("cache").path)
        configuration.encryptionKey = Self.key(5)
        let cache = try MediaCache(configuration: configuration)
        defer { cache.close() }
        try cache.serve()
        var references: [String: [String]] = [:]
        for url in [fixture.master, fixture.aes] {
            references[url] = try HLSFixture.frameMD5(url)
            XCTAssertEqual(try HLSFixture.frameMD5(try cache.proxyURL(for: url)), references[url], url)
        }
        let playlist = String(decoding: try RawHTTPClient.get(url: try cache.proxyURL(for: fixture.master), timeout: 20).body,
                              as: UTF8.self)
        XCTAssertTrue(playlist.contains("/p/"), "rewritten from the encrypted copy: \(playlist)")
        // A preload (no proxy) into another encrypted folder walks the playlists it stored encrypted.
        let preloaded = directory.file("preloaded").path
        let keyFile = try Self.keyFile(directory, 5)
        let preload = try TestTools.run(CLITests.binary, ["preload", fixture.aes, "--cache-dir", preloaded,
                                                          "--encryption-key-file", keyFile], timeout: 120)
        XCTAssertTrue(preload.succeeded, preload.stderr)
        fixture.origin.stop()
        for url in [fixture.master, fixture.aes] {
            XCTAssertEqual(try HLSFixture.frameMD5(try cache.proxyURL(for: url)), references[url], "\(url) offline")
        }
        XCTAssertEqual(Self.leaks(in: directory.file("cache").path, plaintexts: [], strings: ["#EXTM3U", "seg0.ts", "m3u8"]), [])
        var offline = HTTPCacheConfiguration(cacheDirectory: preloaded)
        offline.encryptionKey = Self.key(5)
        let preloadedCache = try MediaCache(configuration: offline)
        defer { preloadedCache.close() }
        try preloadedCache.serve()
        XCTAssertEqual(try HLSFixture.frameMD5(try preloadedCache.proxyURL(for: fixture.aes)), references[fixture.aes],
                       "preloaded, offline")
        XCTAssertEqual(Self.leaks(in: preloaded, plaintexts: [], strings: ["#EXTM3U", "m3u8"]), [])
    }

    // MARK: keys

    /// A wrong key, no key, and a key for a plain folder are refused with
    /// `.key` (CLI exit 22); the folder is left exactly as it was.
    func testWrongAndMissingKeysAreRefusedAndNothingIsDeleted() throws {
        let fixture = try ReaderFixture { $0.encryptionKey = Self.key(6) }
        let file = try fixture.file("k.bin", size: 100_000, seed: 51)
        XCTAssertEqual(try fixture.read("k.bin"), file.bytes)
        fixture.cache.close()
        func snapshot(_ folder: String) -> [String: Int] {
            Dictionary(uniqueKeysWithValues: Self.files(under: folder).filter { !$0.hasSuffix("/lock") }.map {
                ($0, (try? FileManager.default.attributesOfItem(atPath: $0)[.size] as? Int) ?? -1)
            })
        }
        let before = snapshot(fixture.cacheDirectory)
        XCTAssertFalse(before.isEmpty)
        for (key, what) in [(Self.key(7), "wrong key"), (nil, "no key")] as [([UInt8]?, String)] {
            var configuration = HTTPCacheConfiguration(cacheDirectory: fixture.cacheDirectory)
            configuration.encryptionKey = key
            XCTAssertThrowsError(try MediaCache(configuration: configuration), what) { error in
                XCTAssertEqual((error as? HTTPCacheError)?.code, .key, "\(what): \(error)")
            }
        }
        let keys = try TemporaryDirectory(prefix: "keys")
        let wrong = try TestTools.run(CLITests.binary, ["serve", "--port", "0", "--cache-dir", fixture.cacheDirectory,
                                      "--encryption-key-file", try Self.keyFile(keys, 7)])
        XCTAssertEqual(wrong.exitCode, 22, wrong.stderr)
        XCTAssertTrue(wrong.stderr.contains("wrong encryption key"), wrong.stderr)
        XCTAssertEqual(snapshot(fixture.cacheDirectory), before, "nothing removed or rewritten")
        fixture.origin.stop()
        var right = HTTPCacheConfiguration(cacheDirectory: fixture.cacheDirectory)
        right.encryptionKey = Self.key(6)
        fixture.cache = try MediaCache(configuration: right)
        XCTAssertEqual(try fixture.read("k.bin"), file.bytes)
        fixture.cache.close()

        // A folder made without a key does not open with one.
        let plainFolder = fixture.directory.file("plain-cache").path
        try MediaCache(configuration: HTTPCacheConfiguration(cacheDirectory: plainFolder)).close()
        var keyed = HTTPCacheConfiguration(cacheDirectory: plainFolder)
        keyed.encryptionKey = Self.key(6)
        XCTAssertThrowsError(try MediaCache(configuration: keyed)) { error in
            XCTAssertEqual((error as? HTTPCacheError)?.code, .key)
            XCTAssertTrue("\(error)".contains("without encryption"), "\(error)")
        }
    }

    /// `cache rekey` re-encrypts in place: afterwards the new key opens the
    /// folder and reads every byte (whole, sparse and small entries, a
    /// download's record); the old key opens nothing, even with the old
    /// `encryption` file put back; no data file keeps its ciphertext.
    /// Killed (-9) at random moments, the folder opens with the old key (not
    /// begun) or the new one (done), or refuses both as an interrupted rekey
    /// until the same command finishes it.
    func testRekeyReencryptsInPlaceIncludingKillsDuringIt() throws {
        let fixture = try ReaderFixture { $0.encryptionKey = Self.key(8) }
        let whole = try fixture.file("rk.bin", size: 3_000_000, seed: 61)
        let part = try fixture.file("part.bin", size: 2_000_000, seed: 62)
        XCTAssertEqual(try fixture.read("rk.bin"), whole.bytes)
        XCTAssertEqual(try fixture.read("part.bin", offset: 500_001, length: 300_000), Array(part.bytes[500_001..<800_001]))
        var small: [TestFile] = []
        for i in 0..<150 {
            small.append(try fixture.file("s\(i).bin", size: 3_000 + i * 97, seed: UInt64(100 + i)))
            XCTAssertEqual(try fixture.read("s\(i).bin"), small[i].bytes)
        }
        let entries = 152
        let keys = try TemporaryDirectory(prefix: "keys")
        let files: [UInt8: String] = [8: try Self.keyFile(keys, 8), 9: try Self.keyFile(keys, 9)]
        func rekey(_ from: UInt8, _ to: UInt8) throws -> ProcessResult {
            try TestTools.run(CLITests.binary, ["cache", "rekey", "--cache-dir", fixture.cacheDirectory,
                                                "--old-key-file", files[from]!, "--new-key-file", files[to]!], timeout: 120)
        }
        XCTAssertEqual(try rekey(8, 9).exitCode, 14, "busy while the folder is open")
        fixture.cache.close()
        let title = try TestTools.run(CLITests.binary, ["download", "add", fixture.origin.url("/s3.bin"), "--name", "Title",
                                                        "--cache-dir", fixture.cacheDirectory, "--encryption-key-file", files[8]!])
        XCTAssertTrue(title.succeeded, title.stderr)
        fixture.origin.stop()

        /// The folder's entries under a key, or the error opening it.
        func open(_ fill: UInt8, folder: String? = nil) -> Result<Int, HTTPCacheError> {
            var configuration = HTTPCacheConfiguration(cacheDirectory: folder ?? fixture.cacheDirectory)
            configuration.encryptionKey = Self.key(fill)
            do {
                let cache = try MediaCache(configuration: configuration)
                defer { cache.close() }
                return .success(cache.cachedResources().count)
            } catch { return .failure(error) }
        }
        func dataFiles() -> [String: [UInt8]] {
            var found: [String: [UInt8]] = [:]
            for path in Self.files(under: fixture.cacheDirectory + "/resources") where path.contains(".data") {
                found[path] = FileManager.default.contents(atPath: path).map { Array([UInt8]($0).prefix(8192)) }
            }
            return found
        }
        let sealedBefore = try XCTUnwrap(FileManager.default.contents(atPath: fixture.cacheDirectory + "/encryption"))
        let before = dataFiles()
        XCTAssertEqual(before.count, entries)

        let rekeyed = try rekey(8, 9)
        XCTAssertTrue(rekeyed.succeeded, rekeyed.stderr)
        XCTAssertTrue(rekeyed.stdout.contains("\(entries) entries"), rekeyed.stdout)
        XCTAssertTrue(rekeyed.stdout.contains("1 download records resealed"), rekeyed.stdout)
        XCTAssertEqual(try open(9).get(), entries)
        XCTAssertEqual(open(8).failure?.code, .key)
        let after = dataFiles()
        XCTAssertEqual(after.count, entries)
        XCTAssertTrue(Set(after.keys).isDisjoint(with: before.keys), "every entry has its next data file")
        let ciphertexts = Set(before.values.filter { $0.contains { $0 != 0 } })  // not a hole
        XCTAssertEqual(ciphertexts.count, entries - 1)
        XCTAssertTrue(after.values.allSatisfy { !ciphertexts.contains($0) }, "no data file keeps its ciphertext")
        var sparse = stat()
        let partData = try XCTUnwrap(after.keys.first { path in after[path]!.allSatisfy { $0 == 0 } })
        XCTAssertEqual(stat(partData, &sparse), 0)
        XCTAssertLessThan(Int(sparse.st_blocks) * 512, 1_000_000, "the partly cached entry stays sparse")

        // The old key with the old `encryption` file opens nothing that is left.
        let copy = try TemporaryDirectory(prefix: "old-key-copy")
        let stolen = copy.file("cache").path
        XCTAssertTrue(try TestTools.run("/bin/cp", ["-a", fixture.cacheDirectory, stolen]).succeeded)
        try sealedBefore.write(to: URL(fileURLWithPath: stolen + "/encryption"))
        XCTAssertEqual(try open(8, folder: stolen).get(), 0, "no entry opens under the old key")
        let listed = try TestTools.run(CLITests.binary, ["download", "list", "--json", "--cache-dir", stolen,
                                                         "--encryption-key-file", files[8]!])
        XCTAssertFalse(listed.stdout.contains("Title"), listed.stdout)
        let relisted = try TestTools.run(CLITests.binary, ["download", "list", "--json", "--cache-dir", fixture.cacheDirectory,
                                                           "--encryption-key-file", files[9]!])
        XCTAssertTrue(relisted.stdout.contains("\"Title\""), relisted.stdout + relisted.stderr)
        XCTAssertEqual(try rekey(8, 9).exitCode, 22, "the old key is wrong now")

        var current: UInt8 = 9
        var generator = SplitMix(seed: 17)
        var outcomes = (before: 0, interrupted: 0, after: 0)
        for _ in 0..<10 {
            let next: UInt8 = current == 8 ? 9 : 8
            let process = Process()
            process.executableURL = URL(fileURLWithPath: CLITests.binary)
            process.arguments = ["cache", "rekey", "--cache-dir", fixture.cacheDirectory,
                                 "--old-key-file", files[current]!, "--new-key-file", files[next]!]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            usleep(UInt32(20_000 + generator.next() % 200_000))
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            switch (open(current), open(next)) {
            case (.success(let count), .failure):
                XCTAssertEqual(count, entries)
                outcomes.before += 1
            case (.failure(let old), .failure(let new)):
                XCTAssertTrue("\(new)".contains("interrupted"), "\(new)")
                XCTAssertEqual(old.code, .key)
                outcomes.interrupted += 1
                let finished = try rekey(current, next)
                XCTAssertTrue(finished.succeeded, finished.stderr)
                XCTAssertEqual(try open(next).get(), entries, "the resumed rekey keeps every entry")
                current = next
            case (.failure, .success(let count)):
                XCTAssertEqual(count, entries)
                outcomes.after += 1
                current = next
            case (.success, .success):
                XCTFail("both keys open the folder")
            }
        }
        print("rekeys killed: \(outcomes.before) before beginning, \(outcomes.interrupted) interrupted and resumed, "
              + "\(outcomes.after) after finishing")
        var configuration = HTTPCacheConfiguration(cacheDirectory: fixture.cacheDirectory)
        configuration.encryptionKey = Self.key(current)
        fixture.cache = try MediaCache(configuration: configuration)
        XCTAssertEqual(try fixture.read("rk.bin"), whole.bytes, "the data under the rekeyed folder")
        XCTAssertEqual(try fixture.read("part.bin", offset: 500_001, length: 300_000), Array(part.bytes[500_001..<800_001]))
        for (i, file) in small.enumerated() { XCTAssertEqual(try fixture.read("s\(i).bin"), file.bytes) }
        XCTAssertEqual(fixture.cache.cachedResources().count, entries)
    }

    // MARK: the URL-signing key

    /// In an encrypted folder the LAN URL-signing key (`url-key`) is sealed:
    /// the LAN proxy serves URLs the API and `httpcache url` mint with the
    /// folder's key, a copied folder mints nothing without it, and a rekey
    /// keeps the same signing key (URLs already shared keep working).
    func testURLSigningKeyIsSealedAndSurvivesARekey() throws {
        let lanAddress = HardeningTests.nonLoopbackAddress()
        let fixture = try ProxyFixture {
            $0.encryptionKey = Self.key(12)
            if lanAddress != nil { $0.host = "0.0.0.0" }
        }
        let file = try fixture.file("movie.mp4", size: 300_000, seed: 81)
        let origin = fixture.origin.url("/movie.mp4")
        let port = fixture.server.servingPort
        let signed = try MediaCache.proxyURL(for: origin, host: "127.0.0.1", port: port,
                                             signingFolder: fixture.cacheDirectory, encryptionKey: Self.key(12))
        let signedPath = try RawHTTPClient.parse(url: signed).path
        if let lanAddress {
            let served = try RawHTTPConnection(host: lanAddress, port: port).get(signedPath)
            XCTAssertEqual(served.status, 200)
            XCTAssertEqual(served.body, file.bytes, "signed with the sealed key: served byte-exact")
            XCTAssertEqual(try RawHTTPClient.parse(url: try fixture.proxyURL("movie.mp4")).path, signedPath)
        } else {
            print("no non-loopback IPv4 address: the LAN proxy's part of this test is skipped")
        }
        let keyFile = fixture.cacheDirectory + "/url-key"
        XCTAssertEqual(FileManager.default.contents(atPath: keyFile)?.count, 32 + 28, "sealed, not a 32-byte key")
        XCTAssertThrowsError(try MediaCache.proxyURL(for: origin, host: "127.0.0.1", port: port,
                                                     signingFolder: fixture.cacheDirectory)) {
            XCTAssertEqual(($0 as? HTTPCacheError)?.code, .key)
        }
        let keys = try TemporaryDirectory(prefix: "keys")
        let (old, new) = (try Self.keyFile(keys, 12), try Self.keyFile(keys, 13))
        func mint(_ keyFile: String?) throws -> ProcessResult {
            try TestTools.run(CLITests.binary, ["url", origin, "--port", String(port), "--cache-dir", fixture.cacheDirectory]
                              + (keyFile.map { ["--encryption-key-file", $0] } ?? []))
        }
        XCTAssertEqual(try RawHTTPClient.parse(url: try mint(old).stdout.trimmingCharacters(in: .whitespacesAndNewlines)).path,
                       signedPath, "the CLI signs alike")
        XCTAssertFalse(try mint(nil).succeeded, "no key, no signature")

        fixture.stop()
        let rekeyed = try TestTools.run(CLITests.binary, ["cache", "rekey", "--cache-dir", fixture.cacheDirectory,
                                                          "--old-key-file", old, "--new-key-file", new])
        XCTAssertTrue(rekeyed.succeeded, rekeyed.stderr)
        XCTAssertEqual(try RawHTTPClient.parse(url: try mint(new).stdout.trimmingCharacters(in: .whitespacesAndNewlines)).path,
                       signedPath, "the same signing key after the rekey")
        XCTAssertFalse(try mint(old).succeeded, "the old key opens nothing")
    }

    // MARK: export and import

    /// An export is a decrypted copy of its own (0600, one link, its own
    /// inode); an import is encrypted and independent of its source.
    func testExportDecryptsAndImportEncryptsIndependentCopies() throws {
        let fixture = try ReaderFixture { $0.encryptionKey = Self.key(10) }
        let file = try fixture.file("x.bin", size: 300_000, seed: 71)
        let url = fixture.origin.url("/x.bin")
        XCTAssertEqual(try fixture.read("x.bin"), file.bytes)
        fixture.cache.close()
        let keys = try TemporaryDirectory(prefix: "keys")
        let keyFile = try Self.keyFile(keys, 10)
        let exported = fixture.directory.file("exported.bin").path
        let export = try TestTools.run(CLITests.binary, ["cache", "export", "--cache-dir", fixture.cacheDirectory, "--encryption-key-file", keyFile,
                                       url, exported])
        XCTAssertTrue(export.succeeded, export.stderr)
        XCTAssertEqual(FileManager.default.contents(atPath: exported).map([UInt8].init), file.bytes)
        var info = stat()
        XCTAssertEqual(stat(exported, &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o600)
        XCTAssertEqual(info.st_nlink, 1, "never a hard link")
        let inodes = Set(Self.files(under: fixture.cacheDirectory).map { path -> UInt in
            var other = stat()
            stat(path, &other)
            return UInt(other.st_ino)
        })
        XCTAssertFalse(inodes.contains(UInt(info.st_ino)))
        // Writing into the export changes nothing the cache serves.
        try Data(repeating: 0xEE, count: 1000).write(to: URL(fileURLWithPath: exported))

        let source = fixture.directory.file("local.bin").path
        let local = TestFile.randomBytes(count: 250_000, seed: 72)
        try Data(local).write(to: URL(fileURLWithPath: source))
        let importedURL = fixture.origin.url("/imported.bin")
        let imported = try TestTools.run(CLITests.binary, ["cache", "import", "--cache-dir", fixture.cacheDirectory, "--encryption-key-file", keyFile,
                                         importedURL, source])
        XCTAssertTrue(imported.succeeded, imported.stderr)
        try Data(repeating: 0x11, count: 250_000).write(to: URL(fileURLWithPath: source))  // the source changes afterwards
        XCTAssertEqual(Self.leaks(in: fixture.cacheDirectory, plaintexts: [file.bytes, local], strings: ["imported.bin"]), [])

        fixture.origin.stop()
        var configuration = HTTPCacheConfiguration(cacheDirectory: fixture.cacheDirectory)
        configuration.encryptionKey = Self.key(10)
        fixture.cache = try MediaCache(configuration: configuration)
        XCTAssertEqual(try fixture.read("x.bin"), file.bytes)
        XCTAssertEqual(try fixture.read("imported.bin"), local)
        XCTAssertEqual(try fixture.read("imported.bin", offset: 4_000, length: 10_000), Array(local[4_000..<14_000]))
    }

    // MARK: crash safety

    /// kill -9 while downloading into an encrypted folder, then every byte
    /// the restarted proxy serves is right.
    func testKillDuringDownloadsThenEveryServedByteIsRight() throws {
        let directory = try TemporaryDirectory(prefix: "httpcache-enc-crash")
        let root = directory.url.appendingPathComponent("www")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let files = try (0..<3).map { try TestFile.random(size: 4_000_000, seed: UInt64(80 + $0), in: root, name: "c\($0).bin") }
        let origin = try NginxOrigin(root: root, extraServerConfig: "limit_rate 20m;")
        defer { origin.stop() }
        let cache = directory.url.appendingPathComponent("cache").path
        let key = ["--encryption-key-file", try Self.keyFile(directory, 11)]
        try KillRounds.run(files, origin: origin, cache: cache, arguments: key, rounds: 3, maxStart: 3_000_000, seed: 78)
        try KillRounds.checkEveryServedByte(files, origin: origin, cache: cache, arguments: key)
    }
}

private extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
