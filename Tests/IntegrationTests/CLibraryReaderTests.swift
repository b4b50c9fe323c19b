import Foundation
import HTTPCache
import XCTest

/// The in-process reader and decryption of the C API: examples/c/reader.c,
/// cancel.c, decrypt.c and ffmpeg_host.c built against the installed library
/// and run.
extension CLibraryTests {
    /// reader.c streams a file (written out, compared here byte for byte),
    /// reads ranges and seeks; with nginx stopped it reads them again from
    /// the cache, and an uncached URL fails with HC_EUPSTREAM.
    func testReaderByteExactOnlineAndOffline() throws {
        try readerRun(encrypted: false)
    }

    /// reader.c again over a folder encrypted at rest (`encryption-key-file`):
    /// the same bytes online and offline, no plaintext window of the file or
    /// its URL in the folder, and a wrong key refused with HC_EKEY.
    func testReaderByteExactFromAnEncryptedFolder() throws {
        try readerRun(encrypted: true)
    }

    private func readerRun(encrypted: Bool) throws {
        let work = try TemporaryDirectory(prefix: "hc-clib-reader")
        defer { work.remove() }
        let program = try InstalledLibrary.buildExample("reader", in: work.path)
        let root = work.file("www")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let file = try TestFile.random(size: 3_000_017, seed: 41, in: root, name: "movie.mp4")
        _ = try TestFile.random(size: 1000, seed: 42, in: root, name: "other.bin")
        let origin = try NginxOrigin(root: root)
        defer { origin.stop() }
        let streamed = work.path + "/streamed.mp4"
        let keyFile = encrypted ? try EncryptionTests.keyFile(work, 5) : nil

        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = [work.path + "/cache", origin.url("/movie.mp4"), file.path, streamed, origin.url("/other.bin")]
            + (keyFile.map { [$0] } ?? [])
        process.environment = try InstalledLibrary.environment()
        let stdin = Pipe(), stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { process.terminate() } }

        var online: [String] = []
        while online.last != "online done" {
            online.append(try ProxyProcess.readLine(stdout.fileHandleForReading, timeout: 60))
        }
        let onlineText = online.joined(separator: "\n")
        XCTAssertBytes(try Data(contentsOf: URL(fileURLWithPath: streamed)), equal: file)
        XCTAssertTrue(online.contains("open ftp: invalid argument"), onlineText)
        XCTAssertTrue(online.contains("open negative offset: invalid argument"), onlineText)
        // nginx answers the reader's first request, a range, with 206.
        XCTAssertTrue(online.contains("info success total 3000017 type \"video/mp4\" ranges 1"), onlineText)
        XCTAssertTrue(online.contains("streamed 3000017 bytes, last end"), onlineText)
        XCTAssertTrue(online.contains("whole 0+3000017: match"), onlineText)
        XCTAssertTrue(online.contains("range 1000000+100: match"), onlineText)
        XCTAssertTrue(online.contains("tail 2999017+1000: match"), onlineText)
        XCTAssertTrue(online.contains("seek 199990 read 10: match"), onlineText)
        XCTAssertTrue(online.contains("seek 7 read 100: match"), onlineText)
        XCTAssertTrue(online.contains("seek end read 0"), onlineText)
        XCTAssertTrue(online.contains("seek beyond: range not satisfiable"), onlineText)
        XCTAssertTrue(online.contains("seek before: range not satisfiable"), onlineText)
        XCTAssertFalse(onlineText.contains("FAILED"), onlineText)
        let fetched = origin.accessLog(waitingFor: 1).filter { $0.uri == "/movie.mp4" }
        XCTAssertEqual(fetched.count, 1, "ranges and seeks came from the cache: \(fetched)")

