import CacheIO
import Dispatch
import Foundation
import Glibc
import Logging
import XCTest
@testable import CacheProxy

final class AccessLogTests: XCTestCase {
    private func entry(target: String, method: String = "GET", client: String = "127.0.0.1:51234",
                       time: Int64 = 1_795_456_896_123) -> AccessLogEntry {
        AccessLogEntry(time: time, client: client, method: method, target: target, status: 206,
                       bytesSent: 1_048_576, bytesFromOrigin: 65_536, cache: .partial, cacheStatus: "partial", durationMilliseconds: 12.3456)
    }

    func testLineFormatTable() {
        let prefix = "2026-11-23T18:01:36.123Z 127.0.0.1:51234 GET "
        let suffix = " 206 1048576 65536 PARTIAL partial 12.346 - -"
        let table: [(String, String)] = [
            ("/p/aHR0cHM6Ly9l/movie.mp4", #""/p/aHR0cHM6Ly9l/movie.mp4""#),
            ("/a b", #""/a b""#),
            (#"/x" 200 1 2 HIT 0"#, #""/x\" 200 1 2 HIT 0""#),
            (#"/back\slash\"#, #""/back\\slash\\""#),
            ("/line\nfeed\r\n2026-01-01T00:00:00.000Z forged", #""/line\x0afeed\x0d\x0a2026-01-01T00:00:00.000Z forged""#),
            ("/tab\there\u{0}\u{1b}[31m\u{7f}", #""/tab\x09here\x00\x1b[31m\x7f""#),
            ("/caf\u{e9}", #""/caf\xc3\xa9""#),
            ("", #""""#),
        ]
        for (target, quoted) in table {
            XCTAssertEqual(entry(target: target).line(), prefix + quoted + suffix, target)
        }
    }

    func testUnquotedFieldsAreEscapedAndNeverEmpty() {
        let line = entry(target: "/", method: "G T\n", client: "").line()
        XCTAssertEqual(line, #"2026-11-23T18:01:36.123Z - G\x20T\x0a "/" 206 1048576 65536 PARTIAL partial 12.346 - -"#)
        XCTAssertEqual(parse(line)?.method, "G\\x20T\\x0a")
    }

    /// The player's CMCD session id and buffer length close the line; a
    /// session id is the player's text, escaped like any unquoted field.
    func testSessionAndBufferLengthFromCMCD() {
        var record = entry(target: "/s.ts")
        record.sessionID = "6e2fb550-c457"
        record.bufferLength = 21300
        XCTAssertTrue(record.line().hasSuffix(" 12.346 6e2fb550-c457 21300"), record.line())
        XCTAssertEqual(parse(record.line())?.sessionID, "6e2fb550-c457")
        XCTAssertEqual(parse(record.line())?.bufferLength, "21300")
        record.sessionID = "a b\n200"
        record.bufferLength = nil
        XCTAssertTrue(record.line().hasSuffix(#" 12.346 a\x20b\x0a200 -"#), record.line())
        XCTAssertEqual(parse(record.line())?.milliseconds, 12.346)
    }

    func testTimestamps() {
        XCTAssertEqual(AccessLogEntry.timestamp(milliseconds: 0), "1970-01-01T00:00:00.000Z")
        XCTAssertEqual(AccessLogEntry.timestamp(milliseconds: 951_782_400_007), "2000-02-29T00:00:00.007Z")
        XCTAssertEqual(AccessLogEntry.timestamp(milliseconds: -1), "1969-12-31T23:59:59.999Z")
        let now = WallClock.milliseconds()
        XCTAssertEqual(AccessLogEntry.timestamp(milliseconds: now).count, 24)
        XCTAssertEqual(Double(now) / 1000, Date().timeIntervalSince1970, accuracy: 5)
    }

    // MARK: parsing a line back

    struct Parsed: Equatable {
        var time: String, client: String, method: String, target: String
        var status: Int, sent: UInt64, fetched: UInt64, cache: String, cacheStatus: String, milliseconds: Double
        var sessionID: String, bufferLength: String
    }

    /// A strict reader of the format: undoes the target's escapes.
    private func parse(_ line: String) -> Parsed? {
        guard !line.contains("\n"), !line.contains("\r") else { return nil }
        let bytes = Array(line.utf8)
        guard let open = bytes.firstIndex(of: UInt8(ascii: "\"")) else { return nil }
        let head = String(decoding: bytes[..<open], as: UTF8.self).split(separator: " ", omittingEmptySubsequences: false)
        guard head.count == 4, head[3].isEmpty else { return nil }
        var target: [UInt8] = []
        var index = open + 1
        while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
            if bytes[index] == UInt8(ascii: "\\") {
                guard index + 1 < bytes.count else { return nil }
                if bytes[index + 1] == UInt8(ascii: "x") {
                    guard index + 3 < bytes.count,
                          let value = UInt8(String(decoding: bytes[(index + 2)...(index + 3)], as: UTF8.self), radix: 16)
                    else { return nil }
                    target.append(value)
                    index += 4
                } else {
                    target.append(bytes[index + 1])
                    index += 2
                }
            } else {
                guard (0x20..<0x7f).contains(bytes[index]) else { return nil }
                target.append(bytes[index])
                index += 1
            }
        }
        guard index < bytes.count else { return nil }
        let tail = String(decoding: bytes[(index + 1)...], as: UTF8.self).split(separator: " ", omittingEmptySubsequences: false)
        guard tail.count == 9, tail[0].isEmpty, let status = Int(tail[1]), let sent = UInt64(tail[2]),
              let fetched = UInt64(tail[3]), let milliseconds = Double(tail[6]) else { return nil }
        return Parsed(time: String(head[0]), client: String(head[1]), method: String(head[2]),
                      target: String(decoding: target, as: UTF8.self), status: status, sent: sent, fetched: fetched,
                      cache: String(tail[4]), cacheStatus: String(tail[5]), milliseconds: milliseconds,
                      sessionID: String(tail[7]), bufferLength: String(tail[8]))
    }

    func testHostileTargetsParseBackExactly() {
        let targets = ["/plain", "/q?a=\"b\"&c=\\", "/nl\n\"forged\" 200 0 0 HIT 1\n", "/ctl\u{0}\u{1}\u{1f}\u{7f}",
                       "/ümlaut/日本", "/\\x41"]
        for target in targets {
            let parsed = parse(entry(target: target).line())
            XCTAssertEqual(parsed?.target, target)
            XCTAssertEqual(parsed?.status, 206)
            XCTAssertEqual(parsed?.cache, "PARTIAL")
            XCTAssertEqual(parsed?.cacheStatus, "partial")
            XCTAssertEqual(parsed?.milliseconds, 12.346)
        }
    }

    // MARK: writer

    private var directory = ""

    override func setUp() {
        directory = NSTemporaryDirectory() + "accesslog-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        XCTAssertEqual(mkdir(directory, 0o700), 0)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: directory)
    }

    private var logger: Logger { Logger(label: "test.accesslog") }

    private func lines(of path: String) throws -> [String] {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        XCTAssertTrue(text.isEmpty || text.hasSuffix("\n"))
        return text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
    }

    func testWriterWritesEveryLineWithMode0600() throws {
        let path = directory + "/access.log"
        let writer = try AccessLogWriter(path: path, logger: logger)
        let count = 10_000
        for i in 0..<count {
            writer.append(line: entry(target: "/p/\(i)/\"file\"\n.mp4").line())
        }
        writer.close()
        writer.close()  // idempotent
        var info = stat()
        XCTAssertEqual(stat(path, &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o600)
        let written = try lines(of: path)
        XCTAssertEqual(written.count, count)
        for (i, line) in written.enumerated() {
            XCTAssertEqual(parse(line)?.target, "/p/\(i)/\"file\"\n.mp4", line)
        }
        XCTAssertEqual(writer.droppedLines, 0)
        writer.append(line: "after close")
        XCTAssertEqual(writer.droppedLines, 1)
    }

    func testWriterFlushesWithinTheIntervalWithoutClose() throws {
        let path = directory + "/access.log"
        let writer = try AccessLogWriter(path: path, logger: logger)
        defer { writer.close() }
        writer.append(line: "one")
        let deadline = Date().addingTimeInterval(5)
        while (try? lines(of: path))?.count != 1 && Date() < deadline { usleep(10_000) }
        XCTAssertEqual(try lines(of: path), ["one"])
    }

    func testWriterAppendsToAnExistingFile() throws {
        let path = directory + "/access.log"
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data("old\n".utf8)))
        let writer = try AccessLogWriter(path: path, logger: logger)
        writer.append(line: "new")
        writer.close()
        XCTAssertEqual(try lines(of: path), ["old", "new"])
    }

    func testReopenAfterRenameMovesLinesToTheNewFile() throws {
        let path = directory + "/access.log"
        let rotated = directory + "/access.log.1"
        let writer = try AccessLogWriter(path: path, logger: logger)
        for i in 0..<100 { writer.append(line: "before \(i)") }
        XCTAssertEqual(rename(path, rotated), 0)
        writer.reopen()
        for i in 0..<100 { writer.append(line: "after \(i)") }
        writer.close()
        XCTAssertEqual(try lines(of: rotated), (0..<100).map { "before \($0)" })
        XCTAssertEqual(try lines(of: path), (0..<100).map { "after \($0)" })
        var info = stat()
        XCTAssertEqual(stat(path, &info), 0)
        XCTAssertEqual(info.st_mode & 0o777, 0o600)
    }

    func testOpenFailureThrows() {
        XCTAssertThrowsError(try AccessLogWriter(path: directory + "/missing/access.log", logger: logger)) { error in
            XCTAssertTrue("\(error)".contains("missing/access.log"))
        }
    }

    /// A FIFO nobody reads stands for a disk that cannot keep up: the writer
    /// thread blocks in write(2) while lines keep coming.
    func testDropsPastTheBoundAndCountsThem() throws {
        let path = directory + "/fifo"
        XCTAssertEqual(mkfifo(path, 0o600), 0)
        let reader = open(path, O_RDONLY | O_NONBLOCK)
        XCTAssertGreaterThanOrEqual(reader, 0)
        defer { Glibc.close(reader) }
        let bound = 16 * 1024
        let writer = try AccessLogWriter(path: path, logger: logger, flushBytes: 4096, maxBufferedBytes: bound)
        let line = String(repeating: "x", count: 99)  // 100 bytes with the line feed
        let total = 20_000  // 2 MB: far more than the pipe and the bound hold
        for _ in 0..<total { writer.append(line: line) }
        let dropped = writer.droppedLines
        XCTAssertGreaterThan(dropped, 0)
        // Drain the pipe while close() writes the rest, then count.
        _ = fcntl(reader, F_SETFL, 0)
        let closed = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            writer.close()
            closed.signal()
        }
        var received = 0
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(reader, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            received += buffer[..<n].filter { $0 == UInt8(ascii: "\n") }.count
        }
        closed.wait()
        XCTAssertEqual(UInt64(received) + writer.droppedLines, UInt64(total))
        XCTAssertEqual(writer.droppedLines, dropped, "nothing accepted was lost")
    }
}