        origin.stop()
        stdin.fileHandleForWriting.write(Data("offline\n".utf8))
        XCTAssertTrue(TestTools.waitForExit(process, timeout: 60), "no exit after offline")
        process.waitUntilExit()
        let offline = String(decoding: stdout.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        XCTAssertEqual(process.terminationStatus, 0, offline)
        for line in ["whole 0+3000017: match", "range 1000000+100: match", "seek 100000 read 100: match",
                     "seek beyond: range not satisfiable", "uncached offline: origin failed"] {
            XCTAssertTrue(offline.contains(line + "\n"), "\(line) in\n\(offline)")
        }
        XCTAssertTrue(offline.hasSuffix("all checks passed\n"), offline)
        guard encrypted else { return }
        XCTAssertEqual(EncryptionTests.leaks(in: work.path + "/cache", plaintexts: [file.bytes],
                                             strings: ["movie.mp4", "127.0.0.1:\(origin.port)"]), [])
        let wrong = try EncryptionTests.keyFile(work, 6)
        let refused = try TestTools.run(program, [work.path + "/cache", origin.url("/movie.mp4"), file.path, streamed,
                                                  origin.url("/other.bin"), wrong], environment: InstalledLibrary.environment())
        XCTAssertEqual(refused.exitCode, 1)
        XCTAssertTrue(refused.stdout.contains("open: wrong or missing encryption key"), refused.stdout)

        // rekey.c (hc_rekey): a wrong old key changes nothing; then the new key reads every byte, the old one nothing.
        let rekey = try InstalledLibrary.buildExample("rekey", in: work.path)
        let environment = try InstalledLibrary.environment()
        let wrongOld = try TestTools.run(rekey, [work.path + "/cache", wrong, keyFile!], environment: environment)
        XCTAssertEqual(wrongOld.exitCode, 1)
        XCTAssertTrue(wrongOld.stdout.contains("rekey: wrong or missing encryption key"), wrongOld.stdout)
        let rekeyed = try TestTools.run(rekey, [work.path + "/cache", keyFile!, wrong], environment: environment)
        XCTAssertEqual(rekeyed.exitCode, 0, rekeyed.stdout + rekeyed.stderr)
        XCTAssertEqual(rekeyed.stdout, "rekey: success\n")
        var configuration = HTTPCacheConfiguration(cacheDirectory: work.path + "/cache")
        configuration.encryptionKey = EncryptionTests.key(6)
        let cache = try MediaCache(configuration: configuration)
        defer { cache.close() }
        let reader = try cache.openReader(url: origin.url("/movie.mp4"))
        XCTAssertBytes(Data(try readAll(reader)), equal: file)
        configuration.encryptionKey = EncryptionTests.key(5)
        XCTAssertThrowsError(try MediaCache(configuration: configuration))
    }

    /// cancel.c: a read blocked on an origin that never answers returns
    /// HC_ECANCELED within 100 ms of hc_reader_cancel from another thread,
    /// and stays canceled; a timeout leaves the reader usable; hc_close ends
    /// a blocked read with HC_ECLOSED.
    func testReaderCancelTimeoutAndClose() throws {
        let work = try TemporaryDirectory(prefix: "hc-clib-cancel")
        defer { work.remove() }
        let program = try InstalledLibrary.buildExample("cancel", in: work.path)
        let origin = try FaultyOrigin()
        defer { origin.stop() }
        origin.serve("/stall.mp4", body: [UInt8](repeating: 7, count: 1000), fault: .stallBeforeHead)
        let ran = try TestTools.run(program, [work.path + "/cache", origin.url("/stall.mp4")], timeout: 60,
                                    environment: InstalledLibrary.environment())
        XCTAssertEqual(ran.exitCode, 0, ran.stdout + ran.stderr)
        let expected = [
            "info poll: timed out", "read 200 ms: timed out after >=190 ms", "read again: timed out",
            "canceled read: canceled", "read after cancel: canceled", "info after cancel: canceled",
            "seek after cancel: canceled", "read during hc_close: closed", "read after hc_close: closed", "closed",
        ]
        for line in expected { XCTAssertTrue(ran.stdout.contains(line + "\n"), "\(line) in\n\(ran.stdout)") }
        XCTAssertTrue(ran.stdout.contains("returned within 100 ms of the cancel: yes"), ran.stdout)
        XCTAssertFalse(origin.requests(for: "/stall.mp4").isEmpty, "the reads were waiting on the origin")
    }

    /// decrypt.c: `openssl enc` AES-128-CTR and ECB (-nopad) fixtures read
    /// through hc_reader with hc_set_decryption come out as the plaintext;
    /// a refusing callback fails the read with HC_EINVAL and loses nothing.
    func testReaderDecryptsCTRAndECB() throws {
        let work = try TemporaryDirectory(prefix: "hc-clib-decrypt")
        defer { work.remove() }
        let program = try InstalledLibrary.buildExample("decrypt", in: work.path)
        let root = work.file("www")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        // Not a whole number of blocks: CTR takes any length; ECB gets the whole blocks.
        let plain = try TestFile.random(size: 2_000_007, seed: 51, in: work.url, name: "plain.bin")
        let ctr = try DecryptionTests.encrypt(plain.url, to: root.appendingPathComponent("movie.ctr"), ecb: false)
        XCTAssertNotEqual(ctr, plain.bytes)
        let blocks = work.file("blocks.bin")
        try Data(plain.bytes.prefix(plain.size / 16 * 16)).write(to: blocks)
        let ecb = try DecryptionTests.encrypt(blocks, to: root.appendingPathComponent("movie.ecb"), ecb: true)
        XCTAssertEqual(ecb.count, 2_000_000)
        let origin = try NginxOrigin(root: root)
        defer { origin.stop() }
        // A query the callback must see untouched.
        let ctrURL = origin.url("/movie.ctr?token=a%20b&x=1")
        let ran = try TestTools.run(program, [work.path + "/cache", ctrURL, origin.url("/movie.ecb"), plain.path,
                                              DecryptionTests.keyHex, DecryptionTests.ivHex],
                                    timeout: 120, environment: InstalledLibrary.environment())
        XCTAssertEqual(ran.exitCode, 0, ran.stdout + ran.stderr)
        for line in ["set: success", "ctr whole: 2000007 bytes, match", "ctr range: 777 bytes, match",
                     "ecb whole: 2000000 bytes, match", "ecb range: 5000 bytes, match", "ctr refused: invalid argument",
                     "cache size kept: yes", "ctr again: 2000007 bytes, match", "callback saw the url as given: yes",
                     "off: success", "all checks passed"] {
            XCTAssertTrue(ran.stdout.contains(line + "\n"), "\(line) in\n\(ran.stdout)")
        }
        let ctrFetches = origin.accessLog(waitingFor: 1).filter { $0.uri.hasPrefix("/movie.ctr") }
        XCTAssertEqual(ctrFetches.count, 1, "the refused and later reads came from the cache: \(ctrFetches)")
    }

    /// ffmpeg_host.c demuxes an MP4 whose moov atom is at the end through an
    /// AVIOContext over hc_reader; every packet (stream, pts, size, checksum)
    /// is the same as when it reads the file itself.
    func testFFmpegHostDemuxesMoovAtEndLikeTheFile() throws {
        let work = try TemporaryDirectory(prefix: "hc-clib-ffmpeg")
        defer { work.remove() }
        let program = try InstalledLibrary.buildExample("ffmpeg_host", in: work.path,
                                                        packages: ["libavformat", "libavcodec", "libavutil"])
        let root = work.file("www")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let movie = try MediaFixtures.makeMP4(at: root.appendingPathComponent("movie.mp4"), duration: 4)
        XCTAssertTrue(try MediaFixtures.isMoovAtEnd(movie))
        let origin = try NginxOrigin(root: root)
        defer { origin.stop() }

        let direct = try TestTools.run(program, ["--file", movie.path], timeout: 60,
                                       environment: InstalledLibrary.environment())
        XCTAssertEqual(direct.exitCode, 0, direct.stderr)
        let cached = try TestTools.run(program, ["--cache", work.path + "/cache", origin.url("/movie.mp4")], timeout: 120,
                                       environment: InstalledLibrary.environment())
        XCTAssertEqual(cached.exitCode, 0, cached.stderr)
        let lines = direct.stdout.split(separator: "\n")
        XCTAssertGreaterThan(lines.count, 100, "4 s of 25 fps video and AAC audio")
        XCTAssertEqual(Set(lines.map { $0.split(separator: " ")[0] }), ["0", "1"], "both streams")
        XCTAssertEqual(cached.stdout, direct.stdout)
        // The moov at the end was reached by seeking: a ranged origin request.
        let requests = origin.accessLog(waitingFor: 1).filter { $0.uri == "/movie.mp4" }
        XCTAssertTrue(requests.contains { $0.range != nil }, "\(requests)")
    }
}
